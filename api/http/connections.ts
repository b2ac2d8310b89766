// The HTTP server below Fastify's routing: which peers count as local, how
// many connections one address may hold open, how a refused or failed request
// is closed so that the client can read its answer, and the JSON answer to
// errors Node's parser raises before a request exists (431, 408, 400).
import { STATUS_CODES, type IncomingMessage, type Server } from 'node:http'
import type { Socket } from 'node:net'
import type { FastifyBaseLogger } from 'fastify'
import { ApiError, type ApiErrorName } from '../errors.ts'

export interface ConnectionLimits {
  /** Open connections from one non-loopback address (0: no limit). */
  maxPerAddress: number
  /** Open connections from one loopback address (0: no limit). */
  maxPerLoopbackAddress: number
}

/** 127.0.0.0/8 and ::1, also in their IPv4-mapped IPv6 form. */
export function isLoopback (address: string | undefined): boolean {
  if (address === undefined) return false
  const a = address.startsWith('::ffff:') ? address.slice(7) : address
  return a === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(a)
}

/**
 * Closes connections beyond the limit of their address at once, before any
 * byte is read, so that one host opening thousands of sockets cannot starve
 * the others. WebSockets count while they are open.
 */
export function limitConnectionsPerAddress (server: Server, limits: ConnectionLimits, log: FastifyBaseLogger): void {
  const open = new Map<string, number>()
  server.on('connection', (socket: Socket) => {
    const address = socket.remoteAddress
    if (address === undefined) return
    const max = isLoopback(address) ? limits.maxPerLoopbackAddress : limits.maxPerAddress
    const n = open.get(address) ?? 0
    if (max > 0 && n >= max) {
      log.debug({ address, open: n }, 'connection refused: too many from this address')
      socket.destroy()
      return
    }
    open.set(address, n + 1)
    socket.once('close', () => {
      const left = (open.get(address) ?? 1) - 1
      if (left <= 0) open.delete(address)
      else open.set(address, left)
    })
  })
}

/** Lingering close, as nginx's lingering_close: how long and how much is read and discarded after the answer. */
export const LINGER_MS = 5000
export const LINGER_BYTES = 4 * 1024 * 1024

/**
 * Ends the socket after the answer is out, then reads and discards what the
 * client still sends (the rest of a refused body) until its request or its
 * side of the connection ends, LINGER_BYTES are read or LINGER_MS pass, and
 * only then closes. Closing with unread bytes sends a TCP reset, and the
 * client, still uploading, gets EPIPE or ECONNRESET and loses the answer.
 */
export function lingeringClose (socket: Socket, request?: IncomingMessage): void {
  if (socket.destroyed) return
  const startBytes = socket.bytesRead
  let flushed = false
  let drained = false
  const close = (): void => {
    clearTimeout(timer)
    clearInterval(meter)
    socket.destroy()
  }
  // Closed once the answer is flushed and the client has sent all it meant to (or the bounds are reached).
  const drainedNow = (): void => { drained = true; if (flushed) close() }
  const timer = setTimeout(close, LINGER_MS)
  // Node's HTTP parser may read the socket natively (no 'data' events): bytesRead counts either way.
  const meter = setInterval(() => { if (socket.bytesRead - startBytes > LINGER_BYTES) close() }, 50)
  timer.unref()
  meter.unref()
  socket.once('close', () => { clearTimeout(timer); clearInterval(meter) })
  socket.once('end', drainedNow)
  if (request !== undefined) {
    if (request.complete) drained = true
    else { request.once('end', drainedNow); request.resume() }
  } else {
    socket.on('data', () => { /* discarded */ })
    socket.resume()
  }
  socket.end(() => { flushed = true; if (drained) close() })
}

const lingering = new WeakSet<Socket>()

/**
 * Called when an answer is sent before its request body was read (413, or a
 * refusal before the body): if Node then closes the connection, it closes
 * it through lingeringClose instead of at once.
 */
export function lingerIfClosed (request: IncomingMessage): void {
  const socket = request.socket as Socket & { destroySoon?: () => void }
  if (socket.destroyed || lingering.has(socket)) return
  lingering.add(socket)
  // Node's HTTP server ends a `connection: close` answer with socket.destroySoon().
  socket.destroySoon = () => { lingeringClose(socket, request) }
}

/** The raw HTTP answer with the API's JSON error body, for errors raised before Fastify has a request. */
function rawAnswer (name: ApiErrorName): string {
  const e = new ApiError(name)
  const body = JSON.stringify(e.body())
  return `HTTP/1.1 ${e.status} ${STATUS_CODES[e.status] ?? ''}\r\nconnection: close\r\ncontent-type: application/json; charset=utf-8\r\n` +
    `content-length: ${Buffer.byteLength(body)}\r\nx-content-type-options: nosniff\r\n\r\n${body}`
}

/**
 * Fastify's clientErrorHandler: headers too large (431), headers or request
 * not complete in time (408), unparseable request (400), each with the JSON
 * error body. A timed-out client is closed right after its answer; the others
 * get a lingering close so that they can read it.
 */
export function clientErrorHandler (log: FastifyBaseLogger): (err: NodeJS.ErrnoException, socket: Socket) => void {
  return (err, socket) => {
    if (err.code === 'ECONNRESET' || socket.destroyed) return
    const name: ApiErrorName = err.code === 'HPE_HEADER_OVERFLOW'
      ? 'headers_too_large'
      : err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 'request_timeout' : 'invalid_request'
    log.debug({ code: err.code }, 'client error')
    const answering = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage
    if (!socket.writable || answering?.headersSent === true) { socket.destroy(); return }
    if (name === 'request_timeout') {
      socket.end(rawAnswer(name), () => { socket.destroy() })
      return
    }
    socket.write(rawAnswer(name))
    lingeringClose(socket)
  }
}
