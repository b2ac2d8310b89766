// POST /oauth2/revoke (RFC 7009; spec 4.1) and GET /api/v1/token/validate
// (spec 2.2; the call existing clients make before every WebSocket connect).
import type { FastifyInstance } from 'fastify'
import { authenticate } from '../http/auth.ts'
import type { OAuthContext } from './context.ts'
import { formOf } from './form.ts'

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

export function revokeValidateRoutes (app: FastifyInstance, ctx: OAuthContext): void {
  app.post('/oauth2/revoke', async (request, reply) => {
    const form = formOf(request)
    const token = form.need('token')
    // RFC 7009 2.2: 200 whether or not the token was known (no oracle for valid tokens).
    const revoked = await ctx.app.hr.tokens.revoke(token)
    if (revoked) ctx.log.info('token revoked')
    return await reply.code(200).headers({ 'cache-control': 'no-store', pragma: 'no-cache' }).send({})
  })

  app.get('/api/v1/token/validate', { schema: { response: { 200: validateResponse } } }, async (request, reply) => {
    const auth = await authenticate(ctx.app, request)
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
