// GET /oauth2/authorize (spec 4.1) and its consent decision.
// Until the client and redirect URI are verified, every problem is shown as
// an error page and never redirected (RFC 6749 4.1.2.1, RFC 9700 4.11);
// afterwards errors go back to the client with `error` and `state`.
import type { FastifyInstance, FastifyReply } from 'fastify'
import { parseScopes } from '../scopes.ts'
import { redirectUriAllowed, type ClientRecord } from '../store/clients.ts'
import { csrfOk, pageForm, signedIn, type OAuthContext } from './context.ts'
import { queryOf, type FormParams } from './form.ts'
import { consentBody, errorPage, sendPage, tokenBody } from './pages.ts'

export interface AuthorizeRequest {
  client: ClientRecord
  redirect_uri: string
  response_type: 'code' | 'token'
  scopes: string[]
  state: string
  web_page: boolean
  code_challenge: string | null
}

type Checked =
  | { ok: true, req: AuthorizeRequest }
  /** Shown to the user, never redirected. */
  | { ok: false, page: { status: number, title: string, message: string } }
  /** Sent back to the verified redirect URI. */
  | { ok: false, redirect: { uri: string, fragment: boolean, state: string | null, error: string, description: string } }

const CHALLENGE_RE = /^[A-Za-z0-9_-]{43}$/

function one (form: FormParams, name: string): { value?: string, repeated: boolean } {
  if (form.repeated.has(name)) return { repeated: true }
  const value = form.values.get(name)
  return value === undefined ? { repeated: false } : { value, repeated: false }
}

/** Validates the parameters of an authorization request (from the query, or the consent form). */
export async function checkAuthorize (ctx: OAuthContext, form: FormParams): Promise<Checked> {
  if (form.error !== null) return { ok: false, page: { status: 400, title: 'Bad request', message: `The request could not be read: ${form.error}.` } }
  const clientId = one(form, 'client_id')
  if (clientId.repeated || clientId.value === undefined || clientId.value === '') return { ok: false, page: { status: 400, title: 'Unknown application', message: 'The request names no application (client_id is missing or repeated).' } }
  const client = await ctx.clients.get(clientId.value)
  if (client === undefined) return { ok: false, page: { status: 400, title: 'Unknown application', message: 'No application with this client_id is registered here.' } }
  const redirect = one(form, 'redirect_uri')
  if (redirect.repeated || redirect.value === undefined || !redirectUriAllowed(client, redirect.value)) {
    return { ok: false, page: { status: 400, title: 'Invalid redirect URI', message: 'The redirect_uri is missing or does not exactly match one registered for this application, so you are not sent there.' } }
  }
  const uri = redirect.value
  const responseType = one(form, 'response_type')
  const stateParam = one(form, 'state')
  const state = stateParam.repeated ? null : stateParam.value ?? null
  const fragment = responseType.value === 'token'
  const fail = (error: string, description: string): Checked => ({ ok: false, redirect: { uri, fragment, state, error, description } })

  const mode = one(form, 'response_mode')
  if (mode.repeated) return fail('invalid_request', 'response_mode is repeated')
  if (mode.value !== undefined && !['web_page', 'query', 'fragment'].includes(mode.value)) {
    return { ok: false, page: { status: 422, title: 'Invalid response mode', message: 'error_invalid_response_mode: response_mode must be web_page (or left out).' } }
  }
  for (const name of form.repeated) return fail('invalid_request', `parameter ${name} is repeated`)
  if (responseType.value === undefined || responseType.value === '') return fail('invalid_request', 'response_type is missing')
  if (responseType.value !== 'code' && responseType.value !== 'token') return fail('unsupported_response_type', 'response_type must be code or token')
  if (mode.value === 'query' && responseType.value === 'token') return fail('invalid_request', 'response_mode query is not allowed with response_type token')
  if (state === null || state === '') return fail('invalid_request', 'state is missing')
  if (state.length > 2000) return fail('invalid_request', 'state is too long')
  const scopeText = form.values.get('scope')
  if (scopeText === undefined || scopeText === '') return fail('invalid_scope', 'scope is missing')
  const scopes = parseScopes(scopeText)
  if (scopes === null) return fail('invalid_scope', 'unknown scope requested')
  if (scopes.includes('profile:create')) return fail('invalid_scope', 'profile:create is only available to the client credentials grant')

  let challenge: string | null = null
  if (responseType.value === 'code') {
    const c = form.values.get('code_challenge')
    const method = form.values.get('code_challenge_method')
    if (c === undefined) {
      if (method !== undefined) return fail('invalid_request', 'code_challenge_method without code_challenge')
      if (client.secret_hash === null) return fail('invalid_request', 'PKCE (code_challenge with method S256) is required for this public client')
    } else {
      // RFC 7636 4.3: a missing method means plain, which is refused (RFC 9700 2.1.1).
      if (method !== 'S256') return fail('invalid_request', 'code_challenge_method must be S256')
      if (!CHALLENGE_RE.test(c)) return fail('invalid_request', 'code_challenge must be 43 base64url characters')
      challenge = c
    }
  }
  return { ok: true, req: { client, redirect_uri: uri, response_type: responseType.value, scopes, state, web_page: mode.value === 'web_page', code_challenge: challenge } }
}

/** Adds parameters to a redirect URI, in its query or in a fragment. */
export function withParams (uri: string, params: Record<string, string>, fragment: boolean): string {
  if (fragment) return `${uri.split('#')[0] ?? uri}#${new URLSearchParams(params).toString()}`
  const u = new URL(uri)
  for (const [k, v] of Object.entries(params)) u.searchParams.append(k, v)
  return u.href
}

async function answerChecked (reply: FastifyReply, checked: Exclude<Checked, { ok: true }>): Promise<FastifyReply> {
  if ('page' in checked) return await errorPage(reply, checked.page.status, checked.page.title, checked.page.message)
  const r = checked.redirect
  const params: Record<string, string> = { error: r.error, error_description: r.description }
  if (r.state !== null) params.state = r.state
  return await reply.header('cache-control', 'no-store').redirect(withParams(r.uri, params, r.fragment), 303)
}

/** The hidden fields that carry the request through the consent form. */
function consentFields (form: FormParams): Record<string, string> {
  const out: Record<string, string> = {}
  for (const k of ['client_id', 'redirect_uri', 'response_type', 'scope', 'state', 'response_mode', 'code_challenge', 'code_challenge_method']) {
    const v = form.values.get(k)
    if (v !== undefined) out[k] = v
  }
  return out
}

export function authorizeRoutes (app: FastifyInstance, ctx: OAuthContext): void {
  app.get('/oauth2/authorize', async (request, reply) => {
    const form = queryOf(request)
    const checked = await checkAuthorize(ctx, form)
    if (!checked.ok) return await answerChecked(reply, checked)
    const who = await signedIn(ctx, request, reply, request.raw.url ?? '/oauth2/authorize')
    if (who === null) return reply
    return await sendPage(reply, 200, 'Allow access?', consentBody(checked.req.client.name, checked.req.scopes, '/oauth2/authorize', who.session.csrf, consentFields(form)))
  })

  app.post('/oauth2/authorize', async (request, reply) => {
    const form = await pageForm(request, reply)
    if (form === null) return reply
    if (!await csrfOk(ctx, request, reply, form)) return reply
    const decision = form.values.get('decision')
    form.values.delete('csrf'); form.values.delete('decision')
    const checked = await checkAuthorize(ctx, form)
    if (!checked.ok) return await answerChecked(reply, checked)
    const who = await signedIn(ctx, request, reply, `/oauth2/authorize?${new URLSearchParams(consentFields(form)).toString()}`)
    if (who === null) return reply
    const req = checked.req
    const fragment = req.response_type === 'token'
    if (decision !== 'allow') {
      ctx.log.info({ client_id: req.client.client_id, profile_id: who.user.profile_id }, 'authorization denied')
      if (req.web_page) return await errorPage(reply, 403, 'Access denied', `You did not allow ${req.client.name} to access your account.`)
      return await reply.redirect(withParams(req.redirect_uri, { error: 'access_denied', error_description: 'the user denied access', state: req.state }, fragment), 303)
    }
    const lifetimes = ctx.config.lifetimes
    if (req.response_type === 'code') {
      const code = await ctx.state.createCode({ client_id: req.client.client_id, redirect_uri: req.redirect_uri, profile_id: who.user.profile_id, scopes: req.scopes, code_challenge: req.code_challenge }, lifetimes.code)
      ctx.log.info({ client_id: req.client.client_id, profile_id: who.user.profile_id }, 'authorization code issued')
      if (req.web_page) return await sendPage(reply, 200, 'Authorization code', tokenBody('authorization code', code, [['Application', req.client.name], ['Valid for', `${Math.min(lifetimes.code, 600)} seconds, once`], ['State', req.state]]))
      return await reply.header('cache-control', 'no-store').redirect(withParams(req.redirect_uri, { code, state: req.state }, false), 303)
    }
    const issued = await ctx.tokens.issue({ client_id: req.client.client_id, profile_id: who.user.profile_id, scopes: req.scopes, flow: 'implicit', expires_in: lifetimes.implicit })
    ctx.log.info({ client_id: req.client.client_id, profile_id: who.user.profile_id }, 'implicit token issued')
    if (req.web_page) return await sendPage(reply, 200, 'Your access token', tokenBody('access token', issued.access_token, [['Application', req.client.name], ['Scopes', issued.scope], ['Expires in', `${issued.expires_in} seconds`], ['State', req.state]]))
    return await reply.header('cache-control', 'no-store').redirect(withParams(req.redirect_uri, { access_token: issued.access_token, token_type: 'bearer', expires_in: String(issued.expires_in), scope: issued.scope, state: req.state }, true), 303)
  })
}
