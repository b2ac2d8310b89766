// The Fastify server: one error handler that produces the specification's
// JSON error bodies, the shared plugins, and the feature plugins in order.
import Fastify, { LogController, type FastifyReply, type FastifyRequest, type FastifyBaseLogger, type FastifyError, type FastifyInstance, type FastifyPluginAsync } from 'fastify'
import formbody from '@fastify/formbody'
import { ApiError, OAuthError } from '../errors.ts'
import { storageFailure } from '../store/db.ts'
import { captureAudit } from '../audit/capture.ts'
import { sessionsOf } from '../web/guard.ts'
import { auditActor } from '../web/operator-auth.ts'
import { errorPage } from '../oauth/pages.ts'
import { registerOpenApi } from './openapi.ts'
import { serveWebSockets } from './websocket.ts'
import { afterBody, clientErrorHandler, isLoopback, limitConnectionsPerAddress, responseClass, type ConnectionLimits } from './connections.ts'
import type { Services } from '../services.ts'
import type { Store } from '../store/db.ts'

// http.redirect_port's listener, built by the composition root beside the server.
export { startRedirect, stopRedirect } from './redirect.ts'

/**
 * What the server itself uses of the services: the log, the API settings and the sources' health, and the box's
 * LevelDB store when there is one (the audit log and sign-in sessions are kept in it). The hub (hub/api.ts)
 * builds its server without one: it serves only features that use the store interfaces.
 */
export interface ServerServices extends Pick<Services, 'log' | 'config' | 'health'> {
  store?: Store
}

export interface ServerOptions<S extends ServerServices = Services> {
  /** Largest request body accepted (bytes). */
  bodyLimit?: number
  /**
   * Feature plugins, registered in order after the shared ones, each with the services as its options:
   * a feature's options type names the services it uses.
   */
  features: Array<FastifyPluginAsync<S>>
  /** Serve /admin and /operator to non-loopback peers too (http.admin_remote). Default false. */
  adminRemote?: boolean
  /** http.headers_timeout_ms, request_timeout_ms, keep_alive_timeout_ms. */
  timeouts?: { headersMs: number, requestMs: number, keepAliveMs: number }
  /** http.max_connections_per_address and max_connections_loopback. */
  connections?: ConnectionLimits
  /** http.tls: serve HTTPS (and WSS) with this certificate and key (PEM). */
  tls?: { cert: Buffer, key: Buffer }
  /** Serve GET /health with the sources' health (default true; the hub registers its own). */
  healthRoute?: boolean
  /**
   * Whether a failure is the store's database being out of reach (the hub's PostgreSQL restarting): answered 503
   * `storage_busy` with Retry-After, as a moment when the box's store is swapped, never as a 500.
   */
  storeUnavailable?: (err: unknown) => boolean
}

const DEFAULT_TIMEOUTS = { headersMs: 10_000, requestMs: 30_000, keepAliveMs: 5_000 }
const DEFAULT_CONNECTIONS: ConnectionLimits = { maxPerAddress: 256, maxPerLoopbackAddress: 4096 }

/** The admin API and the operator pages (sign-in with the admin token is admin). */
function isAdminRoute (url: string | undefined): boolean {
  return url !== undefined && (url === '/admin' || url.startsWith('/admin/') || url === '/operator' || url.startsWith('/operator/'))
}

function toApiError (err: FastifyError): ApiError {
  const storage = storageFailure(err)
  if (storage !== undefined) return storageError(storage, err)
  if (err.validation !== undefined) return new ApiError('invalid_request', { detail: err.message })
  switch (err.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE': return new ApiError('payload_too_large')
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE': return new ApiError('invalid_request', { detail: 'unsupported content type' })
    default: break
  }
  const status = err.statusCode ?? 500
  if (status === 404) return new ApiError('not_found')
  if (status === 403) return new ApiError('forbidden')
  if (status === 405) return new ApiError('method_not_allowed')
  if (status === 429) return new ApiError('rate_limited')
  if (status >= 400 && status < 500) return new ApiError('invalid_request', { detail: err.message })
  return new ApiError('processing', { cause: err })
}

function storageError (kind: 'full' | 'io' | 'busy' | 'unreachable', cause: unknown): ApiError {
  if (kind === 'busy') return new ApiError('storage_busy', { detail: 'the store is being rewritten after an erasure; retry in a second', cause })
  if (kind === 'unreachable') return new ApiError('storage_busy', { detail: 'the database is out of reach for a moment; nothing was written; retry in a second', cause })
  return kind === 'full'
    ? new ApiError('storage_full', { detail: 'no space left on the device of the data directory; nothing was stored', cause })
    : new ApiError('storage_failed', { detail: 'the data store could not write to disk; nothing was stored', cause })
}

export async function buildServer<S extends ServerServices> (services: S, options: ServerOptions<S>): Promise<FastifyInstance> {
  const log = services.log.child({ component: 'http' }) as FastifyBaseLogger
  const timeouts = options.timeouts ?? DEFAULT_TIMEOUTS
  // Slow and half-open connections: headers and the whole request must arrive in time (checked every second,
  // answered 408 and closed), and an idle keep-alive connection is closed.
  // ServerResponse: every answer carries x-content-type-options: nosniff, and clientErrorHandler knows which
  // connections are answering (connections.ts).
  const serverOptions = { headersTimeout: Math.min(timeouts.headersMs, timeouts.requestMs), requestTimeout: timeouts.requestMs, connectionsCheckingInterval: 1000, ServerResponse: responseClass() }
  const fastifyOptions = {
    // No logger of Fastify's own: with one, Fastify adds two listeners to every response for request log lines
    // this service does not write. request.log and reply.log are the service's http logger (the child logger
    // factory below), so the routes' lines and Fastify's own warnings about a request still reach the log.
    logger: false,
    requestTimeout: timeouts.requestMs,
    keepAliveTimeout: timeouts.keepAliveMs,
    // 431, 408 and 400 raised by Node's parser, with the JSON error body.
    clientErrorHandler: clientErrorHandler(log),
    bodyLimit: options.bodyLimit ?? 64 * 1024,
    // Request log lines would carry URLs with `access_token` query parameters: never log a token.
    logController: new LogController({ disableRequestLogging: true }),
    // Query strings: repeated parameters arrive as arrays and fail schema validation instead of being guessed.
    routerOptions: { maxParamLength: 200 },
    ajv: { customOptions: { coerceTypes: false, removeAdditional: false, allErrors: false } },
    // Errors raised before routing (a URL that is not valid percent-encoding, a bad header) get the same JSON body.
    frameworkErrors: (error: FastifyError, _request: unknown, reply: unknown) => {
      const e = new ApiError('invalid_request', { detail: error.message })
      void (reply as FastifyReply).code(e.status).type('application/json; charset=utf-8').send(e.body())
    }
  }
  // With http.tls, Fastify's `https` options make node:https's server (the same HTTP server behind a TLS
  // handshake, bounded like the headers); its requests, upgrades and client errors are those of node:http, so the
  // rest of the layer takes it as one.
  const app = options.tls === undefined
    ? Fastify({ ...fastifyOptions, http: serverOptions })
    : Fastify({ ...fastifyOptions, https: { ...serverOptions, cert: options.tls.cert, key: options.tls.key, handshakeTimeout: serverOptions.headersTimeout } }) as unknown as FastifyInstance
  // Every request logs to the service's http logger, without bindings per request (request logging is off).
  app.setChildLoggerFactory(() => log)
  // request.auth (api/http/types.ts), set by authentication: declared on every request from the start, as Fastify
  // asks of request properties, so that an authenticated request keeps the shape of the others.
  app.decorateRequest('auth', undefined)

  limitConnectionsPerAddress(app.server, options.connections ?? DEFAULT_CONNECTIONS, log)
  // A failed TLS handshake (a client that does not trust the certificate, a plain HTTP request): node:tls closes it.
  if (options.tls !== undefined) app.server.on('tlsClientError', (err: NodeJS.ErrnoException) => { log.debug({ code: err.code }, 'TLS handshake failed') })

  app.setErrorHandler(async (error: FastifyError | ApiError | OAuthError, request, reply) => {
    await bodyRead(request)
    if (error instanceof OAuthError) {
      return await reply.code(error.status).headers({ 'cache-control': 'no-store', pragma: 'no-cache', ...error.headers }).send(error.body())
    }
    // A failed disk write, wherever it surfaces (also wrapped, as the write endpoint's 6001), says what happened.
    const storage = storageFailure(error) ?? (options.storeUnavailable?.(error) === true ? 'unreachable' : undefined)
    const apiError = storage !== undefined ? storageError(storage, error) : error instanceof ApiError ? error : toApiError(error as FastifyError)
    if (storage === 'busy' || storage === 'unreachable') { void reply.header('retry-after', '1'); request.log.debug({ url: request.routeOptions.url, storage }, 'store busy or out of reach') } else if (apiError.status >= 500) request.log.error({ err: apiError.cause ?? error, url: request.routeOptions.url }, 'request failed')
    else request.log.debug({ code: apiError.code, url: request.routeOptions.url }, 'request refused')
    return await reply.code(apiError.status).type('application/json; charset=utf-8').send(apiError.body())
  })
  app.setNotFoundHandler(async (request, reply) => {
    await bodyRead(request)
    const e = new ApiError('not_found')
    return await reply.code(e.status).send(e.body())
  })

  // An answer ready before the request's body was read (a refusal, 413, 415): the rest of the body is read
  // first, so that the client, still uploading, reads the answer. The error and not-found handlers wait for it;
  // routes whose method carries a body get it as an onSend hook (below); GET and HEAD answers need none, so the
  // hook costs them nothing.
  const readBodyFirst = (request: FastifyRequest, _reply: FastifyReply, payload: unknown, done: (err: null, payload: unknown) => void): void => {
    afterBody(request.raw, () => { done(null, payload) })
  }
  const bodyRead = async (request: FastifyRequest): Promise<void> => { await new Promise<void>(resolve => { afterBody(request.raw, resolve) }) }

  // The admin API stays on the box: /admin and /operator answer loopback peers only (the socket's own address,
  // never a forwarded header), before the admin token is looked at, unless http.admin_remote says otherwise.
  if (options.adminRemote === true) {
    log.warn('http.admin_remote is on: the admin API and operator pages answer clients on the network, not only on this machine')
  } else {
    app.addHook('onRequest', (request, reply, done) => {
      // Only a path that can route to /admin or /operator is looked up (request.routeOptions builds an object per
      // call): one that starts with /ad or /op, or that the router may decode or fold (a %-escape, a double slash).
      const raw = request.raw.url ?? ''
      if (!raw.startsWith('/ad') && !raw.startsWith('/op') && !raw.startsWith('//') && !raw.includes('%')) { done(); return }
      if (!isAdminRoute(request.routeOptions.url) || isLoopback(request.raw.socket.remoteAddress)) { done(); return }
      const detail = 'the admin API and operator pages answer on this machine only (loopback); see http.admin_remote'
      if (request.routeOptions.url?.startsWith('/operator') === true) {
        void errorPage(reply, 403, 'Operator pages are local', 'The operator pages answer only on the relay box itself (loopback). Open them there, or use an SSH tunnel.')
        return
      }
      done(new ApiError('forbidden', { detail }))
    })
  }

  app.addHook('onRoute', route => {
    const methods = Array.isArray(route.method) ? route.method : [route.method]
    if (methods.every(m => m === 'GET' || m === 'HEAD')) return
    const own = route.onSend === undefined ? [] : Array.isArray(route.onSend) ? route.onSend : [route.onSend]
    route.onSend = [...own, readBodyFirst] as typeof route.onSend
  })

  // The WebSocket routes (`{ websocket: true }`), before any route is added; a GET without an Upgrade is 426.
  serveWebSockets(app, { maxPayload: 64 * 1024, log })

  // /openapi.json and /docs; its onRoute hook must come before every route it documents.
  registerOpenApi(app, { publicUrl: () => services.config.publicUrl })

  await app.register(formbody, { bodyLimit: options.bodyLimit ?? 64 * 1024 })

  if (options.healthRoute !== false) {
    app.get('/health', async () => ({
      status: 'ok',
      sources: services.health()
    }))
  }

  const store = services.store
  if (store !== undefined) {
    // The audit log (api/audit/): every change through the admin API and the operator pages, before it is answered.
    captureAudit(app, store, request => auditActor(services, request))
    // Sign-in sessions survive a restart: loaded from the store, and written through to it (api/oauth/session.ts).
    const sessions = sessionsOf(services)
    await sessions.persistIn(store)
    app.addHook('onClose', async () => { await sessions.flushed() })
  }
  for (const feature of options.features) await app.register(feature, services)
  return app
}
