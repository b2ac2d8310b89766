// The admin HTTP API under /admin/, used by the operator CLI over loopback.
// Authenticated with the admin token from <data-dir>/admin-token (its digest
// is in the store), compared in constant time. Deny by default.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { timingSafeEqual } from 'node:crypto'
import { ApiError } from '../errors.ts'
import { AttemptLimiter } from '../oauth/rate-limit.ts'
import { digest } from '../store/secrets.ts'
import { PREMIUM_PLANS, UserExistsError, publicUser } from '../store/users.ts'
import { InvalidRedirectUriError } from '../store/clients.ts'
import { ALL_SCOPES, parseScopes } from '../scopes.ts'

const ADMIN_CLIENT_ID = 'hr-relay-admin'

/** Wrong admin tokens: 10 per address per minute, shared by the admin API and /operator/signin. */
const adminAttempts = new WeakMap<object, AttemptLimiter>()

export function adminTokenAttempts (app: FastifyInstance): AttemptLimiter {
  let l = adminAttempts.get(app.hr)
  if (l === undefined) { l = new AttemptLimiter(10, 60_000); adminAttempts.set(app.hr, l) }
  return l
}

export function checkAdmin (app: FastifyInstance, request: FastifyRequest, reply: FastifyReply): void {
  const header = request.headers.authorization
  if (typeof header !== 'string' || header.length === 0) throw new ApiError('header_missing')
  const m = /^Bearer +(\S+)$/i.exec(header)
  if (m === null || m[1] === undefined) throw new ApiError('header_wrong_format')
  // Every presented token counts until it proves right; at the limit even the right one waits.
  const keys = [`ip:${request.ip}`]
  const limiter = adminTokenAttempts(app)
  const attempt = limiter.reserve(keys)
  if (attempt === null) {
    reply.header('retry-after', String(limiter.retryAfter(keys)))
    throw new ApiError('rate_limited')
  }
  const given = Buffer.from(digest(m[1]), 'hex')
  const expected = Buffer.from(app.hr.adminTokenDigest, 'hex')
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw new ApiError('token_not_found')
  attempt.succeeded()
}

const username = { type: 'string', minLength: 1, maxLength: 100, pattern: '^[^\\s/\\\\]+$' }

export async function adminPlugin (app: FastifyInstance): Promise<void> {
  await app.register(async admin => {
    admin.addHook('onRequest', async (request, reply) => { checkAdmin(app, request, reply) })

    admin.post('/admin/users', {
      schema: {
        body: {
          type: 'object',
          required: ['username', 'password'],
          additionalProperties: false,
          properties: {
            username,
            password: { type: 'string', minLength: 8, maxLength: 1024 },
            premium: { enum: PREMIUM_PLANS },
            premium_expires_at: { type: ['integer', 'null'] },
            channel: { type: 'string', maxLength: 200 },
            display_name: { type: 'string', maxLength: 100 },
            age: { type: 'integer', minimum: 1, maximum: 130 },
            weight_kg: { type: 'number', exclusiveMinimum: 0, maximum: 500 },
            sex: { enum: ['male', 'female'] },
            max_heart_rate: { type: 'integer', minimum: 60, maximum: 260 }
          }
        }
      }
    }, async (request, reply) => {
      try {
        const user = await app.hr.users.create(request.body as any)
        return await reply.code(201).send({ profile_id: user.profile_id, username: user.username })
      } catch (err) {
        if (err instanceof UserExistsError) throw new ApiError('conflict', { detail: err.message })
        throw err
      }
    })

    admin.get('/admin/users', async () => ({ users: (await app.hr.users.list()).map(publicUser) }))

    admin.post('/admin/users/:username/features', {
      schema: { body: { type: 'object', required: ['feature_id'], additionalProperties: false, properties: { feature_id: { type: 'string', minLength: 1, maxLength: 100 } } } }
    }, async request => {
      const { username: name } = request.params as { username: string }
      const user = await app.hr.users.byUsername(name)
      if (user === undefined) throw new ApiError('not_found', { detail: `no user ${name}` })
      const updated = await app.hr.users.grantFeature(user.profile_id, (request.body as { feature_id: string }).feature_id)
      return { username: name, features: updated?.features ?? [] }
    })

    admin.post('/admin/clients', {
      schema: {
        body: {
          type: 'object',
          required: ['name', 'redirect_uris'],
          additionalProperties: false,
          properties: {
            name: { type: 'string', minLength: 1, maxLength: 200 },
            redirect_uris: { type: 'array', minItems: 1, maxItems: 20, items: { type: 'string', minLength: 1, maxLength: 2000 } },
            public: { type: 'boolean' }
          }
        }
      }
    }, async (request, reply) => {
      const body = request.body as { name: string, redirect_uris: string[], public?: boolean }
      try {
        const { client, client_secret: secret } = await app.hr.clients.create({ name: body.name, redirect_uris: body.redirect_uris, public: body.public === true })
        return await reply.code(201).send({ client_id: client.client_id, client_secret: secret, name: client.name, redirect_uris: client.redirect_uris })
      } catch (err) {
        if (err instanceof InvalidRedirectUriError) throw new ApiError('invalid_request', { detail: err.message })
        throw err
      }
    })

    admin.get('/admin/clients', async () => ({
      clients: (await app.hr.clients.list()).map(c => ({ client_id: c.client_id, name: c.name, redirect_uris: c.redirect_uris, public: c.secret_hash === null, created_at: c.created_at }))
    }))

    admin.post('/admin/tokens', {
      schema: {
        body: {
          type: 'object',
          required: ['username', 'scope'],
          additionalProperties: false,
          properties: {
            username,
            scope: { type: 'string', minLength: 1, maxLength: 1000 },
            expires_in: { type: 'integer', minimum: 1, maximum: 20 * 365 * 86400 }
          }
        }
      }
    }, async (request, reply) => {
      const body = request.body as { username: string, scope: string, expires_in?: number }
      const user = await app.hr.users.byUsername(body.username)
      if (user === undefined) throw new ApiError('not_found', { detail: `no user ${body.username}` })
      const scopes = parseScopes(body.scope)
      if (scopes === null || scopes.includes('profile:create')) throw new ApiError('invalid_scope', { detail: `scopes must be among: ${ALL_SCOPES.join(' ')} (profile:create is for client credentials only)` })
      const issued = await app.hr.tokens.issue({ client_id: ADMIN_CLIENT_ID, profile_id: user.profile_id, scopes, flow: 'manual', expires_in: body.expires_in ?? app.hr.config.lifetimes.manual })
      return await reply.code(201).send({ access_token: issued.access_token, expires_in: issued.expires_in, scope: issued.scope, token_type: 'bearer' })
    })

    admin.delete('/admin/users/:username/clients/:client_id', async request => {
      const { username: name, client_id: clientId } = request.params as { username: string, client_id: string }
      const user = await app.hr.users.byUsername(name)
      if (user === undefined) throw new ApiError('not_found', { detail: `no user ${name}` })
      const revoked = await app.hr.tokens.revokeGrant(user.profile_id, clientId)
      return { username: name, client_id: clientId, revoked }
    })
  })
}
