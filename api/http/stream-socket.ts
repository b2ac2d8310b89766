// One server-side WebSocket stream: keep-alive and the bound on a slow client.
// - Ping every pingIntervalMs (default 30 s); a client that has not answered
//   the previous ping by the next tick is terminated.
// - A client that stops reading: once ws's bufferedAmount (bytes queued in
//   Node, not yet taken by the kernel) passes maxBufferedBytes (default
//   256 KiB) the stream stops sending, closes with 1013 "client too slow" and
//   terminates the socket one second later if the close handshake does not
//   finish (a client that does not read never sees the close frame), so
//   memory per client stays bounded.
// - `check` (optional) runs on every ping tick; false closes with 1008
//   (a revoked widget or display capability, a removed member).
// - bindToToken: a stream opened with an access token closes with 1008 when
//   that token is revoked (an event of the token store) or expires (a timer).
import type { Duplex } from 'node:stream'
import type { WebSocket } from 'ws'
import type { Logger } from 'pino'
import type { StreamCounters } from '../hub.ts'
import type { TokenStore } from '../store/types.ts'
import { watchAccessToken } from '../store/token-watch.ts'

export const DEFAULT_PING_MS = 30_000
export const DEFAULT_MAX_BUFFERED = 256 * 1024

export interface StreamOptions {
  pingIntervalMs?: number
  maxBufferedBytes?: number
  log?: Logger
  counters?: StreamCounters
  check?: () => boolean
}

/**
 * A whole unmasked text frame (FIN, opcode 1) around `payload`: what a server sends for a text message.
 * Made once per message, it goes to every stream as one socket write (`Stream.sendFrame`).
 */
export function textFrame (payload: Buffer): Buffer {
  const n = payload.length
  const head = n < 126 ? 2 : n < 65536 ? 4 : 10
  const frame = Buffer.allocUnsafe(head + n)
  frame[0] = 0x81
  if (head === 2) frame[1] = n
  else if (head === 4) { frame[1] = 126; frame.writeUInt16BE(n, 2) } else { frame[1] = 127; frame.writeBigUInt64BE(BigInt(n), 2) }
  payload.copy(frame, head)
  return frame
}

/**
 * What `sendFrame` reads of ws's internals (ws 8: lib/websocket.js `_socket`, lib/sender.js `_state` and
 * `_queue`): the socket, and whether the sender writes a message at once (state 0, nothing queued; it always
 * does here, with permessage-deflate off) so that a frame written beside it keeps the order of messages.
 */
interface WsInternals {
  _socket?: Duplex | null
  _sender?: { _state?: number, _queue?: unknown[] } | null
}

/** The socket a whole frame can be written to now, or undefined (then ws sends the message itself). */
function frameSocket (socket: WebSocket): Duplex | undefined {
  const ws = socket as unknown as WsInternals
  const sender = ws._sender
  if (sender === undefined || sender === null || sender._state !== 0 || sender._queue?.length !== 0) return undefined
  return ws._socket ?? undefined
}

export interface Stream {
  /** Sends one text message (a string, or its UTF-8 bytes made once for many streams); false when the stream is closed or closing. */
  send (text: string | Buffer): boolean
  /**
   * Sends one text message given as its whole frame (`textFrame(payload)`) and its payload: the frame is
   * written to the socket as it is, or, if ws has a message of its own under way, the payload goes through
   * ws. False when the stream is closed or closing.
   */
  sendFrame (frame: Buffer, payload: Buffer): boolean
  close (code: number, reason: string): void
  /** Runs fn once when the socket closes (unsubscribe from the hub here). */
  onClose (fn: () => void): void
}

export function openStream (socket: WebSocket, options: StreamOptions = {}): Stream {
  const maxBuffered = options.maxBufferedBytes ?? DEFAULT_MAX_BUFFERED
  const counters = options.counters
  const cleanups: Array<() => void> = []
  let closed = false
  let alive = true
  let killTimer: NodeJS.Timeout | undefined
  if (counters !== undefined) { counters.open++; counters.opened++ }

  const finish = (): void => {
    if (closed) return
    closed = true
    clearInterval(pinger)
    if (counters !== undefined) counters.open--
    for (const fn of cleanups.splice(0)) {
      try { fn() } catch (err) { options.log?.error({ err }, 'stream cleanup failed') }
    }
  }

  const close = (code: number, reason: string): void => {
    if (closed) return
    finish()
    try { socket.close(code, reason) } catch { /* already closing */ }
    killTimer = setTimeout(() => { socket.terminate() }, 1000)
    killTimer.unref()
  }

  const pinger = setInterval(() => {
    if (!alive) {
      if (counters !== undefined) counters.ping_timeouts++
      finish()
      socket.terminate()
      return
    }
    if (options.check !== undefined && !options.check()) { close(1008, 'access revoked'); return }
    alive = false
    try { socket.ping() } catch { /* closing */ }
  }, options.pingIntervalMs ?? DEFAULT_PING_MS)
  pinger.unref()

  socket.on('pong', () => { alive = true })
  socket.on('close', () => {
    finish()
    if (killTimer !== undefined) clearTimeout(killTimer)
  })
  socket.on('error', err => { options.log?.debug({ err }, 'stream socket error') })
  // Clients have nothing to say on these streams; their messages are ignored.
  socket.on('message', () => {})

  /** Open and keeping up; a client past maxBuffered is closed here (1013). */
  const writable = (): boolean => {
    if (closed || socket.readyState !== socket.OPEN) return false
    const buffered = socket.bufferedAmount
    if (buffered > maxBuffered) {
      if (counters !== undefined) { counters.slow_disconnects++; counters.last_slow_buffered_bytes = buffered }
      options.log?.info({ buffered }, 'closing a stream whose client does not read')
      close(1013, 'client too slow')
      return false
    }
    return true
  }

  return {
    send (text: string | Buffer): boolean {
      if (!writable()) return false
      // Bytes go out as a text frame too (ws would otherwise send a Buffer as binary).
      socket.send(text, { binary: false })
      return true
    },
    sendFrame (frame: Buffer, payload: Buffer): boolean {
      if (!writable()) return false
      const raw = frameSocket(socket)
      if (raw !== undefined) raw.write(frame)
      else socket.send(payload, { binary: false })
      return true
    },
    close,
    onClose (fn: () => void): void {
      if (closed) fn()
      else cleanups.push(fn)
    }
  }
}

/** Closes the stream with 1008 when the access token it was opened with is revoked or expires. */
export function bindToToken (stream: Stream, tokens: TokenStore, accessDigest: string, expiresAt: number): void {
  stream.onClose(watchAccessToken(tokens, accessDigest, expiresAt, why => {
    stream.close(1008, why === 'expired' ? 'token expired' : 'token revoked')
  }))
}
