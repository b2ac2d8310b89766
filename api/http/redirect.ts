// http.redirect_port: a plain HTTP listener beside the HTTPS one that answers
// every request 308 Permanent Redirect to the same host, path and query on
// https at the HTTPS port (308 keeps the method and body, unlike 301). It
// shares the API's connection handling: per-address limits, timeouts, the
// JSON answer to unparseable requests and the lingering close.
// node:http is reached through process.getBuiltinModule, and only when the
// redirect is configured (connections.ts says why it is not imported as an ES module).
import type { IncomingMessage, Server, ServerResponse } from 'node:http'
import type { FastifyBaseLogger } from 'fastify'
import { ApiError } from '../errors.ts'
import { afterBody, clientErrorHandler, limitConnectionsPerAddress, responseClass, type ConnectionLimits } from './connections.ts'

export interface RedirectOptions {
  host: string
  port: number
  /** The port HTTPS listens on: part of every Location. */
  httpsPort: number
  log: FastifyBaseLogger
  connections: ConnectionLimits
  timeouts: { headersMs: number, requestMs: number, keepAliveMs: number }
}

/** A Host header's name, or a bracketed IPv6 literal, and an optional port (RFC 9110 7.2); anything else is refused. */
const HOST = /^([A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?|\[[0-9A-Fa-f:.]{2,45}\])(?::\d{1,5})?$/

/** The https URL of a request, or undefined when its Host header is missing or not a host. */
export function httpsLocation (request: Pick<IncomingMessage, 'headers' | 'url'>, httpsPort: number): string | undefined {
  const match = HOST.exec(request.headers.host ?? '')
  if (match === null) return undefined
  // origin-form only: an absolute-form or asterisk target is sent to the root.
  const path = request.url?.startsWith('/') === true ? request.url : '/'
  return `https://${match[1] as string}${httpsPort === 443 ? '' : `:${httpsPort}`}${path}`
}

function answer (request: IncomingMessage, response: ServerResponse, httpsPort: number): void {
  const location = httpsLocation(request, httpsPort)
  if (location === undefined) {
    const e = new ApiError('invalid_request', { detail: 'the Host header is missing or not a host name' })
    const body = JSON.stringify(e.body())
    response.writeHead(e.status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body) }).end(body)
    return
  }
  response.writeHead(308, { location, 'content-length': 0, 'cache-control': 'no-store' }).end()
}

/** Listens on host:port; resolves with the listening server, rejects with the listen error. */
export async function startRedirect (options: RedirectOptions): Promise<Server> {
  const http = process.getBuiltinModule('node:http')
  const { headersMs, requestMs, keepAliveMs } = options.timeouts
  const server = http.createServer({ headersTimeout: Math.min(headersMs, requestMs), requestTimeout: requestMs, connectionsCheckingInterval: 1000, keepAliveTimeout: keepAliveMs, ServerResponse: responseClass() })
  limitConnectionsPerAddress(server, options.connections, options.log)
  server.on('clientError', clientErrorHandler(options.log))
  // A request with a body is answered once the body is read, so that the client reads the answer.
  server.on('request', (request: IncomingMessage, response: ServerResponse) => { afterBody(request, () => { answer(request, response, options.httpsPort) }) })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen({ host: options.host, port: options.port }, () => { server.off('error', reject); resolve() })
  })
  server.on('error', err => { options.log.error({ err }, 'HTTP redirect listener error') })
  return server
}

/** Stops listening and closes every connection, idle or not. */
export async function stopRedirect (server: Server): Promise<void> {
  const closed = new Promise<void>(resolve => { server.close(() => { resolve() }) })
  server.closeAllConnections()
  await closed
}
