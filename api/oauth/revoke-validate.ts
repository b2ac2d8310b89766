// POST /oauth2/revoke (RFC 7009 with client authentication; spec 4.1) and GET /api/v1/token/validate
// (spec 2.2; the call existing clients make before every WebSocket connect).
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { authenticate } from '../http/auth.ts'
import type { ClientRecord } from '../store/clients.ts'
import { authenticateClient } from './client-auth.ts'
import type { OAuthContext } from './context.ts'
import { formOf, type FormParams } from './form.ts'

const validateResponse = {
  type: 'object',
  required: ['token', 'client_id', 'expires_in', 'profile_id', 'scopes'],
  additionalProperties: false,
  properties: {
    token: { type: 'string' },
    client_id: { type: 'string' },
    expires_in: { type: 'integer' },
    profile_id: { type: ['string', 'null'] },
    scopes: { type: 'array', items: { type: 'string' } }
  }
}

/**
 * The client making a revocation request (RFC 7009 2.1), authenticated as at
 * the token endpoint: client_secret_basic or client_secret_post for a
 * confidential client, client_id alone for a public one; anything else is
 * 401 invalid_client. null when the request names no client at all (the
 * spec's `token`-only call, spec 4.1).
 */
/** What revocation and validation use of the OAuth context: clients, tokens and the log (no codes, no sessions). */
export type RevokeValidateContext = Pick<OAuthContext, 'clients' | 'tokens' | 'log'>

async function revokingClient (ctx: RevokeValidateContext, request: FastifyRequest, form: FormParams): Promise<ClientRecord | null> {
  const header = request.headers.authorization
  const names = (typeof header === 'string' && header.length > 0) || form.get('client_id') !== undefined || form.get('client_secret') !== undefined
  if (!names) return null
  return (await authenticateClient(ctx.clients, request, form, true)).client
}

/**
 * Whether this request may revoke the token. With a client: only that
 * client's own tokens. Without one: what the token alone already lets its
 * bearer do, so the call adds no power: any access token (the bearer can use
 * it anyway), and a refresh token of a public client (its client_id is not a
 * secret). A confidential client's refresh token (useless without the client
 * secret, and revoking it ends the whole grant) needs that client's authentication.
 */
async function mayRevoke (ctx: RevokeValidateContext, client: ClientRecord | null, owner: { kind: 'access' | 'refresh', client_id: string }): Promise<boolean> {
  if (client !== null) return owner.client_id === client.client_id
  if (owner.kind === 'access') return true
  const issuedTo = await ctx.clients.get(owner.client_id)
  return issuedTo !== undefined && issuedTo.secret_hash === null
}

export function revokeValidateRoutes (app: FastifyInstance, ctx: RevokeValidateContext): void {
  app.post('/oauth2/revoke', async (request, reply) => {
    const form = formOf(request)
    const token = form.need('token')
    const client = await revokingClient(ctx, request, form)
    const owner = await ctx.tokens.owner(token)
    // RFC 7009 2.2: 200 whether or not the token was known or revoked (no oracle for valid
    // tokens); a token of another client is left alone (2.1).
    if (owner !== undefined) {
      if (await mayRevoke(ctx, client, owner)) {
        if (await ctx.tokens.revoke(token)) ctx.log.info({ client_id: owner.client_id, kind: owner.kind }, 'token revoked')
      } else {
        ctx.log.info({ client_id: client?.client_id ?? null, owner: owner.client_id, kind: owner.kind }, 'revocation refused: not this client\'s token')
      }
    }
    return await reply.code(200).headers({ 'cache-control': 'no-store', pragma: 'no-cache' }).send({})
  })

  app.get('/api/v1/token/validate', { schema: { response: { 200: validateResponse } } }, async (request, reply) => {
    const auth = await authenticate(ctx.tokens, request)
    const r = auth.record
    return await reply.header('cache-control', 'no-store').send({
      token: auth.token,
      client_id: r.client_id,
      expires_in: Math.max(0, Math.floor((r.expires_at - Date.now()) / 1000)),
      profile_id: r.profile_id,
      scopes: r.scopes
    })
  })
}
