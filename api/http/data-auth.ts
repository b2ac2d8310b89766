// Authentication and the per-token rate limit for the data API's routes.
// `guard(...)` is used as the route's onRequest hook, so a request is
// authenticated before its body is parsed (deny by default), and a WebSocket
// upgrade is refused with the HTTP error instead of being upgraded. The
// latest-reading route, which has no hooks, calls `guardNow` first thing in
// its handler.
import type { FastifyReply, FastifyRequest } from 'fastify'
import { TokenRateLimit } from './token-limit.ts'
import { ApiError } from '../errors.ts'
import { authenticate, authenticateCached, type AuthContext, type AuthOptions } from './auth.ts'
import type { Services } from '../services.ts'

/** What the guard reads: the token store, and the rate limit from the API configuration. */
export type GuardUses = Pick<Services, 'tokens' | 'config'>

/** One per-token limiter per service instance (keyed by its ApiConfig object); null when turned off. */
const limiters = new WeakMap<object, TokenRateLimit | null>()

/** The per-token limit of this service (config http.rate_limit_per_second); null when turned off. */
export function tokenLimitOf (config: GuardUses['config']): TokenRateLimit | null {
  let l = limiters.get(config)
  if (l === undefined) {
    const max: number = config.rateLimitPerSecond
    l = max > 0 ? new TokenRateLimit(max) : null
    limiters.set(config, l)
  }
  return l
}

/** Counts the request against its token's limit, sets the RateLimit-* headers, and throws 429 past the limit. */
function applyLimit (limit: TokenRateLimit, digest: string, reply: FastifyReply): void {
  const state = limit.take(digest)
  reply.header('ratelimit-limit', state.limit)
  reply.header('ratelimit-remaining', state.remaining)
  reply.header('ratelimit-reset', state.resetS)
  if (!state.ok) {
    reply.header('retry-after', state.resetS)
    throw new ApiError('rate_limited')
  }
}

/** The rate limit and the user of an authenticated request: the profile id, or throws ApiError. */
function admit (uses: GuardUses, ctx: AuthContext, reply: FastifyReply): string {
  const limit = tokenLimitOf(uses.config)
  if (limit !== null) applyLimit(limit, ctx.digest, reply)
  const profile = ctx.record.profile_id
  if (profile === null) throw new ApiError('invalid_scope')
  return profile
}

/** Authenticates (user tokens only) and applies the rate limit; throws ApiError. */
export async function guardRequest (uses: GuardUses, request: FastifyRequest, reply: FastifyReply, options: AuthOptions): Promise<string> {
  return admit(uses, await authenticate(uses.tokens, request, { user: true, ...options }), reply)
}

/**
 * guardRequest without a promise when the token is in the token store's cache (a client that polls): the
 * profile id at once, else a promise of it. Throws ApiError, or the promise rejects with it.
 */
export function guardNow (uses: GuardUses, request: FastifyRequest, reply: FastifyReply, options: AuthOptions): string | Promise<string> {
  const ctx = authenticateCached(uses.tokens, request, { user: true, ...options })
  return ctx === undefined ? guardRequest(uses, request, reply, options) : admit(uses, ctx, reply)
}

export function guard (uses: GuardUses, options: AuthOptions) {
  return async (request: FastifyRequest, reply: FastifyReply): Promise<void> => { await guardRequest(uses, request, reply, options) }
}

/** Response modes of the latest endpoint and the real-time stream (spec 4.2). */
export type ResponseMode = 'json' | 'text_plain_only_heart_rate'

/** Also called in onRequest hooks, before the querystring is validated: `v` is whatever was given. */
export function responseMode (v: unknown): ResponseMode {
  if (v === undefined || v === 'json') return 'json'
  if (v === 'text_plain_only_heart_rate') return v
  throw new ApiError('invalid_response_mode')
}
