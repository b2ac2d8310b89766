// Bounded line framing for serial byte streams, in the manner of serialport's
// DelimiterParser but with a ceiling: a device that never sends a newline
// cannot grow memory past maxLength bytes. No I/O, no timers.
import { Transform, type TransformCallback } from 'node:stream'

/** Lines end with LF or CR LF (the default). */
export const LF_DELIMITER = /\r?\n/
/** Lines end with CR, LF or CR LF (the HRMI answers with a bare CR). */
export const ANY_DELIMITER = /\r\n?|\n/

export interface BoundedLineSplitterOptions {
  /** Longest line kept, in bytes, excluding the terminator. Default 256. */
  maxLength?: number
  /** Line terminator. Default /\r?\n/. Flags g and y are ignored. */
  delimiter?: RegExp
}

/**
 * Splits a byte stream into lines and pushes each line as a string (UTF-8
 * decoded, without its terminator; objectMode readable side). A line longer
 * than maxLength is dropped: the splitter discards bytes until the next
 * terminator and emits 'overflow' once per dropped line. Terminators split
 * across chunks (a CR at the end of one chunk, LF at the start of the next)
 * are handled. At the end of the stream an unterminated final line is pushed.
 */
export class BoundedLineSplitter extends Transform {
  readonly maxLength: number
  private readonly delimiter: RegExp
  /** Pending bytes of the current line, latin1-encoded so that one char is one byte. */
  private pending = ''
  private discarding = false
  /** The previous terminator was a bare CR: an LF at the start of the next chunk belongs to it. */
  private skipLf = false

  constructor (options: BoundedLineSplitterOptions = {}) {
    super({ readableObjectMode: true })
    const maxLength = options.maxLength ?? 256
    if (!Number.isInteger(maxLength) || maxLength < 1) throw new RangeError(`maxLength must be a positive integer, got ${String(maxLength)}`)
    this.maxLength = maxLength
    const delimiter = options.delimiter ?? LF_DELIMITER
    this.delimiter = new RegExp(delimiter.source, delimiter.flags.replace(/[gy]/g, ''))
  }

  /** Bytes held for the current, unterminated line (never above maxLength + 1). */
  get pendingLength (): number {
    return this.pending.length
  }

  override _transform (chunk: Buffer | string, encoding: BufferEncoding, callback: TransformCallback): void {
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk, encoding) : chunk
    let text = bytes.toString('latin1')
    if (this.skipLf && text.length > 0) {
      if (text.startsWith('\n')) text = text.slice(1)
      this.skipLf = false
    }
    while (text.length > 0) {
      const data = this.discarding ? text : this.pending + text
      const m = this.delimiter.exec(data)
      if (m === null || m[0].length === 0) {
        this.keepPartial(data)
        break
      }
      const line = data.slice(0, m.index)
      text = data.slice(m.index + m[0].length)
      this.pending = ''
      if (this.discarding) {
        this.discarding = false
      } else if (line.length > this.maxLength) {
        this.emit('overflow')
      } else {
        this.push(Buffer.from(line, 'latin1').toString('utf8'))
      }
      if (m[0].endsWith('\r')) {
        // A bare-CR terminator: swallow the LF of a CR LF pair.
        if (text.length === 0) this.skipLf = true
        else if (text.startsWith('\n')) text = text.slice(1)
      }
    }
    callback()
  }

  private keepPartial (data: string): void {
    if (this.discarding) return
    // A trailing CR may be the first half of a CR LF terminator; allow it one extra byte.
    const limit = data.endsWith('\r') ? this.maxLength + 1 : this.maxLength
    if (data.length > limit) {
      this.pending = ''
      this.discarding = true
      this.emit('overflow')
    } else {
      this.pending = data
    }
  }

  override _flush (callback: TransformCallback): void {
    if (!this.discarding && this.pending.length > 0) {
      const line = this.pending.endsWith('\r') ? this.pending.slice(0, -1) : this.pending
      if (line.length > 0) this.push(Buffer.from(line, 'latin1').toString('utf8'))
    }
    this.pending = ''
    this.discarding = false
    callback()
  }
}
