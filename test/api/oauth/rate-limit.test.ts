// The failure limiters under concurrency, over a listening server: a parallel
// burst of wrong passwords, wrong device codes or wrong admin tokens gets
// exactly `limit` checks, and every other request a 429 (the attempt is
// reserved before the slow check, not recorded after it).
import t, { type Test } from 'tap'
import { startTestService } from '../../helpers/service.ts'
import { Browser, call, csrfOf, signedInBrowser, type Answer } from './helpers.ts'

function countBy (answers: Answer[]): Record<number, number> {
  const out: Record<number, number> = {}
  for (const a of answers) out[a.status] = (out[a.status] ?? 0) + 1
  return out
}

function retryAfterOk (t: Test, a: Answer): void {
  const v = Number(a.headers.get('retry-after'))
  t.ok(Number.isInteger(v) && v >= 1 && v <= 60, `Retry-After is 1-60 seconds (${a.headers.get('retry-after') ?? 'missing'})`)
}

t.test('60 concurrent wrong passwords for one user: 10 are checked, 50 get 429', async t => {
  const svc = await startTestService(t)
  await svc.user('otto')
  const b = new Browser(svc.url)
  const csrf = csrfOf((await b.get('/signin')).text)
  const answers = await Promise.all(Array.from({ length: 60 }, async (_, i) =>
    await b.post('/signin', { csrf, username: 'otto', password: `wrong-${i}`, return_to: '/account' })))
  t.same(countBy(answers), { 401: 10, 429: 50 })
  const limited = answers.filter(a => a.status === 429)
  for (const a of limited) t.match(a.text, /Too many failed sign-in attempts/)
  retryAfterOk(t, limited[0] as Answer)
  // The user stays locked out: even the right password waits.
  const right = await b.post('/signin', { csrf, username: 'otto', password: 'password123', return_to: '/account' })
  t.equal(right.status, 429)
  t.equal(right.headers.get('set-cookie'), null, 'no session was started')
})

t.test('successful sign-ins do not use up the limit', async t => {
  const svc = await startTestService(t)
  await svc.user('pia')
  for (let i = 0; i < 12; i++) {
    const r = await new Browser(svc.url).signIn('pia')
    t.equal(r.status, 303, `sign-in ${i + 1}`)
  }
})

t.test('100 concurrent wrong device codes: 5 are checked, 95 get 429', async t => {
  const svc = await startTestService(t)
  const { browser } = await signedInBrowser(svc, 'dora')
  const csrf = csrfOf((await browser.get('/device')).text)
  const answers = await Promise.all(Array.from({ length: 100 }, async () =>
    await browser.post('/device', { csrf, user_code: 'BBBB-BBBB' })))
  t.same(countBy(answers), { 400: 5, 429: 95 })
  const limited = answers.filter(a => a.status === 429)
  for (const a of limited) t.match(a.text, /Too many wrong codes/)
  retryAfterOk(t, limited[0] as Answer)
})

t.test('wrong admin tokens: 10 per address per minute, then 429 with the spec body', async t => {
  const svc = await startTestService(t)
  // Right tokens do not count.
  for (let i = 0; i < 12; i++) await svc.user(`u${i}`)
  const guesses = await Promise.all(Array.from({ length: 25 }, async (_, i) =>
    await call(`${svc.url}/admin/users`, { headers: { authorization: `Bearer wrong-${i}` } })))
  t.same(countBy(guesses), { 401: 10, 429: 15 })
  for (const a of guesses.filter(a => a.status === 401)) t.same(a.json, { error_code: 7005, error_message: 'token_not_found' })
  const limited = guesses.filter(a => a.status === 429)
  for (const a of limited) t.same(a.json, { error_code: 9429, error_message: 'too_many_requests' })
  retryAfterOk(t, limited[0] as Answer)
  // Locked out: the right token waits too, on every admin route and at /operator/signin (one budget).
  const right = await call(`${svc.url}/admin/users`, { headers: { authorization: `Bearer ${svc.adminToken}` } })
  t.equal(right.status, 429)
  t.same(right.json, { error_code: 9429, error_message: 'too_many_requests' })
  t.equal((await call(`${svc.url}/admin/devices`, { headers: { authorization: `Bearer ${svc.adminToken}` } })).status, 429)
  const op = new Browser(svc.url)
  const page = await op.get('/operator/signin')
  const signIn = await op.post('/operator/signin', { csrf: csrfOf(page.text), admin_token: svc.adminToken })
  t.equal(signIn.status, 429)
})
