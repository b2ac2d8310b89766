// The device authorization flow over a listening server: the session
// endpoint, every row of spec 3.1, slow_down (RFC 8628 3.5) and the /device
// pages with their attempt limit.
import t from 'tap'
import { startTestService, type TestService } from '../../helpers/service.ts'
import { OAuthState } from '../../../api/oauth/codes.ts'
import { digest } from '../../../api/store/secrets.ts'
import { DEVICE_GRANT } from '../../../api/oauth/token.ts'
import { Browser, csrfOf, post, signedInBrowser, validate } from './helpers.ts'

async function session (svc: TestService, clientId: string, scope = 'data:heart_rate:read'): Promise<any> {
  const r = await post(`${svc.url}/oauth2/device_authorization`, { client_id: clientId, scope })
  if (r.status !== 200) throw new Error(`device_authorization: ${r.status} ${r.text}`)
  return r.json
}

async function poll (svc: TestService, clientId: string, deviceCode: string): Promise<any> {
  return await post(`${svc.url}/oauth2/token`, { grant_type: DEVICE_GRANT, client_id: clientId, device_code: deviceCode })
}

async function decide (browser: Browser, userCode: string, decision: 'allow' | 'deny'): Promise<string> {
  const entry = await browser.get(`/device?user_code=${encodeURIComponent(userCode)}`)
  if (entry.status !== 200) throw new Error(`/device: ${entry.status}`)
  const consent = await browser.post('/device', { csrf: csrfOf(entry.text), user_code: userCode })
  if (consent.status !== 200) throw new Error(`/device POST: ${consent.status}`)
  const done = await browser.post('/device/decision', { csrf: csrfOf(consent.text), user_code: userCode.replace('-', ''), decision })
  return done.text
}

t.test('device_authorization answers the session of spec 2.8', async t => {
  const svc = await startTestService(t)
  const { client_id: id } = await svc.client(['https://app.example/cb'])
  const r = await post(`${svc.url}/oauth2/device_authorization`, { client_id: id, scope: 'data:heart_rate:read,profile:read' })
  t.equal(r.status, 200)
  t.equal(r.headers.get('cache-control'), 'no-store')
  t.same(Object.keys(r.json).sort(), ['device_code', 'expires_in', 'interval', 'user_code', 'verification_uri', 'verification_uri_complete'])
  t.match(r.json.user_code, /^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$/)
  t.equal(r.json.verification_uri, `${svc.url}/device`)
  t.equal(r.json.verification_uri_complete, `${svc.url}/device?user_code=${r.json.user_code}`)
  t.equal(r.json.expires_in, 600)
  t.equal(r.json.interval, 3)
  t.ok(r.json.device_code.length >= 40)
  // Only digests are stored.
  const state = new OAuthState(svc.service.services.store)
  t.ok(await state.getDevice(digest(r.json.device_code)))
  t.equal(await state.getDevice(r.json.device_code), undefined)

  const unknown = await post(`${svc.url}/oauth2/device_authorization`, { client_id: 'nope', scope: 'profile:read' })
  t.equal(unknown.status, 401)
  t.equal(unknown.json.error, 'invalid_client')
  const noScope = await post(`${svc.url}/oauth2/device_authorization`, { client_id: id })
  t.same(noScope.json, { error: 'invalid_request', error_description: 'parameter scope is missing' })
  const badScope = await post(`${svc.url}/oauth2/device_authorization`, { client_id: id, scope: 'profile:read,bogus' })
  t.equal(badScope.status, 400)
  t.equal(badScope.json.error, 'invalid_scope')
  const create = await post(`${svc.url}/oauth2/device_authorization`, { client_id: id, scope: 'profile:create' })
  t.equal(create.json.error, 'invalid_scope')
})

t.test('every row of the device session table (spec 3.1)', async t => {
  const svc = await startTestService(t)
  const { client_id: id } = await svc.client(['https://app.example/cb'])
  const { browser, profileId } = await signedInBrowser(svc, 'dora')

  // pending → pending: authorization_pending.
  const s1 = await session(svc, id)
  const p = await poll(svc, id, s1.device_code)
  t.equal(p.status, 400)
  t.equal(p.json.error, 'authorization_pending')
  t.equal(p.headers.get('cache-control'), 'no-store')

  // pending → issued: the user granted access.
  const s2 = await session(svc, id, 'data:heart_rate:read profile:read')
  t.match(await decide(browser, s2.user_code, 'allow'), /Device connected/)
  const ok = await poll(svc, id, s2.device_code)
  t.equal(ok.status, 200)
  t.equal(ok.json.token_type, 'bearer')
  t.equal(ok.json.expires_in, 7776000)
  t.equal(ok.json.refresh_token, undefined)
  const v = await validate(svc.url, ok.json.access_token)
  t.equal(v.json.profile_id, profileId)
  t.same(v.json.scopes, ['data:heart_rate:read', 'profile:read'])
  t.equal(v.json.client_id, id)

  // issued → issued: access token already issued.
  const again = await poll(svc, id, s2.device_code)
  t.equal(again.status, 400)
  t.same(again.json, { error: 'invalid_grant', error_description: 'access token already issued' })

  // pending → denied.
  const s3 = await session(svc, id)
  t.match(await decide(browser, s3.user_code, 'deny'), /Access denied/)
  const denied = await poll(svc, id, s3.device_code)
  t.equal(denied.status, 400)
  t.same(denied.json, { error: 'invalid_grant', error_description: "user didn't grant access" })
  t.same((await poll(svc, id, s3.device_code)).json, { error: 'invalid_grant', error_description: "user didn't grant access" })

  // pending → expired: make the stored session's time run out.
  const s4 = await session(svc, id)
  const state = new OAuthState(svc.service.services.store)
  const key = digest(s4.device_code)
  const rec = await state.getDevice(key)
  if (rec === undefined) throw new Error('no session')
  await svc.service.services.store.batch([state.putDeviceOp(key, { ...rec, expires_at: Date.now() - 1 })], { sync: true })
  const expired = await poll(svc, id, s4.device_code)
  t.equal(expired.status, 400)
  t.equal(expired.json.error, 'expired_token')

  // Another client's id, or an unknown code, never gets the token.
  const other = await svc.client(['https://app.example/cb'])
  const s5 = await session(svc, id)
  t.same((await poll(svc, other.client_id, s5.device_code)).json, { error: 'invalid_grant', error_description: 'unknown device_code' })
  t.same((await poll(svc, id, 'x'.repeat(43))).json, { error: 'invalid_grant', error_description: 'unknown device_code' })
  const noClient = await post(`${svc.url}/oauth2/token`, { grant_type: DEVICE_GRANT, device_code: s5.device_code })
  t.equal(noClient.status, 401)
  t.equal(noClient.json.error, 'invalid_client')
  // A decided user code no longer works at /device.
  const entry = await browser.get('/device')
  const reuse = await browser.post('/device', { csrf: csrfOf(entry.text), user_code: s2.user_code })
  t.equal(reuse.status, 400)
  t.match(reuse.text, /not valid or has expired/)
})

t.test('polling faster than the interval answers slow_down and adds 5 seconds', async t => {
  const svc = await startTestService(t)
  const { client_id: id } = await svc.client(['https://app.example/cb'])
  const s = await session(svc, id)
  t.equal((await poll(svc, id, s.device_code)).json.error, 'authorization_pending')
  const slow = await poll(svc, id, s.device_code)
  t.equal(slow.status, 400)
  t.equal(slow.json.error, 'slow_down')
  const state = new OAuthState(svc.service.services.store)
  t.equal((await state.getDevice(digest(s.device_code)))?.interval, 8)
  const slower = await poll(svc, id, s.device_code)
  t.equal(slower.json.error, 'slow_down')
  t.equal((await state.getDevice(digest(s.device_code)))?.interval, 13)
  // After a gap of at least the interval, the answer is authorization_pending again.
  const key = digest(s.device_code)
  const rec = await state.getDevice(key)
  if (rec === undefined) throw new Error('no session')
  await svc.service.services.store.batch([state.putDeviceOp(key, { ...rec, last_poll_at: Date.now() - 14_000 })], { sync: true })
  t.equal((await poll(svc, id, s.device_code)).json.error, 'authorization_pending')
})

t.test('/device: sign-in first, code prefilled, wrong codes limited to 5 a minute', async t => {
  const svc = await startTestService(t)
  const { client_id: id } = await svc.client(['https://app.example/cb'], { name: 'Pulse <Game> & "Co"' })
  const s = await session(svc, id)
  const anon = new Browser(svc.url)
  const first = await anon.get(`/device?user_code=${s.user_code}`)
  t.equal(first.status, 303)
  t.equal(first.headers.get('location'), `/signin?return_to=${encodeURIComponent(`/device?user_code=${s.user_code}`)}`)

  await svc.user('eve')
  const page = await anon.get('/signin')
  const signed = await anon.post('/signin', { csrf: csrfOf(page.text), username: 'eve', password: 'password123', return_to: `/device?user_code=${s.user_code}` })
  t.equal(signed.status, 303)
  t.equal(signed.headers.get('location'), `/device?user_code=${s.user_code}`)
  const entry = await anon.get(`/device?user_code=${s.user_code}`)
  t.equal(entry.status, 200)
  t.match(entry.text, `value="${s.user_code}"`)
  t.match(entry.text, '<label for="user_code">Code</label>')
  t.equal(entry.headers.get('x-frame-options'), 'DENY')
  t.match(entry.headers.get('content-security-policy'), /frame-ancestors 'none'/)
  const csrf = csrfOf(entry.text)

  // Lower case and without the dash is the same code; the client name is escaped.
  const consent = await anon.post('/device', { csrf, user_code: s.user_code.replace('-', '').toLowerCase() })
  t.equal(consent.status, 200)
  t.match(consent.text, 'Pulse &lt;Game&gt; &amp; &quot;Co&quot;')
  t.notMatch(consent.text, '<Game>')
  t.match(consent.text, '<code>data:heart_rate:read</code>')

  for (let i = 0; i < 5; i++) {
    const wrong = await anon.post('/device', { csrf, user_code: 'BBBB-BBBB' })
    t.equal(wrong.status, 400)
  }
  const blocked = await anon.post('/device', { csrf, user_code: s.user_code })
  t.equal(blocked.status, 429)
  t.match(blocked.text, /Too many wrong codes/)

  const noCsrf = await anon.post('/device', { user_code: s.user_code })
  t.equal(noCsrf.status, 403)
})
