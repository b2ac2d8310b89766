// GET /api/v1/data/heart_rate/latest in front of the router: the request OBS
// widgets and apps repeat every second, answered from memory without
// Fastify's per-request work (routing, hooks, schema, reply), which costs
// more than the answer itself. Only the plain case is taken: no query string,
// no body, a Bearer token that the token cache knows as live with the read
// scope, a reading in the latest-reading cache, and the token within its rate
// limit. Everything else (a token or reading not cached yet, an expired or
// unknown token, a missing scope, a query, the limit reached) goes on to the
// route in data.ts, which checks it the long way and answers. Both give the
// same bytes: the same headers in the same order, and the same counter for the
// rate limit (test/api/http/latest-lane.test.ts compares them).
import type { FastLane } from './types.ts'
import { bearerToken } from './auth.ts'
import { tokenLimitOf, type GuardUses } from './data-auth.ts'
import type { Services } from '../services.ts'

export const LATEST_PATH = '/api/v1/data/heart_rate/latest'
const SCOPE = 'data:heart_rate:read'
const JSON_TYPE = 'application/json; charset=utf-8'

export function latestLane (uses: GuardUses & Pick<Services, 'readings'>): FastLane {
  const { tokens, readings } = uses
  const limit = tokenLimitOf(uses.config)
  return (request, response) => {
    if (request.url !== LATEST_PATH || request.method !== 'GET') return false
    const h = request.headers
    if (h['content-length'] !== undefined || h['transfer-encoding'] !== undefined) return false
    const token = h.authorization === undefined ? undefined : bearerToken(h.authorization)
    if (token === undefined) return false
    const now = Date.now()
    const found = tokens.cachedLookup(token, now)
    if (found === undefined || !found.ok) return false
    const { profile_id: profile, scopes } = found.token
    if (profile === null || !scopes.includes(SCOPE)) return false
    const latest = readings.cachedLatest(profile)
    if (latest === undefined || latest === null) return false
    // Counted only when answered here; past the limit, the route counts it and answers 429.
    const state = limit === null ? null : limit.takeIfAllowed(found.digest, now)
    if (state === undefined) return false
    // JSON of two finite numbers (the reading contract): String(n) is their JSON form.
    const body = `{"measured_at":${latest.measured_at},"data":{"heart_rate":${latest.heart_rate}}}`
    const length = String(body.length) // ASCII
    // The route's headers, in the order Fastify writes them: the guard's, the reply's, the onSend hook's.
    // As a flat list of strings: Node takes it without building and walking a headers object.
    response.writeHead(200, state === null
      ? ['content-type', JSON_TYPE, 'x-content-type-options', 'nosniff', 'content-length', length]
      : [
          'ratelimit-limit', String(state.limit), 'ratelimit-remaining', String(state.remaining), 'ratelimit-reset', String(state.resetS),
          'content-type', JSON_TYPE, 'x-content-type-options', 'nosniff', 'content-length', length
        ])
    response.end(body)
    return true
  }
}
