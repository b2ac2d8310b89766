// Authorization code grant, implicit grant, PKCE, code reuse and refresh
// rotation over a listening server.
import t from 'tap'
import { startTestService } from '../../helpers/service.ts'
import { GUID_RE } from '../../../api/store/secrets.ts'
import { authorize, basic, codeFrom, pkcePair, post, signedInBrowser, validate } from './helpers.ts'

const REDIRECT = 'https://app.example/callback'

t.test('authorization code grant with a confidential client, then refresh rotation and replay', async t => {
  const svc = await startTestService(t)
  const { client_id: id, client_secret: secret } = await svc.client([REDIRECT])
  const { browser, profileId } = await signedInBrowser(svc, 'alice')
  const decided = await authorize(browser, { client_id: id, redirect_uri: REDIRECT, scope: 'data:heart_rate:read,profile:read', state: 'xyz' })
  t.equal(decided.status, 303)
  const loc = new URL(decided.headers.get('location') ?? '')
  t.equal(loc.origin + loc.pathname, REDIRECT)
  t.equal(loc.searchParams.get('state'), 'xyz')
  const code = codeFrom(decided)

  const tok = await post(`${svc.url}/oauth2/token`, { grant_type: 'authorization_code', client_id: id, client_secret: secret ?? '', code, redirect_uri: REDIRECT })
  t.equal(tok.status, 200)
  t.equal(tok.headers.get('cache-control'), 'no-store')
  t.equal(tok.headers.get('pragma'), 'no-cache')
  t.match(tok.json.access_token, GUID_RE)
  t.match(tok.json.refresh_token, GUID_RE)
  t.equal(tok.json.token_type, 'bearer')
  t.equal(tok.json.expires_in, 3600)
  t.equal(tok.json.scope, 'data:heart_rate:read profile:read')

  const v = await validate(svc.url, tok.json.access_token)
  t.equal(v.status, 200)
  t.same(v.json.scopes, ['data:heart_rate:read', 'profile:read'])
  t.equal(v.json.profile_id, profileId)
  t.equal(v.json.client_id, id)

  // Rotation: a new pair; the old access and refresh tokens stop working.
  const r1 = await post(`${svc.url}/oauth2/token`, { grant_type: 'refresh_token', refresh_token: tok.json.refresh_token }, { authorization: basic(id, secret ?? '') })
  t.equal(r1.status, 200)
  t.not(r1.json.refresh_token, tok.json.refresh_token)
  t.not(r1.json.access_token, tok.json.access_token)
  t.equal(r1.headers.get('cache-control'), 'no-store')
  t.equal((await validate(svc.url, tok.json.access_token)).json.error_code, 7005)
  t.equal((await validate(svc.url, r1.json.access_token)).status, 200)

  // Replay of the old refresh token: invalid_grant and the whole family is revoked.
  const replay = await post(`${svc.url}/oauth2/token`, { grant_type: 'refresh_token', refresh_token: tok.json.refresh_token, client_id: id, client_secret: secret ?? '' })
  t.equal(replay.status, 400)
  t.equal(replay.json.error, 'invalid_grant')
  const after = await validate(svc.url, r1.json.access_token)
  t.equal(after.status, 401)
  t.equal(after.json.error_code, 7005)
  const newer = await post(`${svc.url}/oauth2/token`, { grant_type: 'refresh_token', refresh_token: r1.json.refresh_token, client_id: id, client_secret: secret ?? '' })
  t.equal(newer.status, 400)
  t.equal(newer.json.error, 'invalid_grant')
})

t.test('a second use of a code fails and revokes the tokens issued from it', async t => {
  const svc = await startTestService(t)
  const { client_id: id, client_secret: secret } = await svc.client([REDIRECT])
  const { browser } = await signedInBrowser(svc, 'bob')
  const code = codeFrom(await authorize(browser, { client_id: id, redirect_uri: REDIRECT }))
  const params = { grant_type: 'authorization_code', client_id: id, client_secret: secret ?? '', code, redirect_uri: REDIRECT }
  const first = await post(`${svc.url}/oauth2/token`, params)
  t.equal(first.status, 200)
  const second = await post(`${svc.url}/oauth2/token`, params)
  t.equal(second.status, 400)
  t.same(second.json, { error: 'invalid_grant', error_description: 'authorization code was already used' })
  t.equal((await validate(svc.url, first.json.access_token)).json.error_code, 7005)
  const refresh = await post(`${svc.url}/oauth2/token`, { grant_type: 'refresh_token', refresh_token: first.json.refresh_token, client_id: id, client_secret: secret ?? '' })
  t.equal(refresh.json.error, 'invalid_grant')
})

t.test('two concurrent exchanges of one code: exactly one succeeds', async t => {
  const svc = await startTestService(t)
  const { client_id: id, client_secret: secret } = await svc.client([REDIRECT])
  const { browser } = await signedInBrowser(svc, 'carol')
  const code = codeFrom(await authorize(browser, { client_id: id, redirect_uri: REDIRECT }))
  const params = { grant_type: 'authorization_code', client_id: id, client_secret: secret ?? '', code, redirect_uri: REDIRECT }
  const answers = await Promise.all([1, 2, 3].map(async () => await post(`${svc.url}/oauth2/token`, params)))
  t.same(answers.map(a => a.status).sort(), [200, 400, 400])
  t.equal(answers.filter(a => a.json.error === 'invalid_grant').length, 2)
})

t.test('code exchange refusals', async t => {
  const svc = await startTestService(t)
  const { client_id: id, client_secret: secret } = await svc.client([REDIRECT, 'https://app.example/other'])
  const other = await svc.client([REDIRECT])
  const { browser } = await signedInBrowser(svc, 'dave')
  const code = codeFrom(await authorize(browser, { client_id: id, redirect_uri: REDIRECT }))
  const token = `${svc.url}/oauth2/token`
  const base = { grant_type: 'authorization_code', code, redirect_uri: REDIRECT }

  const wrongSecret = await post(token, { ...base, client_id: id, client_secret: 'nope' })
  t.equal(wrongSecret.status, 401)
  t.equal(wrongSecret.json.error, 'invalid_client')
  t.equal(wrongSecret.headers.get('www-authenticate'), null)
  const wrongBasic = await post(token, base, { authorization: basic(id, 'nope') })
  t.equal(wrongBasic.status, 401)
  t.equal(wrongBasic.json.error, 'invalid_client')
  t.match(wrongBasic.headers.get('www-authenticate'), /^Basic realm="hr-relay"/)
  const noSecret = await post(token, { ...base, client_id: id })
  t.equal(noSecret.status, 401)
  t.equal(noSecret.json.error, 'invalid_client')
  const both = await post(token, { ...base, client_secret: secret ?? '' }, { authorization: basic(id, secret ?? '') })
  t.equal(both.status, 400)
  t.equal(both.json.error, 'invalid_request')
  const otherClient = await post(token, { ...base, client_id: other.client_id, client_secret: other.client_secret ?? '' })
  t.same(otherClient.json, { error: 'invalid_grant', error_description: 'authorization code was issued to another client' })
  const otherRedirect = await post(token, { ...base, redirect_uri: 'https://app.example/other', client_id: id, client_secret: secret ?? '' })
  t.same(otherRedirect.json, { error: 'invalid_grant', error_description: 'redirect_uri does not match the authorization request' })
  const missing = await post(token, { grant_type: 'authorization_code', redirect_uri: REDIRECT, client_id: id, client_secret: secret ?? '' })
  t.same(missing.json, { error: 'invalid_request', error_description: 'parameter code is missing' })
  const unknown = await post(token, { ...base, code: 'not-a-code', client_id: id, client_secret: secret ?? '' })
  t.same(unknown.json, { error: 'invalid_grant', error_description: 'unknown authorization code' })
  const verifierWithoutChallenge = await post(token, { ...base, client_id: id, client_secret: secret ?? '', code_verifier: 'a'.repeat(43) })
  t.equal(verifierWithoutChallenge.json.error, 'invalid_grant')
  // None of the refusals consumed the code: the right request still works, once, with Basic.
  const ok = await post(token, base, { authorization: basic(id, secret ?? '') })
  t.equal(ok.status, 200)
})

t.test('PKCE: S256 accepted; missing or wrong verifier and plain refused; public clients must use it', async t => {
  const svc = await startTestService(t)
  const pub = await svc.client([REDIRECT], { public: true })
  t.equal(pub.client_secret, null)
  const { browser } = await signedInBrowser(svc, 'erin')
  const token = `${svc.url}/oauth2/token`

  const noPkce = await browser.get(`/oauth2/authorize?${new URLSearchParams({ client_id: pub.client_id, redirect_uri: REDIRECT, response_type: 'code', scope: 'profile:read', state: 's1' }).toString()}`)
  t.equal(noPkce.status, 303)
  const e1 = new URL(noPkce.headers.get('location') ?? '')
  t.equal(e1.searchParams.get('error'), 'invalid_request')
  t.equal(e1.searchParams.get('state'), 's1')

  const { verifier, challenge } = pkcePair()
  const plain = await browser.get(`/oauth2/authorize?${new URLSearchParams({ client_id: pub.client_id, redirect_uri: REDIRECT, response_type: 'code', scope: 'profile:read', state: 's2', code_challenge: challenge, code_challenge_method: 'plain' }).toString()}`)
  t.equal(new URL(plain.headers.get('location') ?? '').searchParams.get('error'), 'invalid_request')
  const implicitMethod = await browser.get(`/oauth2/authorize?${new URLSearchParams({ client_id: pub.client_id, redirect_uri: REDIRECT, response_type: 'code', scope: 'profile:read', state: 's3', code_challenge: challenge }).toString()}`)
  t.equal(new URL(implicitMethod.headers.get('location') ?? '').searchParams.get('error'), 'invalid_request')

  const code = codeFrom(await authorize(browser, { client_id: pub.client_id, redirect_uri: REDIRECT, extra: { code_challenge: challenge, code_challenge_method: 'S256' } }))
  const base = { grant_type: 'authorization_code', client_id: pub.client_id, code, redirect_uri: REDIRECT }
  const missing = await post(token, base)
  t.same(missing.json, { error: 'invalid_grant', error_description: 'code_verifier is missing' })
  const wrong = await post(token, { ...base, code_verifier: pkcePair().verifier })
  t.same(wrong.json, { error: 'invalid_grant', error_description: 'code_verifier does not match the code_challenge' })
  const ok = await post(token, { ...base, code_verifier: verifier })
  t.equal(ok.status, 200)
  t.match(ok.json.access_token, /^[0-9a-f-]{36}$/)
  // The public client refreshes with its id alone.
  const r = await post(token, { grant_type: 'refresh_token', client_id: pub.client_id, refresh_token: ok.json.refresh_token })
  t.equal(r.status, 200)
})

t.test('implicit grant, web_page mode, deny and errors after the redirect URI is verified', async t => {
  const svc = await startTestService(t)
  const { client_id: id } = await svc.client([REDIRECT])
  const { browser } = await signedInBrowser(svc, 'frank')

  const implicit = await authorize(browser, { client_id: id, redirect_uri: REDIRECT, response_type: 'token', scope: 'data:heart_rate:read data:statistics:read', state: 'abc' })
  t.equal(implicit.status, 303)
  const loc = implicit.headers.get('location') ?? ''
  t.ok(loc.startsWith(REDIRECT + '#'))
  const frag = new URLSearchParams(loc.slice(loc.indexOf('#') + 1))
  t.match(frag.get('access_token'), /^[0-9a-f-]{36}$/)
  t.equal(frag.get('token_type'), 'bearer')
  t.equal(frag.get('expires_in'), '90000')
  t.equal(frag.get('scope'), 'data:heart_rate:read data:statistics:read')
  t.equal(frag.get('state'), 'abc')
  const v = await validate(svc.url, frag.get('access_token') ?? '')
  t.equal(v.status, 200)
  t.ok(v.json.expires_in > 89000 && v.json.expires_in <= 90000)

  const page = await authorize(browser, { client_id: id, redirect_uri: REDIRECT, response_type: 'token', extra: { response_mode: 'web_page' } })
  t.equal(page.status, 200)
  const shown = /<p class="token" id="token"[^>]*>([0-9a-f-]{36})<\/p>/.exec(page.text)?.[1]
  t.ok(shown)
  t.equal((await validate(svc.url, shown ?? '')).status, 200)

  const denied = await authorize(browser, { client_id: id, redirect_uri: REDIRECT, decision: 'deny', state: 'q' })
  const d = new URL(denied.headers.get('location') ?? '')
  t.equal(d.searchParams.get('error'), 'access_denied')
  t.equal(d.searchParams.get('state'), 'q')
  t.equal(d.searchParams.get('code'), null)

  const badScope = await authorize(browser, { client_id: id, redirect_uri: REDIRECT, scope: 'data:heart_rate:read,nope', state: 'q2' })
  t.equal(badScope.status, 303)
  const b = new URL(badScope.headers.get('location') ?? '')
  t.equal(b.searchParams.get('error'), 'invalid_scope')
  t.equal(b.searchParams.get('state'), 'q2')
  const create = await authorize(browser, { client_id: id, redirect_uri: REDIRECT, scope: 'profile:create' })
  t.equal(new URL(create.headers.get('location') ?? '').searchParams.get('error'), 'invalid_scope')
  const badType = await authorize(browser, { client_id: id, redirect_uri: REDIRECT, response_type: 'id_token' as any })
  t.equal(new URL(badType.headers.get('location') ?? '').searchParams.get('error'), 'unsupported_response_type')
  const badMode = await authorize(browser, { client_id: id, redirect_uri: REDIRECT, extra: { response_mode: 'form_post' } })
  t.equal(badMode.status, 422)
  t.match(badMode.text, /error_invalid_response_mode/)
  const repeated = await browser.get(`/oauth2/authorize?client_id=${id}&redirect_uri=${encodeURIComponent(REDIRECT)}&response_type=code&scope=profile:read&state=a&state=b`)
  t.equal(repeated.status, 303)
  t.equal(new URL(repeated.headers.get('location') ?? '').searchParams.get('error'), 'invalid_request')
})

t.test('redirect URI attacks are shown as an error page and never redirected', async t => {
  const svc = await startTestService(t)
  const { client_id: id } = await svc.client([REDIRECT, 'http://127.0.0.1:5000/cb'])
  const { browser } = await signedInBrowser(svc, 'gina')
  const attempt = async (clientId: string, redirect: string): Promise<number> => {
    const a = await browser.get(`/oauth2/authorize?${new URLSearchParams({ client_id: clientId, redirect_uri: redirect, response_type: 'code', scope: 'profile:read', state: 's' }).toString()}`)
    t.equal(a.headers.get('location'), null, `no redirect for ${redirect}`)
    return a.status
  }
  for (const bad of [
    'https://evil.example/callback',
    'https://app.example/callback/',
    'https://app.example/callbackx',
    'https://app.example/callback/../evil',
    'https://app.example/callback?x=1',
    'https://app.example/callback#frag',
    'https://app.example.evil.example/callback',
    'https://app.example@evil.example/callback',
    'https://good@app.example/callback',
    'http://app.example/callback',
    'HTTPS://APP.EXAMPLE/callback',
    'https://app.example:443/callback',
    'http://127.0.0.1:5001/other',
    'http://localhost:5000/cb',
    'http://user@127.0.0.1:5001/cb',
    'javascript:alert(1)//https://app.example/callback'
  ]) {
    t.equal(await attempt(id, bad), 400, bad)
  }
  const page = await browser.get(`/oauth2/authorize?${new URLSearchParams({ client_id: id, redirect_uri: 'https://evil.example/cb', response_type: 'code', scope: 'profile:read', state: 's' }).toString()}`)
  t.match(page.text, /Invalid redirect URI/)
  t.equal(page.headers.get('x-frame-options'), 'DENY')
  t.equal(await attempt('00000000-0000-0000-0000-000000000000', REDIRECT), 400)
  const missing = await browser.get('/oauth2/authorize?response_type=code&scope=profile:read&state=s')
  t.equal(missing.status, 400)
  t.equal(missing.headers.get('location'), null)
  // Loopback: another port is allowed (RFC 8252 7.3).
  const loop = await authorize(browser, { client_id: id, redirect_uri: 'http://127.0.0.1:6123/cb' })
  t.equal(loop.status, 303)
  t.ok(loop.headers.get('location')?.startsWith('http://127.0.0.1:6123/cb?code='))
  // A consent form tampered with to carry another redirect URI is refused the same way.
  const consent = await browser.get(`/oauth2/authorize?${new URLSearchParams({ client_id: id, redirect_uri: REDIRECT, response_type: 'code', scope: 'profile:read', state: 's' }).toString()}`)
  const csrf = /name="csrf" value="([^"]+)"/.exec(consent.text)?.[1] ?? ''
  const tampered = await browser.post('/oauth2/authorize', { csrf, client_id: id, redirect_uri: 'https://evil.example/callback', response_type: 'code', scope: 'profile:read', state: 's', decision: 'allow' })
  t.equal(tampered.status, 400)
  t.equal(tampered.headers.get('location'), null)
})
