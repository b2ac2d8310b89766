// The device authorization flow (spec 2.8, 3.1; RFC 8628): the session
// endpoint, and the /device pages where a signed-in user enters the user
// code and allows or denies. Wrong codes are rate-limited per session and per
// address (RFC 8628 5.1: user codes are short and guessable).
import type { FastifyInstance } from 'fastify'
import { OAuthError } from '../errors.ts'
import { parseScopes } from '../scopes.ts'
import { authenticateClient } from './client-auth.ts'
import { formatUserCode, normalizeUserCode, type DeviceRecord } from './codes.ts'
import { csrfOk, pageForm, signedIn, type OAuthContext } from './context.ts'
import { formOf, queryOf } from './form.ts'
import { consentBody, deviceBody, errorPage, esc, sendPage } from './pages.ts'

const deviceResponse = {
  type: 'object',
  required: ['device_code', 'user_code', 'verification_uri', 'verification_uri_complete', 'expires_in', 'interval'],
  properties: {
    device_code: { type: 'string' },
    user_code: { type: 'string' },
    verification_uri: { type: 'string' },
    verification_uri_complete: { type: 'string' },
    expires_in: { type: 'integer' },
    interval: { type: 'integer' }
  }
}

function live (rec: DeviceRecord, now = Date.now()): boolean {
  return rec.status === 'pending' && rec.expires_at > now
}

export function deviceRoutes (app: FastifyInstance, ctx: OAuthContext): void {
  app.post('/oauth2/device_authorization', { schema: { response: { 200: deviceResponse } } }, async (request, reply) => {
    const form = formOf(request)
    const scopeText = form.need('scope')
    const { client } = await authenticateClient(ctx.clients, request, form, false)
    const scopes = parseScopes(scopeText)
    if (scopes === null) throw new OAuthError('invalid_scope', 'unknown scope requested')
    if (scopes.includes('profile:create')) throw new OAuthError('invalid_scope', 'profile:create is only available to the client credentials grant')
    const { device_session: ttl, device_interval: interval } = ctx.config.lifetimes
    const { device_code: deviceCode, user_code: userCode } = await ctx.state.createDevice({ client_id: client.client_id, scopes }, ttl, interval)
    const shown = formatUserCode(userCode)
    const base = `${ctx.config.publicUrl.replace(/\/+$/, '')}/device`
    ctx.log.info({ client_id: client.client_id }, 'device authorization session started')
    return await reply.headers({ 'cache-control': 'no-store', pragma: 'no-cache' }).send({
      device_code: deviceCode,
      user_code: shown,
      verification_uri: base,
      verification_uri_complete: `${base}?user_code=${encodeURIComponent(shown)}`,
      expires_in: ttl,
      interval
    })
  })

  app.get('/device', async (request, reply) => {
    const who = await signedIn(ctx, request, reply, request.raw.url ?? '/device')
    if (who === null) return reply
    let given: string | undefined
    try { given = queryOf(request).get('user_code') } catch { given = undefined }
    const code = normalizeUserCode(given ?? '')
    return await sendPage(reply, 200, 'Connect a device', deviceBody(who.session.csrf, code === null ? '' : formatUserCode(code)))
  })

  app.post('/device', async (request, reply) => {
    const form = await pageForm(request, reply)
    if (form === null) return reply
    if (!await csrfOk(ctx, request, reply, form)) return reply
    const who = await signedIn(ctx, request, reply, '/device')
    if (who === null) return reply
    const keys = [`session:${who.session.key}`, `ip:${request.ip}`]
    // Reserved before the store lookup, so a parallel burst of guesses is counted too.
    const attempt = await ctx.deviceAttempts.reserve(keys)
    if (attempt === null) {
      reply.header('retry-after', String(await ctx.deviceAttempts.retryAfter(keys)))
      return await errorPage(reply, 429, 'Too many attempts', 'Too many wrong codes. Wait a minute, then enter the code shown on your device again.')
    }
    const values = form.all('user_code')
    const code = values.length === 1 ? normalizeUserCode(values[0] ?? '') : null
    const found = code === null ? undefined : await ctx.state.deviceByUserCode(code)
    const client = found === undefined || !live(found.rec) ? undefined : await ctx.clients.get(found.rec.client_id)
    if (code === null || found === undefined || client === undefined) {
      return await sendPage(reply, 400, 'Connect a device', deviceBody(who.session.csrf, '', 'That code is not valid or has expired. Check the code on your device.'))
    }
    attempt.succeeded()
    const extra = `<p>Code on your device: <strong>${esc(formatUserCode(code))}</strong>. Allow only if it matches.</p>`
    return await sendPage(reply, 200, 'Allow access?', consentBody(client.name, found.rec.scopes, '/device/decision', who.session.csrf, { user_code: code }, extra))
  })

  app.post('/device/decision', async (request, reply) => {
    const form = await pageForm(request, reply)
    if (form === null) return reply
    if (!await csrfOk(ctx, request, reply, form)) return reply
    const who = await signedIn(ctx, request, reply, '/device')
    if (who === null) return reply
    let code: string | null, decision: string | undefined
    try {
      code = normalizeUserCode(form.get('user_code') ?? '')
      decision = form.get('decision')
    } catch {
      return await errorPage(reply, 400, 'Bad request', 'A field of the form was given more than once.')
    }
    const found = code === null ? undefined : await ctx.state.deviceByUserCode(code)
    if (found === undefined) return await errorPage(reply, 400, 'Code not valid', 'That code is not valid or has expired.')
    const outcome = await ctx.state.lock.run(`device:${found.key}`, async () => {
      const rec = await ctx.state.getDevice(found.key)
      if (rec === undefined || !live(rec)) return 'gone' as const
      const next: DeviceRecord = decision === 'allow'
        ? { ...rec, status: 'approved', profile_id: who.user.profile_id }
        : { ...rec, status: 'denied', profile_id: who.user.profile_id }
      // Decided meanwhile by another instance sharing the store: the code no longer works.
      if (!await ctx.state.updateDevice(found.key, rec, next, { release: true })) return 'gone' as const
      return next.status
    })
    if (outcome === 'gone') return await errorPage(reply, 400, 'Code not valid', 'That code is not valid or has expired.')
    ctx.log.info({ client_id: found.rec.client_id, profile_id: who.user.profile_id, outcome }, 'device authorization decided')
    if (outcome === 'approved') return await sendPage(reply, 200, 'Device connected', '<p role="status">You allowed access. You can go back to your device now.</p>')
    return await sendPage(reply, 200, 'Access denied', '<p role="status">You denied access. The device will not be connected.</p>')
  })
}
