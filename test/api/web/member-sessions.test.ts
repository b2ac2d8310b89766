// The member page's sessions: listed on /me with chart, zones, HRV and export
// links; the export links answer the session's file to the signed-in member only.
import t from 'tap'
import { startTestService } from '../../helpers/service.ts'

t.test('/me lists the sessions with chart, zones, HRV and working export links', async t => {
  const svc = await startTestService(t)
  const profile = await svc.user('mia', { age: 20 })
  const base = Math.floor((Date.now() - 3_600_000) / 1000) * 1000
  for (let i = 0; i < 10; i++) await svc.service.services.pipeline.submit({ profile_id: profile, measured_at: base + i * 1000, heart_rate: 150, source: 'sim', rr_intervals_ms: [400 + (i % 2) * 10] })

  const form = { 'content-type': 'application/x-www-form-urlencoded' }
  const page = await fetch(`${svc.url}/signin`)
  const cookie = (page.headers.get('set-cookie') ?? '').split(';')[0] ?? ''
  const csrf = /name="csrf" value="([^"]+)"/.exec(await page.text())?.[1] ?? ''
  const signIn = await fetch(`${svc.url}/signin`, { method: 'POST', headers: { ...form, cookie }, body: `csrf=${csrf}&username=mia&password=password123&return_to=%2Fme`, redirect: 'manual' })
  t.equal(signIn.status, 303)
  const session = (signIn.headers.get('set-cookie') ?? '').split(';')[0] ?? ''

  const me = await fetch(`${svc.url}/me`, { headers: { cookie: session } })
  t.equal(me.status, 200)
  const html = await me.text()
  t.match(html, `<h3 id="session-${base}">${new Date(base).toISOString()} · 0:09</h3>`)
  t.match(html, /<svg class="session-chart"[^>]*><polyline [^>]*points="0\.0,[\d.]+ (?:[\d.]+,[\d.]+ ){8}600\.0,[\d.]+"\/><\/svg>/, 'a chart with the 10 readings')
  t.match(html, '<dt>RMSSD</dt><dd>10 ms</dd><dt>SDNN</dt><dd>5 ms</dd><dt>RR artefacts dropped</dt><dd>0</dd>')
  t.match(html, '<td>Zone 3</td><td>70–80 %</td><td>0:09</td>', '150 bpm is 75 % of 200')
  for (const f of ['csv', 'tcx', 'fit']) t.match(html, `href="/me/sessions/${base}/export?format=${f}"`)

  const csv = await fetch(`${svc.url}/me/sessions/${base}/export?format=csv`, { headers: { cookie: session } })
  t.equal(csv.status, 200)
  t.equal(csv.headers.get('content-disposition'), `attachment; filename="hr-relay-session-${base}.csv"`)
  t.equal((await csv.text()).split('\n')[1], `${base},150,400`)
  const anon = await fetch(`${svc.url}/me/sessions/${base}/export?format=csv`)
  t.equal(anon.status, 403)
  t.same(await anon.json(), { error_code: 7009, error_message: 'error_authorization_header_is_not_present', detail: 'sign in first' })
})
