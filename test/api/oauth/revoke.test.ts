// POST /oauth2/revoke with RFC 7009 client authentication, over a listening
// server: confidential clients authenticate as at the token endpoint, a client
// cannot revoke another client's tokens (200 without acting), public clients
// identify by client_id, and the spec's token-only call keeps working for
// what the token alone already allows its bearer.
import t from 'tap'
import { startTestService, type TestService } from '../../helpers/service.ts'
import { BASIC_CHALLENGE } from '../../../api/oauth/client-auth.ts'
import { authorize, basic, codeFrom, pkcePair, post, signedInBrowser, validate, type Browser } from './helpers.ts'

const REDIRECT = 'https://app.example/callback'

interface Pair { access_token: string, refresh_token: string }

async function codePair (svc: TestService, browser: Browser, clientId: string, secret: string | null): Promise<Pair> {
  const pkce = pkcePair()
  const extra: Record<string, string> = secret === null ? { code_challenge: pkce.challenge, code_challenge_method: 'S256' } : {}
  const code = codeFrom(await authorize(browser, { client_id: clientId, redirect_uri: REDIRECT, extra }))
  const params: Record<string, string> = { grant_type: 'authorization_code', client_id: clientId, code, redirect_uri: REDIRECT }
  if (secret === null) params.code_verifier = pkce.verifier
  else params.client_secret = secret
  const tok = await post(`${svc.url}/oauth2/token`, params)
  if (tok.status !== 200) throw new Error(`token: ${tok.status} ${tok.text}`)
  return tok.json
}

/** 200 when the refresh token still works (it is rotated, so the caller gets the new pair). */
async function refreshWorks (svc: TestService, clientId: string, secret: string | null, refresh: string): Promise<boolean> {
  const params: Record<string, string> = { grant_type: 'refresh_token', client_id: clientId, refresh_token: refresh }
  if (secret !== null) params.client_secret = secret
  return (await post(`${svc.url}/oauth2/token`, params)).status === 200
}

const revoke = async (svc: TestService, params: Record<string, string>, headers: Record<string, string> = {}): Promise<{ status: number, json: any, headers: Headers }> =>
  await post(`${svc.url}/oauth2/revoke`, params, headers)

t.test('a confidential client must authenticate to revoke its refresh token', async t => {
  const svc = await startTestService(t)
  const app = await svc.client([REDIRECT])
  const other = await svc.client([REDIRECT], { name: 'Other App' })
  const { browser } = await signedInBrowser(svc, 'alice')
  const secret = app.client_secret ?? ''
  const pair = await codePair(svc, browser, app.client_id, secret)

  // The spec's token-only call: 200, but a confidential client's refresh token is left alone.
  let r = await revoke(svc, { token: pair.refresh_token })
  t.equal(r.status, 200)
  t.same(r.json, {})
  t.equal((await validate(svc.url, pair.access_token)).status, 200, 'the grant was not revoked')

  // Wrong secret, Basic: 401 invalid_client with the Basic challenge, as at the token endpoint.
  r = await revoke(svc, { token: pair.refresh_token }, { authorization: basic(app.client_id, 'wrong') })
  t.equal(r.status, 401)
  t.same(r.json, { error: 'invalid_client', error_description: 'client authentication failed' })
  t.equal(r.headers.get('www-authenticate'), BASIC_CHALLENGE)
  // Wrong secret in the body, no secret, unknown client: 401 invalid_client.
  r = await revoke(svc, { token: pair.refresh_token, client_id: app.client_id, client_secret: 'wrong' })
  t.equal(r.status, 401)
  t.same(r.json, { error: 'invalid_client', error_description: 'client authentication failed' })
  t.equal(r.headers.get('www-authenticate'), null)
  r = await revoke(svc, { token: pair.refresh_token, client_id: app.client_id })
  t.equal(r.status, 401)
  t.same(r.json, { error: 'invalid_client', error_description: 'client authentication is required (client_secret or HTTP Basic)' })
  r = await revoke(svc, { token: pair.refresh_token, client_id: 'no-such-client' })
  t.equal(r.status, 401)
  t.same(r.json, { error: 'invalid_client', error_description: 'unknown client' })
  r = await revoke(svc, { token: pair.refresh_token, client_secret: secret })
  t.equal(r.status, 401)
  t.same(r.json, { error: 'invalid_client', error_description: 'client_id is missing' })

  // Another client, properly authenticated: 200 without acting (RFC 7009 2.1).
  r = await revoke(svc, { token: pair.refresh_token }, { authorization: basic(other.client_id, other.client_secret ?? '') })
  t.equal(r.status, 200)
  r = await revoke(svc, { token: pair.access_token, client_id: other.client_id, client_secret: other.client_secret ?? '' })
  t.equal(r.status, 200)
  t.equal((await validate(svc.url, pair.access_token)).status, 200, 'another client revoked nothing')

  // After all that the refresh token still works; the owner then revokes the new one (client_secret_post).
  const rotated = await post(`${svc.url}/oauth2/token`, { grant_type: 'refresh_token', client_id: app.client_id, client_secret: secret, refresh_token: pair.refresh_token })
  t.equal(rotated.status, 200)
  r = await revoke(svc, { token: rotated.json.refresh_token, client_id: app.client_id, client_secret: secret })
  t.equal(r.status, 200)
  t.equal((await validate(svc.url, rotated.json.access_token)).json.error_code, 7005, 'the whole grant is revoked')
  t.equal(await refreshWorks(svc, app.client_id, secret, rotated.json.refresh_token), false)

  // client_secret_basic works too.
  const second = await codePair(svc, browser, app.client_id, secret)
  r = await revoke(svc, { token: second.refresh_token, token_type_hint: 'refresh_token' }, { authorization: basic(app.client_id, secret) })
  t.equal(r.status, 200)
  t.equal((await validate(svc.url, second.access_token)).json.error_code, 7005)
})

t.test('a public client identifies by client_id; token-only calls revoke what the token alone allows', async t => {
  const svc = await startTestService(t)
  const pub = await svc.client([REDIRECT], { public: true })
  const conf = await svc.client([REDIRECT])
  const { browser } = await signedInBrowser(svc, 'bea')

  // client_id of a public client: its own refresh token is revoked with its grant.
  const own = await codePair(svc, browser, pub.client_id, null)
  let r = await revoke(svc, { token: own.refresh_token, client_id: pub.client_id })
  t.equal(r.status, 200)
  t.equal((await validate(svc.url, own.access_token)).json.error_code, 7005)

  // A public client cannot revoke a confidential client's tokens.
  const theirs = await codePair(svc, browser, conf.client_id, conf.client_secret)
  r = await revoke(svc, { token: theirs.refresh_token, client_id: pub.client_id })
  t.equal(r.status, 200)
  r = await revoke(svc, { token: theirs.access_token, client_id: pub.client_id })
  t.equal(r.status, 200)
  t.equal((await validate(svc.url, theirs.access_token)).status, 200)

  // Token only: a public client's refresh token (its bearer could use it anyway) is revoked.
  const another = await codePair(svc, browser, pub.client_id, null)
  r = await revoke(svc, { token: another.refresh_token })
  t.equal(r.status, 200)
  t.equal((await validate(svc.url, another.access_token)).json.error_code, 7005)

  // Token only: any access token, as the spec's call (implicit grant, confidential client).
  const implicit = await authorize(browser, { client_id: conf.client_id, redirect_uri: REDIRECT, response_type: 'token' })
  const fragment = new URLSearchParams(new URL(implicit.headers.get('location') ?? '').hash.slice(1))
  const implicitToken = fragment.get('access_token') ?? ''
  t.equal((await validate(svc.url, implicitToken)).status, 200)
  r = await revoke(svc, { token: implicitToken })
  t.equal(r.status, 200)
  t.equal((await validate(svc.url, implicitToken)).json.error_code, 7005)
  r = await revoke(svc, { token: theirs.access_token })
  t.equal(r.status, 200)
  t.equal((await validate(svc.url, theirs.access_token)).json.error_code, 7005, 'the access token alone is revoked')
  t.equal(await refreshWorks(svc, conf.client_id, conf.client_secret, theirs.refresh_token), true, 'its refresh token is not')
})
