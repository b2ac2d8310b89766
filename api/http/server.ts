// The Fastify server: one error handler that produces the specification's
// JSON error bodies, the shared plugins, and the feature plugins in order.
import Fastify, { LogController, type FastifyReply, type FastifyBaseLogger, type FastifyError, type FastifyInstance, type FastifyPluginAsync } from 'fastify'
import formbody from '@fastify/formbody'
import rateLimit from '@fastify/rate-limit'
import websocket from '@fastify/websocket'
import { ApiError, OAuthError } from '../errors.ts'
import type { Services } from '../services.ts'
import './types.ts'

export interface ServerOptions {
  /** Largest request body accepted (bytes). */
  bodyLimit?: number
  /** Feature plugins, registered in order after the shared ones. */
  features: FastifyPluginAsync[]
}

function toApiError (err: FastifyError): ApiError {
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

export async function buildServer (services: Services, options: ServerOptions): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: services.log.child({ component: 'http' }) as FastifyBaseLogger,
    bodyLimit: options.bodyLimit ?? 64 * 1024,
    // Request log lines would carry URLs with `access_token` query parameters: never log a token.
    logController: new LogController({ disableRequestLogging: true }),
    // Query strings: repeated parameters arrive as arrays and fail schema validation instead of being guessed.
    routerOptions: { maxParamLength: 200 },
    ajv: { customOptions: { coerceTypes: false, removeAdditional: false, allErrors: false } },
    // Errors raised before routing (a URL that is not valid percent-encoding, a bad header) get the same JSON body.
    frameworkErrors: (error, _request, reply) => {
      const e = new ApiError('invalid_request', { detail: error.message })
      void (reply as FastifyReply).code(e.status).type('application/json; charset=utf-8').send(e.body())
    }
  })
  app.decorate('hr', services)
  // Request logging is off, so a child logger per request (pino bindings for a request id) is work for nothing.
  app.setChildLoggerFactory(logger => logger)

  app.setErrorHandler(async (error: FastifyError | ApiError | OAuthError, request, reply) => {
    if (error instanceof OAuthError) {
      return await reply.code(error.status).headers({ 'cache-control': 'no-store', pragma: 'no-cache', ...error.headers }).send(error.body())
    }
    const apiError = error instanceof ApiError ? error : toApiError(error as FastifyError)
    if (apiError.status >= 500) request.log.error({ err: apiError.cause ?? error, url: request.routeOptions.url }, 'request failed')
    else request.log.debug({ code: apiError.code, url: request.routeOptions.url }, 'request refused')
    return await reply.code(apiError.status).type('application/json; charset=utf-8').send(apiError.body())
  })
  app.setNotFoundHandler(async (_request, reply) => {
    const e = new ApiError('not_found')
    return await reply.code(e.status).send(e.body())
  })

  // Callback style: this runs on every answer, and an async hook costs a promise each time.
  app.addHook('onSend', (_request, reply, payload, done) => {
    reply.header('x-content-type-options', 'nosniff')
    done(null, payload)
  })

  await app.register(formbody, { bodyLimit: options.bodyLimit ?? 64 * 1024 })
  await app.register(websocket, { options: { maxPayload: 64 * 1024 } })
  // Not global: the data API's guard applies it per token (api/http/data-auth.ts). The standard
  // RateLimit-Limit / -Remaining / -Reset names, Retry-After on 429, and the spec's error body.
  await app.register(rateLimit, { global: false, enableDraftSpec: true, errorResponseBuilder: () => new ApiError('rate_limited') })

  app.get('/health', async () => ({
    status: 'ok',
    sources: services.health()
  }))

  for (const feature of options.features) await app.register(feature)
  return app
}
