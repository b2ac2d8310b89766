// One server-side WebSocket stream: keep-alive and the bound on a slow client.
// Messages go out through ws's public send only.
// - Ping every pingIntervalMs (default 30 s); a client that has not answered
//   the previous ping by the next tick is terminated.
// - A client that stops reading: once ws's bufferedAmount (bytes queued by
//   send and not yet handed to the network) passes maxBufferedBytes (default
//   256 KiB) the stream stops sending, closes with 1013 "client too slow" and
//   terminates the socket one second later if the close handshake does not
//   finish (a client that does not read never sees the close frame), so
//   memory per client stays bounded.
// - `check` (optional) runs on every ping tick; false closes with 1008
//   (a revoked widget or display capability, a removed member).
// - bindToToken: a stream opened with an access token closes with 1008 when
//   that token is revoked (an event of the token store) or expires (a timer).
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
 * `encode` made once per message object: its first call for a message makes the UTF-8 bytes, and every later
 * call for the same object (the hub hands every subscriber the same one) returns the same Buffer, so that a
 * message is serialized and encoded once however many streams it goes to. Kept while the message object lives.
 */
export function encodedOnce<T extends object> (encode: (message: T) => string): (message: T) => Buffer {
  const made = new WeakMap<T, Buffer>()
  return message => {
    let bytes = made.get(message)
    if (bytes === undefined) {
      bytes = Buffer.from(encode(message))
      made.set(message, bytes)
    }
    return bytes
  }
}

export interface Stream {
  /**
   * Sends one text message through ws: a string, or its UTF-8 bytes (a Buffer made once and sent to many streams
   * as it is). False when the stream is closed or closing, or its client was too slow and is being closed.
   */
  send (text: string | Buffer): boolean
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
