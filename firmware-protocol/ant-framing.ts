// Framing of an ANT stick's serial byte stream into whole messages, in the
// manner of serialport's parsers: a Transform that pushes one Uint8Array per
// message (sync, length, id, data, checksum). Bounded: a stick that sends
// garbage never makes it hold more than one message's worth of bytes. No I/O,
// no timers.
import { Transform, type TransformCallback } from 'node:stream'
import { ANT_MAX_DATA, ANT_OVERHEAD, ANT_SYNC, antChecksum } from './ant.ts'

/**
 * Pushes every message whose checksum holds. Bytes before a sync byte are skipped; a frame whose length is over
 * ANT_MAX_DATA or whose checksum fails is dropped and the search for the next sync byte starts at the byte after
 * the failed one's sync, so a 0xA4 inside a broken frame's data is still found. Each stretch of dropped bytes
 * emits 'garbage' once, with its length, when the next good message ends it (or the stream ends), however the
 * bytes were split into chunks.
 */
export class AntFrameSplitter extends Transform {
  private buffer: Uint8Array = new Uint8Array(0)
  /** Bytes dropped since the last good message. */
  private dropped = 0

  constructor () {
    super({ readableObjectMode: true })
  }

  /** Bytes held for an incomplete message (never more than one message's longest form). */
  get pendingLength (): number {
    return this.buffer.length
  }

  override _transform (chunk: Buffer | string, encoding: BufferEncoding, callback: TransformCallback): void {
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk, encoding) : chunk
    const joined = new Uint8Array(this.buffer.length + bytes.length)
    joined.set(this.buffer, 0)
    joined.set(bytes, this.buffer.length)
    let at = 0
    while (at < joined.length) {
      if (joined[at] !== ANT_SYNC) { at++; this.dropped++; continue }
      if (at + 1 >= joined.length) break
      const length = joined[at + 1] as number
      if (length > ANT_MAX_DATA) { at++; this.dropped++; continue }
      const end = at + length + ANT_OVERHEAD
      if (end > joined.length) break
      const frame = joined.subarray(at, end)
      if (antChecksum(frame, frame.length - 1) !== frame[frame.length - 1]) { at++; this.dropped++; continue }
      this.endStretch()
      this.push(frame.slice())
      at = end
    }
    this.buffer = joined.slice(at)
    callback()
  }

  override _flush (callback: TransformCallback): void {
    this.dropped += this.buffer.length
    this.buffer = new Uint8Array(0)
    this.endStretch()
    callback()
  }

  private endStretch (): void {
    if (this.dropped === 0) return
    const n = this.dropped
    this.dropped = 0
    this.emit('garbage', n)
  }
}
