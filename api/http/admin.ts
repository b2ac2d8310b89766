// The admin HTTP API under /admin/, used by the operator CLI over loopback.
// Authenticated with the admin token from <data-dir>/admin-token (its digest
// is in the store), compared in constant time. Deny by default.
import type { FastifyReply, FastifyRequest } from 'fastify'
import { Type } from '@sinclair/typebox'
import type { FastifyPluginAsyncTypebox, TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { timingSafeEqual } from 'node:crypto'
import { ApiError } from '../errors.ts'
import { AttemptLimiter } from '../oauth/rate-limit.ts'
import { digest } from '../store/secrets.ts'
import { PREMIUM_PLANS, memberMatches, publicUser } from '../store/users.ts'
import { InvalidRedirectUriError } from '../store/clients.ts'
import { ALL_SCOPES, parseScopes } from '../scopes.ts'
import { Enum, Nullable, Params } from './schema.ts'
import { PASSWORD_MAX, PASSWORD_MIN, addMember, memberAdminRoutes } from './admin-members.ts'
import type { Services } from '../services.ts'

const ADMIN_CLIENT_ID = 'hr-relay-admin'

/** Wrong admin tokens: 10 per address per minute, shared by the admin API and /operator/signin. */
const adminAttempts = new WeakMap<object, AttemptLimiter>()

/** What the admin-token check reads: the digest of the admin token. */
export type AdminUses = Pick<Services, 'adminTokenDigest' | 'config'>

/** The limiter of one service instance (keyed by its ApiConfig object, which every feature of it shares). */
export function adminTokenAttempts (uses: AdminUses): AttemptLimiter {
  let l = adminAttempts.get(uses.config)
  if (l === undefined) { l = new AttemptLimiter(10, 60_000); adminAttempts.set(uses.config, l) }
  return l
}

export function checkAdmin (uses: AdminUses, request: FastifyRequest, reply: FastifyReply): void {
  const header = request.headers.authorization
  if (typeof header !== 'string' || header.length === 0) throw new ApiError('header_missing')
  const m = /^Bearer +(\S+)$/i.exec(header)
  if (m === null || m[1] === undefined) throw new ApiError('header_wrong_format')
  // Every presented token counts until it proves right; at the limit even the right one waits.
  const keys = [`ip:${request.ip}`]
  const limiter = adminTokenAttempts(uses)
  const attempt = limiter.reserve(keys)
  if (attempt === null) {
    reply.header('retry-after', String(limiter.retryAfter(keys)))
    throw new ApiError('rate_limited')
  }
  const given = Buffer.from(digest(m[1]), 'hex')
  const expected = Buffer.from(uses.adminTokenDigest, 'hex')
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw new ApiError('token_not_found')
  attempt.succeeded()
}

const username = Type.String({ minLength: 1, maxLength: 100, pattern: '^[^\\s/\\\\]+$' })
const userParams = Params({ username: Type.String() })

/** What the admin API uses: accounts, clients and tokens (and the admin token's digest). */
export type AdminApiUses = AdminUses & Pick<Services, 'users' | 'clients' | 'tokens'>

export const adminPlugin: FastifyPluginAsyncTypebox<AdminApiUses> = async (app, uses) => {
  const { users, clients, tokens, config } = uses
  await app.register(async scope => {
    const admin = scope.withTypeProvider<TypeBoxTypeProvider>()
    admin.addHook('onRequest', async (request, reply) => { checkAdmin(uses, request, reply) })

    admin.post('/admin/users', {
      schema: {
        body: Type.Object({
          username,
          password: Type.Optional(Type.String({ minLength: PASSWORD_MIN, maxLength: PASSWORD_MAX })),
          invite: Type.Optional(Type.Boolean()),
          premium: Type.Optional(Enum(PREMIUM_PLANS)),
          premium_expires_at: Type.Optional(Nullable('integer')),
          channel: Type.Optional(Type.String({ maxLength: 200 })),
          display_name: Type.Optional(Type.String({ maxLength: 100 })),
          age: Type.Optional(Type.Integer({ minimum: 1, maximum: 130 })),
          weight_kg: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: 500 })),
          sex: Type.Optional(Enum(['male', 'female'])),
          max_heart_rate: Type.Optional(Type.Integer({ minimum: 60, maximum: 260 }))
        }, { additionalProperties: false })
      }
    }, async (request, reply) => {
      // Either a password, or an invitation link (shown once) the member opens to choose one.
      const { user, invitation } = await addMember(uses, request.body)
      return await reply.code(201).header('cache-control', 'no-store').send({ profile_id: user.profile_id, username: user.username, ...invitation })
    })

    admin.get('/admin/users', {
      schema: { querystring: Type.Object({ q: Type.Optional(Type.String({ maxLength: 100 })) }, { additionalProperties: false }) }
    }, async request => ({ users: (await users.list()).filter(u => memberMatches(u, request.query.q ?? '')).map(publicUser) }))

    memberAdminRoutes(scope, uses)

    admin.post('/admin/users/:username/features', {
      schema: { params: userParams, body: Type.Object({ feature_id: Type.String({ minLength: 1, maxLength: 100 }) }, { additionalProperties: false }) }
    }, async request => {
      const { username: name } = request.params
      const user = await users.byUsername(name)
      if (user === undefined) throw new ApiError('not_found', { detail: `no user ${name}` })
      const updated = await users.grantFeature(user.profile_id, request.body.feature_id)
      return { username: name, features: updated?.features ?? [] }
    })

    admin.post('/admin/clients', {
      schema: {
        body: Type.Object({
          name: Type.String({ minLength: 1, maxLength: 200 }),
          redirect_uris: Type.Array(Type.String({ minLength: 1, maxLength: 2000 }), { minItems: 1, maxItems: 20 }),
          public: Type.Optional(Type.Boolean())
        }, { additionalProperties: false })
      }
    }, async (request, reply) => {
      const body = request.body
      try {
        const { client, client_secret: secret } = await clients.create({ name: body.name, redirect_uris: body.redirect_uris, public: body.public === true })
        return await reply.code(201).send({ client_id: client.client_id, client_secret: secret, name: client.name, redirect_uris: client.redirect_uris })
      } catch (err) {
        if (err instanceof InvalidRedirectUriError) throw new ApiError('invalid_request', { detail: err.message })
        throw err
      }
    })

    admin.get('/admin/clients', async () => ({
      clients: (await clients.list()).map(c => ({ client_id: c.client_id, name: c.name, redirect_uris: c.redirect_uris, public: c.secret_hash === null, created_at: c.created_at }))
    }))

    admin.post('/admin/tokens', {
      schema: {
        body: Type.Object({
          username,
          scope: Type.String({ minLength: 1, maxLength: 1000 }),
          expires_in: Type.Optional(Type.Integer({ minimum: 1, maximum: 20 * 365 * 86400 }))
        }, { additionalProperties: false })
      }
    }, async (request, reply) => {
      const body = request.body
      const user = await users.byUsername(body.username)
      if (user === undefined) throw new ApiError('not_found', { detail: `no user ${body.username}` })
      const scopes = parseScopes(body.scope)
      if (scopes === null || scopes.includes('profile:create')) throw new ApiError('invalid_scope', { detail: `scopes must be among: ${ALL_SCOPES.join(' ')} (profile:create is for client credentials only)` })
      const issued = await tokens.issue({ client_id: ADMIN_CLIENT_ID, profile_id: user.profile_id, scopes, flow: 'manual', expires_in: body.expires_in ?? config.lifetimes.manual })
      return await reply.code(201).send({ access_token: issued.access_token, expires_in: issued.expires_in, scope: issued.scope, token_type: 'bearer' })
    })

    admin.delete('/admin/users/:username/clients/:client_id', {
      schema: { params: Params({ username: Type.String(), client_id: Type.String() }) }
    }, async request => {
      const { username: name, client_id: clientId } = request.params
      const user = await users.byUsername(name)
      if (user === undefined) throw new ApiError('not_found', { detail: `no user ${name}` })
      const revoked = await tokens.revokeGrant(user.profile_id, clientId)
      return { username: name, client_id: clientId, revoked }
    })
  })
}
