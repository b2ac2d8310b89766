// The bpm widget overlay in real Chromium: live readings from the token-less
// widget stream, colour ranges, the heart's beat, no-signal, a revoked widget.
import t from 'tap'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startTestService } from '../../helpers/service.ts'
import { ARTIFACTS, data, dataIs, launch, newPage, postReading, style, text, textIs } from '../../helpers/browser.ts'

const META = 'bf6bdf21-10a7-4a28-97ec-a239e6c77f8b'

t.test('widget overlay follows readings, colours by range, goes no-signal, and 404s when revoked', async t => {
  const svc = await startTestService(t)
  await svc.user('streamer')
  const write = await svc.token('streamer', 'data:heart_rate:write')
  const widgets = await svc.token('streamer', 'widgets:update widgets:read')
  const created = await fetch(`${svc.url}/api/v1/widgets`, {
    method: 'POST',
    headers: { authorization: `Bearer ${widgets}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      meta_id: META,
      name: 'Stream bpm',
      configuration: { ranges: [{ from: 0, to: 99, color: '#00ff00' }, { from: 100, to: 250, color: 'rgb(255, 0, 0)' }], heartColor: '#3366ff', heartEnabled: true, font: 'DejaVu Sans' }
    })
  })
  t.equal(created.status, 200)
  const widgetId = ((await created.json()) as { widget: { id: string } }).widget.id

  const browser = await launch(t)
  const errors: string[] = []
  const { page } = await newPage(browser, errors)
  // The page's clock runs with real time and jumps over the wait for no signal.
  await page.clock.install()
  const res = await page.goto(`${svc.url}/widgets/${widgetId}/view`)
  t.equal(res?.status(), 200)
  t.match(res?.headers()['content-security-policy'] ?? '', /script-src 'self'/)
  // Transparent for OBS.
  t.equal(await style(page, 'body', 'background-color'), 'rgba(0, 0, 0, 0)')
  t.equal(await style(page, '#heart', 'fill'), 'rgb(51, 102, 255)')
  t.match(await style(page, '#widget', 'font-family'), /DejaVu Sans/)
  await dataIs(page, '#widget', 'state', 'waiting')

  t.equal(await postReading(svc.url, write, 80), 200)
  await textIs(page, '#bpm', '80')
  t.equal(await style(page, '#bpm', 'color'), 'rgb(0, 255, 0)', 'below 100: green range')
  t.equal(await style(page, '#heart', 'animation-duration'), '0.75s', '60/80 s per beat')
  t.equal(await data(page, '#widget', 'state'), 'live')

  t.equal(await postReading(svc.url, write, 120), 200)
  await textIs(page, '#bpm', '120')
  t.equal(await style(page, '#bpm', 'color'), 'rgb(255, 0, 0)', 'across the boundary: red range')
  t.equal(await style(page, '#heart', 'animation-duration'), '0.5s')

  for (const bpm of [121, 99, 100]) {
    t.equal(await postReading(svc.url, write, bpm), 200)
    await textIs(page, '#bpm', String(bpm))
  }
  t.equal(await style(page, '#bpm', 'color'), 'rgb(255, 0, 0)', '100 is in the second range')
  await page.screenshot({ path: join(ARTIFACTS, 'widget-1920x1080.png') })

  // Nothing for 5 s (on the page's clock): the no-signal state.
  await page.clock.fastForward(5000)
  await dataIs(page, '#widget', 'state', 'no-signal', 30_000)
  t.equal(await text(page, '#bpm'), '--')
  t.equal(await text(page, '#status'), 'no signal')
  t.equal(await style(page, '#heart', 'animation-name'), 'none', 'the heart stops')
  // And back on the next reading.
  t.equal(await postReading(svc.url, write, 90), 200)
  await textIs(page, '#bpm', '90')
  t.equal(await style(page, '#bpm', 'color'), 'rgb(0, 255, 0)')

  // Revoked: the page answers 404.
  const del = await fetch(`${svc.url}/api/v1/widgets/${widgetId}`, { method: 'DELETE', headers: { authorization: `Bearer ${widgets}` } })
  t.equal(del.status, 200)
  const gone = await fetch(`${svc.url}/widgets/${widgetId}/view`)
  t.equal(gone.status, 404)
  t.match(await gone.text(), /does not exist or was revoked/)
  const unknown = await fetch(`${svc.url}/widgets/00000000-0000-4000-8000-000000000000/view`)
  t.equal(unknown.status, 404)
  t.same(errors, [], 'no page errors')
})

t.test('the overlay reconnects by itself when the server goes away and comes back', async t => {
  const dataDir = await mkdtemp(join(tmpdir(), 'hr-relay-web-'))
  t.teardown(async () => { await rm(dataDir, { recursive: true, force: true }) })
  const first = await startTestService(t, { data_dir: dataDir })
  const port = new URL(first.url).port
  const profile = await first.user('streamer')
  const write = await first.token('streamer', 'data:heart_rate:write')
  const w = await first.service.services.widgets.create(profile, { meta_id: META, name: 'bpm', configuration: {} })

  const browser = await launch(t)
  const errors: string[] = []
  const { page } = await newPage(browser, errors)
  // The page's clock runs with real time and jumps over the reconnect backoff.
  await page.clock.install()
  t.equal((await page.goto(`${first.url}/widgets/${w.id}/view`))?.status(), 200)
  await dataIs(page, '#widget', 'state', 'waiting')
  t.equal(await postReading(first.url, write, 70), 200)
  await textIs(page, '#bpm', '70')

  await first.stop()
  await dataIs(page, '#widget', 'state', 'reconnecting')
  t.equal(await text(page, '#status'), 'reconnecting…')

  // Same data directory and port: the widget, the token and the page's URL stay valid.
  const second = await startTestService(t, { data_dir: dataDir, http: { port: Number(port) } })
  t.equal(second.url, first.url)
  // The next attempt is due within the longest backoff (10 s): fire it now.
  await page.clock.fastForward(10_000)
  await dataIs(page, '#widget', 'state', 'waiting', 30_000)
  t.equal(await postReading(second.url, write, 71), 200)
  await textIs(page, '#bpm', '71')
  t.equal(await data(page, '#widget', 'state'), 'live')
  t.ok(errors.every(e => /WebSocket connection .* failed|ERR_CONNECTION_REFUSED/.test(e)), 'only the refused reconnects were logged')
})
