// Authentication and the per-token rate limit for the data API's routes.
// `guard(...)` is used as the route's onRequest hook, so a request is
// authenticated before its body is parsed (deny by default), and a WebSocket
// upgrade is refused with the HTTP error instead of being upgraded.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { ApiError } from '../errors.ts'
import { authenticate, type AuthOptions } from './auth.ts'
import type { Services } from '../services.ts'

/** What the guard reads: the token store, and the rate limit from the API configuration. */
export type GuardUses = Pick<Services, 'tokens' | 'config'>

type Limit = (request: FastifyRequest, reply: FastifyReply) => Promise<unknown>

/** One per-token limiter per service instance (keyed by its ApiConfig object); null when turned off. */
const limiters = new WeakMap<object, Limit | null>()

/**
 * The per-token limit (service-notes "Rate limit"; config http.rate_limit_per_second):
 * @fastify/rate-limit with one-second windows keyed by the token's digest,
 * one counter shared by every guarded route.
 */
function limitOf (app: FastifyInstance, config: GuardUses['config']): Limit | null {
  let l = limiters.get(config)
  if (l === undefined) {
    const max: number = config.rateLimitPerSecond
    l = max > 0
      ? app.rateLimit({ max, timeWindow: 1000, keyGenerator: request => request.auth?.digest ?? '' })
      : null
    limiters.set(config, l)
  }
  return l
}

/** Authenticates (user tokens only) and applies the rate limit; throws ApiError. */
export async function guardRequest (app: FastifyInstance, uses: GuardUses, request: FastifyRequest, reply: FastifyReply, options: AuthOptions): Promise<string> {
  const ctx = await authenticate(uses.tokens, request, { user: true, ...options })
  await limitOf(app, uses.config)?.(request, reply)
  const profile = ctx.record.profile_id
  if (profile === null) throw new ApiError('invalid_scope')
  return profile
}

export function guard (app: FastifyInstance, uses: GuardUses, options: AuthOptions) {
  return async (request: FastifyRequest, reply: FastifyReply): Promise<void> => { await guardRequest(app, uses, request, reply, options) }
}

/** Response modes of the latest endpoint and the real-time stream (spec 4.2). */
export type ResponseMode = 'json' | 'text_plain_only_heart_rate'

/** Also called in onRequest hooks, before the querystring is validated: `v` is whatever was given. */
export function responseMode (v: unknown): ResponseMode {
  if (v === undefined || v === 'json') return 'json'
  if (v === 'text_plain_only_heart_rate') return v
  throw new ApiError('invalid_response_mode')
}
