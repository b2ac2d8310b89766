// WebSocket routes on the API's Fastify server, on `ws`'s public API: a route
// declared with `{ websocket: true }` gets its handler called with the open
// WebSocket and the request. An upgrade request goes through Fastify's
// routing like any request (fastify.routing), so its route's hooks
// authenticate it and a refusal is an HTTP answer with the JSON error body;
// then `WebSocketServer#handleUpgrade` completes the handshake. Only the
// WebSocket routes carry any of this: no global hook, and no wrapper around
// the handlers of the other routes, so an HTTP request pays nothing for it. An
// upgrade to a route that does not upgrade is answered by that route over
// HTTP, and the connection closes after the answer.
import type { IncomingMessage } from 'node:http'
import type { Socket } from 'node:net'
import type { Duplex } from 'node:stream'
import { WebSocketServer, type WebSocket } from 'ws'
import type {
  ContextConfigDefault, FastifyBaseLogger, FastifyInstance, FastifyReply, FastifyRequest, FastifySchema, FastifyTypeProvider,
  FastifyTypeProviderDefault, RawReplyDefaultExpression, RawRequestDefaultExpression, RawServerBase, RawServerDefault,
  RequestGenericInterface, RouteOptions
} from 'fastify'
import { ApiError } from '../errors.ts'
import { responseClass } from './connections.ts'

/** A WebSocket route's handler: the open socket and its request (its params and query as the route's schema types them). */
export type WebSocketHandler<
  RawServer extends RawServerBase = RawServerDefault,
  RawRequest extends RawRequestDefaultExpression<RawServer> = RawRequestDefaultExpression<RawServer>,
  RequestGeneric extends RequestGenericInterface = RequestGenericInterface,
  ContextConfig = ContextConfigDefault,
  SchemaCompiler extends FastifySchema = FastifySchema,
  TypeProvider extends FastifyTypeProvider = FastifyTypeProviderDefault,
  Logger extends FastifyBaseLogger = FastifyBaseLogger
> = (socket: WebSocket, request: FastifyRequest<RequestGeneric, RawServer, RawRequest, SchemaCompiler, TypeProvider, ContextConfig, Logger>) => void | Promise<unknown>

declare module 'fastify' {
  interface RouteShorthandOptions<
    // eslint-disable-next-line @typescript-eslint/no-unused-vars
    RawServer extends RawServerBase = RawServerDefault
  > {
    /** The handler is a WebSocket handler (api/http/websocket.ts). */
    websocket?: boolean
  }

  interface RouteShorthandMethod<
    RawServer extends RawServerBase = RawServerDefault,
    RawRequest extends RawRequestDefaultExpression<RawServer> = RawRequestDefaultExpression<RawServer>,
    RawReply extends RawReplyDefaultExpression<RawServer> = RawReplyDefaultExpression<RawServer>,
    TypeProvider extends FastifyTypeProvider = FastifyTypeProviderDefault,
    Logger extends FastifyBaseLogger = FastifyBaseLogger
  > {
    // With `websocket: true` the handler is a WebSocket handler.
    <RequestGeneric extends RequestGenericInterface = RequestGenericInterface, ContextConfig = ContextConfigDefault, SchemaCompiler extends FastifySchema = FastifySchema, InnerLogger extends Logger = Logger>(
      path: string,
      opts: RouteShorthandOptions<RawServer, RawRequest, RawReply, RequestGeneric, ContextConfig, SchemaCompiler, TypeProvider, InnerLogger> & { websocket: true },
      handler: WebSocketHandler<RawServer, RawRequest, RequestGeneric, ContextConfig, SchemaCompiler, TypeProvider, InnerLogger>
    ): FastifyInstance<RawServer, RawRequest, RawReply, InnerLogger, TypeProvider>
  }

  interface RouteOptions {
    /** Set on a WebSocket route: its WebSocket handler (the route's `handler` answers requests that do not upgrade). */
    wsHandler?: WebSocketHandler<any, any, any, any, any, any, any>
  }
}

/** An upgrade request's socket and first bytes, from the server's 'upgrade' event until its route takes them. */
interface Pending { socket: Duplex, head: Buffer }

function destroyOnError (this: Duplex): void { this.destroy() }

/**
 * Serves the app's WebSocket routes: must run before any route is added (its onRoute hook turns each
 * `{ websocket: true }` route into an upgrade). A GET without an Upgrade is 426 with the JSON error body, after
 * the route's own checks (a missing token is still 403 or 401).
 */
export function serveWebSockets (app: FastifyInstance, options: { maxPayload: number, log: FastifyBaseLogger }): void {
  const wss = new WebSocketServer({ noServer: true, maxPayload: options.maxPayload })
  const pending = new WeakMap<IncomingMessage, Pending>()
  const Response = responseClass()

  const onUpgrade = (request: IncomingMessage, socket: Duplex, head: Buffer): void => {
    // Node removed its own error listener before 'upgrade': the socket stays guarded while the request is routed.
    socket.on('error', destroyOnError)
    pending.set(request, { socket, head })
    const response = new Response(request)
    response.assignSocket(socket as Socket)
    // Answered over HTTP (refused, or a route that does not upgrade): the connection ends with the answer.
    response.once('finish', () => { if (pending.delete(request)) socket.destroy() })
    try {
      app.routing(request, response)
    } catch (err) {
      options.log.warn({ err }, 'WebSocket upgrade failed')
      socket.destroy()
    }
  }
  app.server.on('upgrade', onUpgrade)

  app.addHook('onRoute', (route: RouteOptions) => {
    if (route.websocket !== true) return
    const methods = Array.isArray(route.method) ? route.method : [route.method]
    if (methods.some(m => m !== 'GET' && m !== 'HEAD')) throw new Error(`a WebSocket route answers GET only: ${methods.join(', ')} ${route.url}`)
    const wsHandler = route.handler as unknown as WebSocketHandler
    route.websocket = false
    route.wsHandler = wsHandler
    route.handler = async function (request: FastifyRequest, reply: FastifyReply) {
      const up = pending.get(request.raw)
      if (up === undefined) {
        const e = new ApiError('upgrade_required', { detail: 'this is a WebSocket endpoint: connect with Upgrade: websocket' })
        return await reply.code(e.status).headers({ upgrade: 'websocket', connection: 'Upgrade' }).type('application/json; charset=utf-8').send(e.body())
      }
      pending.delete(request.raw)
      reply.hijack()
      up.socket.removeListener('error', destroyOnError)
      // An invalid handshake (a bad key or version) is answered 400 by ws itself, and the callback is not called.
      wss.handleUpgrade(request.raw, up.socket, up.head, socket => {
        socket.on('error', err => { options.log.debug({ err, url: route.url }, 'WebSocket error'); socket.terminate() })
        const failed = (err: unknown): void => { options.log.error({ err, url: route.url }, 'WebSocket handler failed'); socket.terminate() }
        try {
          const done = wsHandler(socket, request)
          if (done instanceof Promise) done.catch(failed)
        } catch (err) {
          failed(err)
        }
      })
      return reply
    }
  })

  // Closing the server stops the upgrades and starts the close handshake of every open WebSocket, without waiting
  // for it: a client that no longer answers would hold the shutdown for ws's close timeout.
  app.addHook('preClose', async () => {
    app.server.removeListener('upgrade', onUpgrade)
    for (const client of wss.clients) client.close()
    wss.close()
  })
}
