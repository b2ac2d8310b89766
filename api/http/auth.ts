// Authentication of API calls (spec section 5): a Bearer token in the
// Authorization header, or for WebSocket and the write endpoint also the
// `access_token` query parameter.
import type { FastifyRequest } from 'fastify'
import { ApiError, type ApiErrorName } from '../errors.ts'
import type { AccessLookup, AccessTokenRecord } from '../store/tokens.ts'
import type { Services } from '../services.ts'

/** What authentication reads: the token store. */
export type AuthTokens = Services['tokens']

export interface AuthContext {
  token: string
  digest: string
  record: AccessTokenRecord
}

export interface AuthOptions {
  /** Scope the endpoint requires (all of them when several are given). */
  scope?: string | string[]
  /** Accept the `access_token` query parameter too (spec 5.2). */
  query?: boolean
  /** How a missing scope is answered; default 7011 / 400 (spec 7). */
  scopeError?: { name: ApiErrorName, status?: number }
  /** Require a user token (profile_id not null). */
  user?: boolean
}

const BEARER = /^Bearer +([^\s]+) *$/i

/** The token of an `Authorization: Bearer <token>` header; undefined when the header has another form. */
export function bearerToken (header: string): string | undefined {
  return BEARER.exec(header)?.[1]
}

/** Extracts the token string or throws 7009 / 7010. */
export function tokenFrom (request: FastifyRequest, allowQuery: boolean): string {
  const header = request.headers.authorization
  if (typeof header === 'string' && header.length > 0) {
    const token = bearerToken(header)
    if (token === undefined) throw new ApiError('header_wrong_format')
    return token
  }
  if (allowQuery) {
    // Read in onRequest, before the querystring schema has validated anything: narrowed here, not assumed.
    const q = (request.query as Record<string, unknown> | undefined)?.access_token
    if (typeof q === 'string' && q.length > 0) return q
    if (Array.isArray(q)) throw new ApiError('header_wrong_format')
  }
  throw new ApiError('header_missing')
}

/**
 * What a token store lookup of `token` means for this request: the context (also set as request.auth), or the
 * error its absence, expiry or scopes call for (thrown).
 */
export function authorize (request: FastifyRequest, token: string, found: AccessLookup, options: AuthOptions = {}): AuthContext {
  if (!found.ok) throw new ApiError(found.reason === 'expired' ? 'token_expired' : 'token_not_found')
  const needed = options.scope === undefined ? [] : Array.isArray(options.scope) ? options.scope : [options.scope]
  for (const s of needed) {
    if (!found.token.scopes.includes(s)) {
      const e = options.scopeError ?? { name: 'invalid_scope' as const }
      throw new ApiError(e.name, e.status === undefined ? {} : { status: e.status })
    }
  }
  if (options.user === true && found.token.profile_id === null) throw new ApiError('invalid_scope')
  const ctx: AuthContext = { token, digest: found.digest, record: found.token }
  request.auth = ctx
  return ctx
}

export async function authenticate (tokens: AuthTokens, request: FastifyRequest, options: AuthOptions = {}): Promise<AuthContext> {
  const token = tokenFrom(request, options.query === true)
  return authorize(request, token, await tokens.lookup(token), options)
}

/**
 * `authenticate` answered from the token store's cache, without a promise: undefined when the token is not
 * cached (then only `authenticate` can tell). Throws as `authenticate` rejects.
 */
export function authenticateCached (tokens: AuthTokens, request: FastifyRequest, options: AuthOptions = {}): AuthContext | undefined {
  const token = tokenFrom(request, options.query === true)
  const found = tokens.cachedLookup(token)
  return found === undefined ? undefined : authorize(request, token, found, options)
}

/** A preHandler that authenticates with the given options. */
export function requireAuth (tokens: AuthTokens, options: AuthOptions) {
  return async (request: FastifyRequest): Promise<void> => { await authenticate(tokens, request, options) }
}

/** The profile id of an authenticated user request (after requireAuth with user: true). */
export function profileOf (request: FastifyRequest): string {
  const id = request.auth?.record.profile_id
  if (id === undefined || id === null) throw new ApiError('invalid_scope')
  return id
}
