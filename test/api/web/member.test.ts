// Member pages in real Chromium: sign-in, today's uPlot chart and statistics,
// the widget editor (create, edit, revoke), the game-mod form, and
// disconnecting an app after which its token answers 401.
import t from 'tap'
import { startTestService } from '../../helpers/service.ts'
import { join } from 'node:path'
import { ARTIFACTS, launch, newPage, postReading, text, unlabelled, until } from '../../helpers/browser.ts'

interface PageElement { getAttribute (name: string): string | null }
declare const document: { querySelector (selector: string): PageElement | null }

t.test('a member signs in, sees today, edits widgets and game mod, and disconnects an app', async t => {
  const svc = await startTestService(t)
  const [profile, browser] = await Promise.all([svc.user('mia', { premium: 'trial', age: 35, weight_kg: 60, sex: 'female' }), launch(t)])
  const write = await svc.token('mia', 'data:heart_rate:write')
  const base = Date.now() - 60_000
  for (let i = 0; i < 13; i++) t.equal(await postReading(svc.url, write, 100 + i, base + i * 4000), 200)

  const errors: string[] = []
  const { page } = await newPage(browser, errors)

  // Deny by default: /me sends an anonymous visitor to the sign-in page.
  await page.goto(`${svc.url}/me`)
  t.equal(new URL(page.url()).pathname, '/signin')
  await page.getByLabel('Username').fill('mia')
  await page.getByLabel('Password').fill('password123')
  await Promise.all([page.waitForURL(`${svc.url}/me`), page.getByRole('button', { name: 'Sign in' }).click()])
  t.equal(await text(page, 'h1'), 'Today')
  t.equal(await text(page, '#latest-bpm'), '112')

  // The chart is uPlot (a canvas inside .uplot) with the 13 readings.
  await until(page, () => document.querySelector('#chart')?.getAttribute('data-points') === '13', undefined)
  t.equal(await page.locator('#chart .uplot canvas').count(), 1)
  t.equal(await text(page, '#chart-status'), '13 readings today, latest 112 bpm.')
  t.same(await unlabelled(page), [], 'every control on /me has a label')
  await page.screenshot({ path: join(ARTIFACTS, 'member-today.png'), fullPage: true })
  const stats24 = page.locator('section[aria-labelledby="stats-24h"]')
  t.equal(await stats24.locator('dd').nth(0).textContent(), '106 bpm', 'average')
  t.equal(await stats24.locator('dd').nth(2).textContent(), '112 bpm', 'maximum')
  t.equal(await stats24.locator('dd').nth(3).textContent(), '1 min', '48 s streamed')

  // Widgets: create with the editor, open the overlay link, edit, revoke.
  await page.getByRole('link', { name: 'Widgets' }).click()
  t.same(await unlabelled(page), [], 'every control on /me/widgets has a label')
  const create = page.locator('section[aria-labelledby="new-widget"]')
  await create.getByLabel('Name').fill('Twitch overlay')
  await create.getByLabel('Range 1 to (bpm)').fill('120')
  await create.getByLabel('Range 1 colour').fill('#00ff00')
  await create.getByLabel('Heart colour').fill('purple')
  await Promise.all([page.waitForURL(/done=created/), create.getByRole('button', { name: 'Create widget' }).click()])
  t.equal(await text(page, '[role=status]'), 'Widget created.')
  const [widget] = await svc.service.services.widgets.list(profile)
  t.ok(widget)
  if (widget === undefined) return
  t.equal(widget.name, 'Twitch overlay')
  t.same(widget.configuration, {
    ranges: [{ from: 0, to: 120, color: '#00ff00' }, { from: 100, to: 139, color: '#ffd60a' }, { from: 140, to: 250, color: '#ff453a' }],
    heartColor: 'purple',
    heartEnabled: true
  })
  const overlay = await page.locator('a.overlay-link').getAttribute('href')
  t.equal(overlay, `${svc.url}/widgets/${widget.id}/view`)

  const item = page.locator('section.widget-item').first()
  await item.getByLabel('Range 3 from (bpm)').fill('')
  await item.getByLabel('Range 3 to (bpm)').fill('')
  await item.getByLabel('Range 3 colour').fill('')
  await item.getByLabel('Show the beating heart').uncheck()
  await item.getByLabel(/^Font family/).fill('DejaVu Sans')
  await Promise.all([page.waitForURL(/done=saved/), item.getByRole('button', { name: 'Save Twitch overlay' }).click()])
  t.same((await svc.service.services.widgets.get(widget.id))?.configuration, {
    ranges: [{ from: 0, to: 120, color: '#00ff00' }, { from: 100, to: 139, color: '#ffd60a' }],
    heartColor: 'purple',
    heartEnabled: false,
    font: 'DejaVu Sans'
  })
  // A bad range is refused with a message, nothing saved.
  await item.getByLabel('Range 1 colour').fill('url(javascript:alert(1))')
  const bad = await Promise.all([page.waitForNavigation(), page.locator('section.widget-item').first().getByRole('button', { name: 'Save Twitch overlay' }).click()])
  t.equal(bad[0]?.status(), 400)
  t.equal(await text(page, '[role=alert]'), 'Range 1: the colour must be like #ff0000, red or rgb(255,0,0).')

  const { page: obs } = await newPage(browser, errors)
  t.equal((await obs.goto(overlay ?? ''))?.status(), 200)
  t.equal(await obs.locator('#heart').isHidden(), true, 'heart disabled by the configuration')
  await page.goto(`${svc.url}/me/widgets`)
  await Promise.all([page.waitForURL(/done=revoked/), page.getByRole('button', { name: 'Revoke Twitch overlay' }).click()])
  t.equal((await fetch(overlay ?? '')).status, 404)
  // The open overlay loses its stream, finds the widget gone, and says so instead of retrying.
  await until(obs, () => document.querySelector('#widget')?.getAttribute('data-state') === 'gone', undefined)
  t.equal(await text(obs, '#status'), 'widget revoked')

  // Game mod.
  await page.getByRole('link', { name: 'Game mod' }).click()
  t.same(await unlabelled(page), [], 'every control on /me/game-mod has a label')
  await page.getByLabel('Disable start').selectOption('true')
  await page.getByLabel('Death (bpm)').fill('185')
  await page.getByLabel('Position').fill('top-left')
  await Promise.all([page.waitForURL(/done=saved/), page.getByRole('button', { name: 'Save configuration' }).click()])
  const gm = await svc.service.services.gameMod.get(profile)
  t.equal(gm?.disable_start, true)
  t.equal(gm?.death_bpm, 185)
  t.equal(gm?.position, 'top-left')
  t.equal(gm?.scale, null)
  t.equal(await page.getByLabel('Death (bpm)').inputValue(), '185')

  // An app gets a token through the implicit grant (consent in the browser) ...
  const redirect = `${svc.url}/callback`
  const app = await svc.client([redirect], { name: 'Pulse Bot' })
  await page.goto(`${svc.url}/oauth2/authorize?${new URLSearchParams({ response_type: 'token', client_id: app.client_id, redirect_uri: redirect, scope: 'data:heart_rate:read', state: 'xyz123' }).toString()}`)
  await Promise.all([page.waitForURL(/\/callback#/), page.getByRole('button', { name: 'Allow' }).click()])
  const token = new URLSearchParams(new URL(page.url()).hash.slice(1)).get('access_token') ?? ''
  t.match(token, /^[0-9a-f-]{36}$/)
  const validate = async (): Promise<number> => (await fetch(`${svc.url}/api/v1/token/validate`, { headers: { authorization: `Bearer ${token}` } })).status
  t.equal(await validate(), 200)

  // ... and the member disconnects it from /me.
  await page.goto(`${svc.url}/me`)
  t.equal(await page.getByRole('button', { name: 'Disconnect Pulse Bot' }).count(), 1)
  await Promise.all([page.waitForURL(`${svc.url}/account/apps`), page.getByRole('button', { name: 'Disconnect Pulse Bot' }).click()])
  t.equal(await validate(), 401, 'the disconnected app\'s token no longer works')
  await page.goto(`${svc.url}/me`)
  t.equal(await page.getByRole('button', { name: 'Disconnect Pulse Bot' }).count(), 0)

  const unexpected = errors.filter(e => !/status of 40[04]|Unexpected response code: 404/.test(e))
  t.same(unexpected, [], 'no page errors besides the expected 400 and 404 loads')
})

t.test('member routes refuse without a session or CSRF token', async t => {
  const svc = await startTestService(t)
  const form = { 'content-type': 'application/x-www-form-urlencoded' }
  const me = await fetch(`${svc.url}/me/widgets`, { redirect: 'manual' })
  t.equal(me.status, 303)
  t.equal(me.headers.get('location'), '/signin?return_to=%2Fme%2Fwidgets')
  const data = await fetch(`${svc.url}/me/readings/today`)
  t.equal(data.status, 403)
  t.equal((await data.json() as { error_code: number }).error_code, 7009)
  const post = await fetch(`${svc.url}/me/game-mod`, { method: 'POST', headers: form, body: 'death_bpm=1', redirect: 'manual' })
  t.equal(post.status, 403)
  const notForm = await fetch(`${svc.url}/me/game-mod`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}', redirect: 'manual' })
  t.equal(notForm.status, 400)
})
