// Authentication and the per-token rate limit for the data API's routes.
// `guard(...)` is used as the route's onRequest hook, so a request is
// authenticated before its body is parsed (deny by default), and a WebSocket
// upgrade is refused with the HTTP error instead of being upgraded.
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { ApiError } from '../errors.ts'
import { authenticate, type AuthOptions } from './auth.ts'

/** Fixed one-second windows per token digest (service-notes "Rate limit"). */
export class RateLimiter {
  private window = -1
  private counts = new Map<string, number>()

  /** True when the request is allowed. */
  take (key: string, perSecond: number, now = Date.now()): boolean {
    if (perSecond <= 0) return true
    const w = Math.floor(now / 1000)
    if (w !== this.window) { this.window = w; this.counts = new Map() }
    const n = (this.counts.get(key) ?? 0) + 1
    this.counts.set(key, n)
    return n <= perSecond
  }
}

/** One limiter per service instance (keyed by its Services object). */
const limiters = new WeakMap<object, RateLimiter>()

function limiterOf (app: FastifyInstance): RateLimiter {
  let l = limiters.get(app.hr)
  if (l === undefined) { l = new RateLimiter(); limiters.set(app.hr, l) }
  return l
}

/** Authenticates (user tokens only) and applies the rate limit; throws ApiError. */
export async function guardRequest (app: FastifyInstance, request: FastifyRequest, options: AuthOptions): Promise<string> {
  const ctx = await authenticate(app, request, { user: true, ...options })
  if (!limiterOf(app).take(ctx.digest, app.hr.config.rateLimitPerSecond)) throw new ApiError('rate_limited')
  const profile = ctx.record.profile_id
  if (profile === null) throw new ApiError('invalid_scope')
  return profile
}

export function guard (app: FastifyInstance, options: AuthOptions) {
  return async (request: FastifyRequest): Promise<void> => { await guardRequest(app, request, options) }
}

/** Response modes of the latest endpoint and the real-time stream (spec 4.2). */
export type ResponseMode = 'json' | 'text_plain_only_heart_rate'

export function responseMode (request: FastifyRequest): ResponseMode {
  const v = (request.query as Record<string, unknown> | undefined)?.response_mode
  if (v === undefined || v === 'json') return 'json'
  if (v === 'text_plain_only_heart_rate') return v
  throw new ApiError('invalid_response_mode')
}
