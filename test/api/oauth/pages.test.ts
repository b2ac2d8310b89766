// The server-rendered pages: sign-in and its session cookie, CSRF, security
// headers, the manual-token page (premium only) and disconnecting an app.
import t from 'tap'
import { startTestService } from '../../helpers/service.ts'
import { Browser, authorize, codeFrom, csrfOf, post, signedInBrowser, validate } from './helpers.ts'

const REDIRECT = 'https://app.example/callback'

t.test('sign-in page, session cookie, wrong password, open-redirect guard, sign-out', async t => {
  const svc = await startTestService(t)
  await svc.user('judy')
  const b = new Browser(svc.url)
  const page = await b.get('/signin?return_to=/account/apps')
  t.equal(page.status, 200)
  t.match(page.text, '<label for="username">Username</label>')
  t.match(page.text, '<label for="password">Password</label>')
  t.match(page.text, '<button type="submit">Sign in</button>')
  t.equal(page.headers.get('x-frame-options'), 'DENY')
  t.match(page.headers.get('content-security-policy'), /frame-ancestors 'none'/)
  t.equal(page.headers.get('cache-control'), 'no-store')
  const setCookie = page.headers.get('set-cookie') ?? ''
  t.match(setCookie, /^hr_session=[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; SameSite=Lax; Max-Age=43200$/)
  const anonymousCookie = b.cookie
  const csrf = csrfOf(page.text)

  const wrong = await b.post('/signin', { csrf, username: 'judy', password: 'wrong-password', return_to: '/account/apps' })
  t.equal(wrong.status, 401)
  t.match(wrong.text, 'Wrong username or password.')
  const nobody = await b.post('/signin', { csrf, username: 'nobody', password: 'password123', return_to: '/account' })
  t.equal(nobody.status, 401)

  const ok = await b.post('/signin', { csrf, username: 'judy', password: 'password123', return_to: '/account/apps' })
  t.equal(ok.status, 303)
  t.equal(ok.headers.get('location'), '/account/apps')
  t.not(b.cookie, anonymousCookie, 'a new session id after sign-in')
  // The pre-sign-in session id is worthless now.
  const old = new Browser(svc.url)
  old.cookie = anonymousCookie
  t.equal((await old.get('/account')).status, 303)
  const account = await b.get('/account')
  t.equal(account.status, 200)
  t.match(account.text, 'Signed in as judy')

  for (const evil of ['https://evil.example/', '//evil.example/x', '/\\evil.example', 'javascript:alert(1)']) {
    const fresh = new Browser(svc.url)
    const p = await fresh.get('/signin')
    const r = await fresh.post('/signin', { csrf: csrfOf(p.text), username: 'judy', password: 'password123', return_to: evil })
    t.equal(r.headers.get('location'), '/account', evil)
  }

  const out = await b.post('/signout', { csrf: csrfOf(account.text) })
  t.equal(out.status, 303)
  t.equal((await b.get('/account')).status, 303)
})

t.test('forms without the session CSRF token are refused with a 403 page', async t => {
  const svc = await startTestService(t)
  const { client_id: id } = await svc.client([REDIRECT])
  const { browser } = await signedInBrowser(svc, 'kim', { premium: 'lifetime' })
  const q = { client_id: id, redirect_uri: REDIRECT, response_type: 'code', scope: 'profile:read', state: 's' }
  const consent = await browser.get(`/oauth2/authorize?${new URLSearchParams(q).toString()}`)
  t.equal(consent.status, 200)
  t.match(consent.text, '<button type="submit" name="decision" value="allow">Allow</button>')
  t.match(consent.text, '<button type="submit" name="decision" value="deny">Deny</button>')
  t.match(consent.text, '<strong>Test App</strong>')
  t.equal(consent.headers.get('x-frame-options'), 'DENY')
  const csrf = csrfOf(consent.text)

  const missing = await browser.post('/oauth2/authorize', { ...q, decision: 'allow' })
  t.equal(missing.status, 403)
  t.match(missing.headers.get('content-type'), /text\/html/)
  t.equal(missing.headers.get('location'), null)
  const wrong = await browser.post('/oauth2/authorize', { ...q, decision: 'allow', csrf: csrf.slice(0, -2) + 'xx' })
  t.equal(wrong.status, 403)
  // Another session's token does not work either (a cross-site attacker has his own session).
  const other = new Browser(svc.url)
  const otherPage = await other.get('/signin')
  t.equal((await browser.post('/oauth2/authorize', { ...q, decision: 'allow', csrf: csrfOf(otherPage.text) })).status, 403)
  // No cookie at all.
  t.equal((await post(`${svc.url}/oauth2/authorize`, { ...q, decision: 'allow', csrf })).status, 403)
  t.equal((await browser.post('/account/tokens', { scope: 'profile:read' })).status, 403)
  t.equal((await browser.post('/account/apps/disconnect', { client_id: id })).status, 403)
  t.equal((await browser.post('/signout', {})).status, 403)
  const signinPage = await new Browser(svc.url).get('/signin')
  t.equal((await post(`${svc.url}/signin`, { csrf: csrfOf(signinPage.text), username: 'kim', password: 'password123' })).status, 403, 'CSRF token without its session cookie')
  // With the token the same request works.
  const ok = await browser.post('/oauth2/authorize', { ...q, decision: 'allow', csrf })
  t.equal(ok.status, 303)
})

t.test('manual token page: premium or trial only', async t => {
  const svc = await startTestService(t)
  const { browser: free } = await signedInBrowser(svc, 'leo')
  const refused = await free.get('/account/tokens')
  t.equal(refused.status, 402)
  t.match(refused.text, /needs an active paid plan or a trial/)
  const expiredTrial = await signedInBrowser(svc, 'lia', { premium: 'trial', premium_expires_at: Date.now() - 1000 })
  t.equal((await expiredTrial.browser.get('/account/tokens')).status, 402)

  const { browser, profileId } = await signedInBrowser(svc, 'mia', { premium: 'trial' })
  const page = await browser.get('/account/tokens')
  t.equal(page.status, 200)
  t.match(page.text, /<label for="scope-0"[^>]*><code>data:heart_rate:read<\/code><\/label>/)
  t.notMatch(page.text, 'profile:create')
  const created = await browser.post('/account/tokens', `csrf=${csrfOf(page.text)}&scope=data%3Aheart_rate%3Aread&scope=profile%3Aread`)
  t.equal(created.status, 201)
  const token = /<p class="token" id="token"[^>]*>([0-9a-f-]{36})<\/p>/.exec(created.text)?.[1] ?? ''
  const v = await validate(svc.url, token)
  t.equal(v.status, 200)
  t.same(v.json.scopes, ['data:heart_rate:read', 'profile:read'])
  t.equal(v.json.profile_id, profileId)
  t.equal(v.json.client_id, 'hr-relay-manual')
  t.equal(v.json.expires_in > 630000000, true)
  const none = await browser.post('/account/tokens', { csrf: csrfOf(page.text) })
  t.equal(none.status, 400)
  const create = await browser.post('/account/tokens', { csrf: csrfOf(page.text), scope: 'profile:create' })
  t.equal(create.status, 400)
})

t.test('disconnecting an app revokes every token of that user for it', async t => {
  const svc = await startTestService(t)
  const { client_id: id, client_secret: secret } = await svc.client([REDIRECT], { name: 'Stream <Overlay>' })
  const keep = await svc.client([REDIRECT], { name: 'Other App' })
  const { browser } = await signedInBrowser(svc, 'ned')
  const tokens: string[] = []
  let refresh = ''
  for (let i = 0; i < 2; i++) {
    const code = codeFrom(await authorize(browser, { client_id: id, redirect_uri: REDIRECT }))
    const r = await post(`${svc.url}/oauth2/token`, { grant_type: 'authorization_code', client_id: id, client_secret: secret ?? '', code, redirect_uri: REDIRECT })
    tokens.push(r.json.access_token)
    refresh = r.json.refresh_token
  }
  const implicit = await authorize(browser, { client_id: id, redirect_uri: REDIRECT, response_type: 'token' })
  const loc = implicit.headers.get('location') ?? ''
  tokens.push(new URLSearchParams(loc.slice(loc.indexOf('#') + 1)).get('access_token') ?? '')
  const kept = await authorize(browser, { client_id: keep.client_id, redirect_uri: REDIRECT, response_type: 'token' })
  const keptLoc = kept.headers.get('location') ?? ''
  const keptToken = new URLSearchParams(keptLoc.slice(keptLoc.indexOf('#') + 1)).get('access_token') ?? ''
  for (const tok of tokens) t.equal((await validate(svc.url, tok)).status, 200)

  const apps = await browser.get('/account/apps')
  t.equal(apps.status, 200)
  t.match(apps.text, 'Stream &lt;Overlay&gt;')
  t.match(apps.text, 'Other App')
  t.match(apps.text, 'aria-label="Disconnect Stream &lt;Overlay&gt;">Disconnect</button>')
  const done = await browser.post('/account/apps/disconnect', { csrf: csrfOf(apps.text), client_id: id })
  t.equal(done.status, 303)
  t.equal(done.headers.get('location'), '/account/apps')
  for (const tok of tokens) {
    const v = await validate(svc.url, tok)
    t.equal(v.status, 401)
    t.equal(v.json.error_code, 7005)
  }
  const r = await post(`${svc.url}/oauth2/token`, { grant_type: 'refresh_token', client_id: id, client_secret: secret ?? '', refresh_token: refresh })
  t.equal(r.json.error, 'invalid_grant')
  t.equal((await validate(svc.url, keptToken)).status, 200, 'the other app keeps its token')
  const after = await browser.get('/account/apps')
  t.notMatch(after.text, 'Stream &lt;Overlay&gt;')
  t.match(after.text, 'Other App')
})

t.test('pages need a signed-in user and redirect to the sign-in page', async t => {
  const svc = await startTestService(t)
  const { client_id: id } = await svc.client([REDIRECT])
  const b = new Browser(svc.url)
  for (const path of ['/account', '/account/tokens', '/account/apps', '/device']) {
    const r = await b.get(path)
    t.equal(r.status, 303, path)
    t.equal(r.headers.get('location'), `/signin?return_to=${encodeURIComponent(path)}`)
  }
  const q = `/oauth2/authorize?${new URLSearchParams({ client_id: id, redirect_uri: REDIRECT, response_type: 'code', scope: 'profile:read', state: 's' }).toString()}`
  const r = await b.get(q)
  t.equal(r.status, 303)
  t.equal(r.headers.get('location'), `/signin?return_to=${encodeURIComponent(q)}`)
})

t.test('sign-in attempts are limited: the 11th wrong password within a minute gets 429', async t => {
  const svc = await startTestService(t)
  await svc.user('otto')
  const b = new Browser(svc.url)
  const page = await b.get('/signin')
  const csrf = csrfOf(page.text)
  for (let i = 0; i < 10; i++) {
    const r = await b.post('/signin', { csrf, username: 'otto', password: `wrong-${i}`, return_to: '/account' })
    t.equal(r.status, 401)
  }
  const blocked = await b.post('/signin', { csrf, username: 'otto', password: 'password123', return_to: '/account' })
  t.equal(blocked.status, 429)
  t.match(blocked.text, /Too many failed sign-in attempts/)
  t.equal(blocked.headers.get('set-cookie'), null, 'no session was started')
})

t.test('web_page mode for the code flow shows the code instead of redirecting', async t => {
  const svc = await startTestService(t)
  const { client_id: id, client_secret: secret } = await svc.client([REDIRECT])
  const { browser } = await signedInBrowser(svc, 'pam')
  const r = await authorize(browser, { client_id: id, redirect_uri: REDIRECT, extra: { response_mode: 'web_page' } })
  t.equal(r.status, 200)
  t.equal(r.headers.get('location'), null)
  const code = /<p class="token" id="token"[^>]*>([A-Za-z0-9_-]{43})<\/p>/.exec(r.text)?.[1] ?? ''
  const tok = await post(`${svc.url}/oauth2/token`, { grant_type: 'authorization_code', client_id: id, client_secret: secret ?? '', code, redirect_uri: REDIRECT })
  t.equal(tok.status, 200)
})
