// Real Chromium (playwright-core, Debian's /usr/bin/chromium) through the real
// sign-in, consent and device pages: the authorization code flow with a tiny
// HTTP server as the redirect target, and the device flow with a polling client.
import t from 'tap'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { startTestService } from '../../helpers/service.ts'
import { launch } from '../../helpers/browser.ts'
import { DEVICE_GRANT } from '../../../api/oauth/token.ts'
import { pkcePair, post, validate } from './helpers.ts'

t.test('authorization code flow through the sign-in and consent pages', async t => {
  const svc = await startTestService(t)
  const [browser] = await Promise.all([launch(t), svc.user('olga')])

  // The client's redirect target: receives the code, as the client's web server would.
  let received: (u: URL) => void = () => {}
  const callback = new Promise<URL>(resolve => { received = resolve })
  const target = createServer((req, res) => {
    const u = new URL(req.url ?? '/', 'http://127.0.0.1')
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
    res.end('<!doctype html><title>done</title><p>Signed in to the app.</p>')
    if (u.pathname === '/cb') received(u)
  })
  await new Promise<void>(resolve => target.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>(resolve => target.close(() => { resolve() })))
  const redirectUri = `http://127.0.0.1:${(target.address() as AddressInfo).port}/cb`
  const { client_id: id, client_secret: secret } = await svc.client([redirectUri], { name: 'Heart Overlay' })
  const { verifier, challenge } = pkcePair()

  const page = await browser.newPage()
  const url = `${svc.url}/oauth2/authorize?${new URLSearchParams({ client_id: id, redirect_uri: redirectUri, response_type: 'code', scope: 'data:heart_rate:read profile:read', state: 'st-123', code_challenge: challenge, code_challenge_method: 'S256' }).toString()}`
  await page.goto(url)
  await page.getByLabel('Username').fill('olga')
  await page.getByLabel('Password').fill('password123')
  await page.getByRole('button', { name: 'Sign in' }).click()
  await page.getByRole('button', { name: 'Allow' }).waitFor()
  t.match(await page.textContent('main'), /Heart Overlay asks for access/)
  t.match(await page.textContent('main'), /data:heart_rate:read/)
  await page.getByRole('button', { name: 'Allow' }).click()

  const got = await callback
  t.equal(got.searchParams.get('state'), 'st-123')
  const code = got.searchParams.get('code') ?? ''
  t.ok(code.length >= 40)
  await page.getByText('Signed in to the app.').waitFor()

  const tok = await post(`${svc.url}/oauth2/token`, { grant_type: 'authorization_code', client_id: id, client_secret: secret ?? '', code, redirect_uri: redirectUri, code_verifier: verifier })
  t.equal(tok.status, 200)
  t.equal(tok.json.scope, 'data:heart_rate:read profile:read')
  const v = await validate(svc.url, tok.json.access_token)
  t.equal(v.status, 200)
  t.equal(v.json.client_id, id)
})

t.test('device flow: the browser opens verification_uri_complete, signs in and allows; the polling client gets the token', async t => {
  const svc = await startTestService(t, { oauth: { device_poll_interval: 1 } })
  const [profileId, browser] = await Promise.all([svc.user('pia'), launch(t)])
  const { client_id: id } = await svc.client(['https://app.example/cb'], { name: 'Pulse Mod' })
  const start = await post(`${svc.url}/oauth2/device_authorization`, { client_id: id, scope: 'data:heart_rate:read' })
  t.equal(start.status, 200)
  const session = start.json

  // The device: polls at the interval (growing on slow_down) until an answer other than pending.
  const errors: string[] = []
  let stop = false
  t.teardown(() => { stop = true })
  const polling = (async () => {
    let interval = session.interval as number
    while (!stop) {
      await new Promise(resolve => setTimeout(resolve, interval * 1000 + 100))
      const r = await post(`${svc.url}/oauth2/token`, { grant_type: DEVICE_GRANT, client_id: id, device_code: session.device_code })
      if (r.status === 200) return r.json
      errors.push(r.json.error)
      if (r.json.error === 'slow_down') interval += 5
      else if (r.json.error !== 'authorization_pending') throw new Error(`polling stopped: ${r.text}`)
    }
    return undefined
  })()
  polling.catch(() => undefined) // a failure is reported where it is awaited below

  const page = await browser.newPage()
  await page.goto(session.verification_uri_complete)
  await page.getByLabel('Username').fill('pia')
  await page.getByLabel('Password').fill('password123')
  await page.getByRole('button', { name: 'Sign in' }).click()
  const code = page.getByLabel('Code')
  await code.waitFor()
  t.equal(await code.inputValue(), session.user_code)
  await page.getByRole('button', { name: 'Continue' }).click()
  await page.getByRole('button', { name: 'Allow' }).waitFor()
  t.match(await page.textContent('main'), /Pulse Mod asks for access/)
  t.match(await page.textContent('main'), new RegExp(session.user_code))
  await page.getByRole('button', { name: 'Allow' }).click()
  await page.getByText('You allowed access').waitFor()

  const token = await polling
  t.ok(token)
  t.equal(token.token_type, 'bearer')
  t.equal(errors.filter(e => e !== 'authorization_pending' && e !== 'slow_down').length, 0)
  const v = await validate(svc.url, token.access_token)
  t.equal(v.status, 200)
  t.equal(v.json.profile_id, profileId)
  t.same(v.json.scopes, ['data:heart_rate:read'])
})
