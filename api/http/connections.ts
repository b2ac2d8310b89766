// The HTTP server below Fastify's routing: which peers count as local, how
// many connections one address may hold open, how a refused or failed request
// is answered so that the client can read its answer, and the JSON answer to
// errors Node's parser raises before a request exists (431, 408, 400).
// Only documented APIs of node:http and node:net are used.
// Types only: an ES module import of node:http's values makes Node build its ESM facade, which reads every
// export, the lazy WebSocket ones too, and so loads the bundled undici that nothing here uses
// (nodejs/node#59686); the three reason phrases rawAnswer needs are below.
import type { IncomingMessage, Server, ServerResponse } from 'node:http'
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

/** How much of what a client still sends after it was answered or refused is read, and for how long (afterBody, lingeringClose). */
export const LINGER_MS = 5000
export const LINGER_BYTES = 4 * 1024 * 1024

/** Content-Length above 0 or a Transfer-Encoding: the request has a body (RFC 9112 6.3). */
function announcesBody (request: IncomingMessage): boolean {
  const length = request.headers['content-length']
  return request.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0')
}

/**
 * Calls `answer` once the request's body is read: at once when it has none or it is read already; otherwise
 * after reading and discarding the rest (until its end, LINGER_BYTES or LINGER_MS). For an answer ready before
 * the body was read (413, a refusal): Node closes such a connection after the answer (Fastify asks it to after a
 * body error), and closing with unread bytes sends a TCP reset, so that the client, still uploading, would get
 * EPIPE or ECONNRESET and lose the answer.
 */
export function afterBody (request: IncomingMessage, answer: () => void): void {
  if (request.complete || !announcesBody(request)) { answer(); return }
  let read = 0
  let answered = false
  const go = (): void => {
    if (answered) return
    answered = true
    clearTimeout(timer)
    request.off('data', discard)
    request.off('end', go)
    request.off('close', go)
    answer()
  }
  const discard = (chunk: Buffer): void => {
    read += chunk.length
    if (read > LINGER_BYTES) go()
  }
  const timer = setTimeout(go, LINGER_MS)
  timer.unref()
  request.on('data', discard)
  request.once('end', go)
  request.once('close', go)
  request.resume()
}

/**
 * Ends the socket after a raw answer, then reads and discards what the client
 * still sends until its side of the connection ends, LINGER_BYTES are read or
 * LINGER_MS pass, and only then closes (nginx's lingering_close): closing with
 * unread bytes sends a TCP reset, and the client loses the answer.
 */
export function lingeringClose (socket: Socket): void {
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
  const timer = setTimeout(close, LINGER_MS)
  // Node's HTTP parser may read the socket natively (no 'data' events): bytesRead counts either way.
  const meter = setInterval(() => { if (socket.bytesRead - startBytes > LINGER_BYTES) close() }, 50)
  timer.unref()
  meter.unref()
  socket.once('close', () => { clearTimeout(timer); clearInterval(meter) })
  socket.once('end', () => { drained = true; if (flushed) close() })
  socket.on('data', () => { /* discarded */ })
  socket.resume()
  socket.end(() => { flushed = true; if (drained) close() })
}

/** The responses of each connection that are not finished, kept by ServerResponse's subclass below. */
const responses = new WeakMap<Socket, Set<ServerResponse>>()

let answerResponse: typeof ServerResponse | undefined

/**
 * The server's ServerResponse class (node:http's documented `ServerResponse` option, for extending it): every
 * response carries `x-content-type-options: nosniff` (Node merges it with the headers Fastify writes) and is kept
 * in `responses` for clientErrorHandler (`answering`). A class instead of a 'request' listener: the server's
 * 'request' event keeps its one listener, Fastify's. Built on first use, from process.getBuiltinModule (see the
 * note on node:http above).
 */
export function responseClass (): typeof ServerResponse {
  if (answerResponse !== undefined) return answerResponse
  const Base = process.getBuiltinModule('node:http').ServerResponse
  class AnswerResponse extends Base {
    // Node constructs it with (request, options); every argument is passed on.
    constructor (...args: ConstructorParameters<typeof Base>) {
      super(...args)
      this.setHeader('x-content-type-options', 'nosniff')
      const socket = args[0].socket
      let open = responses.get(socket)
      if (open === undefined) responses.set(socket, open = new Set())
      else for (const r of open) if (r.writableFinished) open.delete(r)
      open.add(this)
    }
  }
  // node:http's type is generic in the request type; this class answers node:http's own IncomingMessage.
  answerResponse = AnswerResponse as typeof ServerResponse
  return answerResponse
}

/**
 * An answer is under way on this connection: a response whose headers are written and whose bytes have not
 * all gone to the socket. A raw answer written now would land inside it.
 */
function answering (socket: Socket): boolean {
  const open = responses.get(socket)
  if (open === undefined) return false
  for (const r of open) if (r.headersSent && !r.writableFinished) return true
  return false
}

/** The reason phrases of the raw answers (RFC 9110 15.5). */
const REASONS: Readonly<Record<number, string>> = { 400: 'Bad Request', 408: 'Request Timeout', 431: 'Request Header Fields Too Large' }

/** The raw HTTP answer with the API's JSON error body, for errors raised before Fastify has a request. */
function rawAnswer (name: ApiErrorName): string {
  const e = new ApiError(name)
  const body = JSON.stringify(e.body())
  return `HTTP/1.1 ${e.status} ${REASONS[e.status] ?? ''}\r\nconnection: close\r\ncontent-type: application/json; charset=utf-8\r\n` +
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
    if (!socket.writable || answering(socket)) { socket.destroy(); return }
    if (name === 'request_timeout') {
      socket.end(rawAnswer(name), () => { socket.destroy() })
      return
    }
    socket.write(rawAnswer(name))
    lingeringClose(socket)
  }
}
