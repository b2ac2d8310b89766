// POST /oauth2/token (spec 4.1, RFC 6749 section 4, RFC 8628 3.4-3.5).
// One handler per grant type. Code consumption and device-session changes run
// under a per-key lock and are written atomically together with the tokens they
// issue, by the code store (codes.ts), which refuses a code used meanwhile.
import { createHash } from 'node:crypto'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { OAuthError } from '../errors.ts'
import { parseScopes } from '../scopes.ts'
import type { WriteOp } from '../store/types.ts'
import { digest, safeEqual } from '../store/secrets.ts'
import type { IssuedTokens } from '../store/tokens.ts'
import { authenticateClient } from './client-auth.ts'
import type { CodeRecord } from './codes.ts'
import type { OAuthContext } from './context.ts'
import { formOf, type FormParams } from './form.ts'

export const DEVICE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code'

type Grant = (ctx: OAuthContext, request: FastifyRequest, form: FormParams) => Promise<IssuedTokens>

const VERIFIER_RE = /^[A-Za-z0-9._~-]{43,128}$/

function invalidGrant (description: string): OAuthError {
  return new OAuthError('invalid_grant', description)
}

/** RFC 7636 4.6: BASE64URL(SHA256(code_verifier)) == code_challenge. */
function pkceOk (challenge: string | null, verifier: string | undefined): void {
  if (challenge === null) {
    // A verifier for a code that was requested without a challenge is a downgrade attempt (RFC 9700 2.1.1).
    if (verifier !== undefined) throw invalidGrant('code_verifier given, but the authorization request had no code_challenge')
    return
  }
  if (verifier === undefined || verifier === '') throw invalidGrant('code_verifier is missing')
  if (!VERIFIER_RE.test(verifier)) throw invalidGrant('code_verifier must be 43-128 characters of [A-Za-z0-9._~-]')
  const computed = createHash('sha256').update(verifier, 'ascii').digest('base64url')
  if (!safeEqual(computed, challenge)) throw invalidGrant('code_verifier does not match the code_challenge')
}

async function reused (ctx: OAuthContext, rec: CodeRecord): Promise<never> {
  const n = await ctx.tokens.revokeFamily(rec.family)
  ctx.log.warn({ client_id: rec.client_id, profile_id: rec.profile_id, revoked: n }, 'authorization code reused; tokens of this grant revoked')
  throw invalidGrant('authorization code was already used')
}

const authorizationCode: Grant = async (ctx, request, form) => {
  const code = form.need('code')
  const redirectUri = form.need('redirect_uri')
  const verifier = form.get('code_verifier')
  const { client } = await authenticateClient(ctx.clients, request, form, true)
  const key = digest(code)
  return await ctx.state.lock.run(`code:${key}`, async () => {
    const rec = await ctx.state.getCode(key)
    const now = Date.now()
    if (rec === undefined) throw invalidGrant('unknown authorization code')
    // RFC 6749 4.1.2: a second use revokes every token issued from the code.
    if (rec.used_at !== null) return await reused(ctx, rec)
    if (rec.expires_at <= now) throw invalidGrant('authorization code has expired')
    if (rec.client_id !== client.client_id) throw invalidGrant('authorization code was issued to another client')
    if (rec.redirect_uri !== redirectUri) throw invalidGrant('redirect_uri does not match the authorization request')
    pkceOk(rec.code_challenge, verifier)
    const lifetimes = ctx.config.lifetimes
    const ops: WriteOp[] = []
    const issued = ctx.tokens.prepare({ client_id: rec.client_id, profile_id: rec.profile_id, scopes: rec.scopes, flow: 'authorization_code', expires_in: lifetimes.authorization_code, refresh_expires_in: lifetimes.refresh_token, family: rec.family }, ops, now)
    // Used meanwhile by another instance sharing the store: that exchange's tokens are revoked like any reuse's.
    if (!await ctx.state.redeemCode(key, rec, ops, now)) return await reused(ctx, rec)
    ctx.log.info({ client_id: rec.client_id, profile_id: rec.profile_id }, 'authorization code exchanged')
    return issued
  })
}

const refreshToken: Grant = async (ctx, request, form) => {
  const refresh = form.need('refresh_token')
  const scopeText = form.get('scope')
  // RFC 6749 6: a scope may be given; hr-relay keeps the granted scope (the response's `scope` says which).
  if (scopeText !== undefined && parseScopes(scopeText) === null) throw new OAuthError('invalid_scope', 'unknown scope requested')
  const { client } = await authenticateClient(ctx.clients, request, form, true)
  const lifetimes = ctx.config.lifetimes
  const result = await ctx.state.lock.run(`refresh:${digest(refresh)}`, async () =>
    await ctx.tokens.rotate(refresh, client.client_id, lifetimes.authorization_code, lifetimes.refresh_token))
  if (!result.ok) {
    if (result.reason === 'replayed') {
      ctx.log.warn({ client_id: client.client_id }, 'refresh token replayed; token family revoked')
      throw invalidGrant('refresh token was already used; every token of this grant is revoked')
    }
    throw invalidGrant(result.reason === 'expired' ? 'refresh token has expired' : 'unknown refresh token')
  }
  return result.issued
}

const clientCredentials: Grant = async (ctx, request, form) => {
  const scopeText = form.get('scope')
  const { client, authenticated } = await authenticateClient(ctx.clients, request, form, true)
  if (!authenticated) throw new OAuthError('unauthorized_client', 'public clients cannot use the client credentials grant')
  const scopes = scopeText === undefined || scopeText === '' ? ['profile:create'] : parseScopes(scopeText)
  if (scopes === null || scopes.some(s => s !== 'profile:create')) throw new OAuthError('invalid_scope', 'only profile:create is available to the client credentials grant')
  const issued = await ctx.tokens.issue({ client_id: client.client_id, profile_id: null, scopes, flow: 'client_credentials', expires_in: ctx.config.lifetimes.client_credentials })
  ctx.log.info({ client_id: client.client_id }, 'client credentials token issued')
  return issued
}

const deviceCode: Grant = async (ctx, request, form) => {
  const deviceCodeText = form.need('device_code')
  const { client } = await authenticateClient(ctx.clients, request, form, false)
  const key = digest(deviceCodeText)
  return await ctx.state.lock.run(`device:${key}`, async () => {
    const rec = await ctx.state.getDevice(key)
    const now = Date.now()
    if (rec === undefined || rec.client_id !== client.client_id) throw invalidGrant('unknown device_code')
    // Spec 3.1, row by row.
    if (rec.status === 'issued') throw invalidGrant('access token already issued')
    if (rec.status === 'denied') throw invalidGrant("user didn't grant access")
    if (rec.expires_at <= now) throw new OAuthError('expired_token', 'the device authorization session has expired')
    if (rec.status === 'pending') {
      const tooSoon = rec.last_poll_at !== null && now - rec.last_poll_at < rec.interval * 1000
      if (tooSoon) {
        // RFC 8628 3.5: slow_down, and the interval grows by 5 seconds for this and later requests.
        await ctx.state.updateDevice(key, rec, { ...rec, interval: rec.interval + 5, last_poll_at: now })
        throw new OAuthError('slow_down', `polling too fast; wait ${rec.interval + 5} seconds between requests`)
      }
      await ctx.state.updateDevice(key, rec, { ...rec, last_poll_at: now }, { sync: false })
      throw new OAuthError('authorization_pending', null)
    }
    // approved → issued
    if (rec.profile_id === null) throw invalidGrant('unknown device_code')
    const ops: WriteOp[] = []
    const issued = ctx.tokens.prepare({ client_id: rec.client_id, profile_id: rec.profile_id, scopes: rec.scopes, flow: 'device_code', expires_in: ctx.config.lifetimes.device_code }, ops, now)
    // Issued meanwhile by another instance sharing the store: one token per session.
    if (!await ctx.state.updateDevice(key, rec, { ...rec, status: 'issued', last_poll_at: now }, { ops })) throw invalidGrant('access token already issued')
    ctx.log.info({ client_id: rec.client_id, profile_id: rec.profile_id }, 'device flow token issued')
    return issued
  })
}

export const GRANTS: Record<string, Grant> = {
  authorization_code: authorizationCode,
  refresh_token: refreshToken,
  client_credentials: clientCredentials,
  [DEVICE_GRANT]: deviceCode
}

const tokenResponse = {
  type: 'object',
  required: ['access_token', 'token_type', 'expires_in', 'scope'],
  properties: {
    access_token: { type: 'string' },
    token_type: { type: 'string' },
    expires_in: { type: 'integer' },
    scope: { type: 'string' },
    refresh_token: { type: 'string' }
  }
}

export async function sendTokens (reply: FastifyReply, issued: IssuedTokens): Promise<FastifyReply> {
  const body: Record<string, string | number> = { access_token: issued.access_token, token_type: 'bearer', expires_in: issued.expires_in, scope: issued.scope }
  if (issued.refresh_token !== undefined) body.refresh_token = issued.refresh_token
  return await reply.code(200).headers({ 'cache-control': 'no-store', pragma: 'no-cache' }).send(body)
}

export function tokenRoutes (app: FastifyInstance, ctx: OAuthContext): void {
  app.post('/oauth2/token', { schema: { response: { 200: tokenResponse } } }, async (request, reply) => {
    const form = formOf(request)
    const grantType = form.need('grant_type')
    const grant = Object.hasOwn(GRANTS, grantType) ? GRANTS[grantType] : undefined
    if (grant === undefined) throw new OAuthError('unsupported_grant_type', `grant_type ${grantType} is not supported`)
    return await sendTokens(reply, await grant(ctx, request, form))
  })
}
