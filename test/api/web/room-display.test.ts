// The room display in real Chromium, driven by the operator pages: operator
// sign-in with the admin token, a room created from the page, tiles that
// appear when a member is added and disappear when removed, zone colours,
// per-tile no-signal, and a revoked display link.
import t from 'tap'
import { join } from 'node:path'
import { startTestService } from '../../helpers/service.ts'
import { ARTIFACTS, data, focusedId, launch, newPage, postReading, style, text, textIs, unlabelled, until } from '../../helpers/browser.ts'

interface PageElement { getAttribute (name: string): string | null, textContent: string | null }
declare const document: { querySelectorAll (selector: string): ArrayLike<PageElement>, querySelector (selector: string): PageElement | null }

const tileCount = (n: number) => (expected: number): boolean => document.querySelectorAll('.tile').length === expected

t.test('room display gains and loses tiles as the operator adds and removes members', async t => {
  const svc = await startTestService(t)
  const [alice, , carol, browser] = await Promise.all([svc.user('alice', { age: 40 }), svc.user('bob', { max_heart_rate: 200 }), svc.user('carol'), launch(t)])
  const [aliceWrite, bobWrite, carolWrite] = await Promise.all(['alice', 'bob', 'carol'].map(async u => await svc.token(u, 'data:heart_rate:write')))
  const tokens = { alice: aliceWrite ?? '', bob: bobWrite ?? '', carol: carolWrite ?? '' }
  const errors: string[] = []
  const opErrors: string[] = []
  const { page: op } = await newPage(browser, opErrors)

  // Deny by default: no operator session, no page.
  const res = await op.goto(`${svc.url}/operator/rooms`)
  t.equal(new URL(op.url()).pathname, '/operator/signin', 'redirected to the operator sign-in')
  t.equal(res?.status(), 200)
  await op.getByLabel('Admin token').fill('not-the-token')
  const wrong = await Promise.all([op.waitForNavigation(), op.getByRole('button', { name: 'Sign in' }).click()])
  t.equal(wrong[0]?.status(), 401)
  t.equal(await text(op, '[role=alert]'), 'That is not the admin token.')
  // Keyboard only: the skip link, the account form, then the token field; Enter submits.
  await op.goto(`${svc.url}/operator/signin`)
  await op.keyboard.press('Tab')
  t.equal(await op.evaluate('document.activeElement.textContent'), 'Skip to content')
  await op.keyboard.press('Tab')
  t.equal(await focusedId(op), 'operator-name', 'the operator account form comes first')
  // Past its password field and Log in button: the admin token's form.
  for (let i = 0; i < 3; i++) await op.keyboard.press('Tab')
  t.equal(await focusedId(op), 'admin-token')
  await op.keyboard.type(svc.adminToken)
  await Promise.all([op.waitForURL(`${svc.url}/operator`), op.keyboard.press('Enter')])
  t.equal(await text(op, 'h1'), 'Relay overview')
  t.same(await unlabelled(op), [])

  await op.goto(`${svc.url}/operator/rooms`)
  await op.getByLabel('Room name').fill('Spin class')
  await Promise.all([op.waitForURL(/done=created/), op.getByRole('button', { name: 'Create room' }).click()])
  const link = await op.locator('a.display-link').getAttribute('href')
  t.same(await unlabelled(op), [], 'every control on /operator/rooms has a label')
  t.match(link, /\/rooms\/[0-9a-f-]{36}\/display\?display_id=[0-9a-f-]{36}$/)
  if (link === null) throw new Error('no display link')

  const { page: screen } = await newPage(browser, errors)
  // The page's clock: it runs with real time, and jumps over the waits for no signal and for a reconnect.
  await screen.clock.install()
  const shown = await screen.goto(link)
  t.equal(shown?.status(), 200)
  t.equal(await text(screen, '#room-name'), 'Spin class')
  await until(screen, ([s, v]) => document.querySelector(s)?.getAttribute('data-connection') === v, ['#room', 'waiting'] as const)
  t.equal(await screen.locator('.tile').count(), 0)

  const addMember = async (username: string, displayName: string): Promise<void> => {
    const room = op.locator('section.room-item').first()
    await room.getByLabel('User').selectOption(username)
    await room.getByLabel('Display name (shown on the screen)').fill(displayName)
    await Promise.all([op.waitForURL(/done=added/), room.getByRole('button', { name: 'Save member' }).click()])
  }

  await addMember('alice', 'Alice')
  await until(screen, tileCount(1), 1)
  t.equal(await text(screen, `.tile[data-profile-id="${alice}"] .name`), 'Alice')
  t.equal(await data(screen, `.tile[data-profile-id="${alice}"]`, 'state'), 'no-signal')

  // 144 of 220 - 40 = 180 is 80 %: zone 4.
  const now = Date.now()
  t.equal(await postReading(svc.url, tokens.alice, 140, now - 2000), 200)
  t.equal(await postReading(svc.url, tokens.alice, 144, now), 200)
  await textIs(screen, `.tile[data-profile-id="${alice}"] .num`, '144')
  // The new tile's maximum comes with the state the page fetches when the member appears; a reading may come first.
  await textIs(screen, `.tile[data-profile-id="${alice}"] .zone`, '80% · Zone 4 · hard')
  t.equal(await style(screen, `.tile[data-profile-id="${alice}"]`, 'background-color'), 'rgb(255, 194, 51)')
  t.match(await text(screen, `.tile[data-profile-id="${alice}"] .kcal`), /^\d+ kcal today$/)
  t.not(await screen.locator(`.tile[data-profile-id="${alice}"] polyline`).getAttribute('points'), '', 'trend line drawn')

  // Two minutes of earlier readings for Bob and Carol: their tiles start with a trend and calories.
  const base = Date.now() - 120_000
  for (let i = 0; i < 30; i++) {
    const at = base + i * 4000
    t.equal(await postReading(svc.url, tokens.bob, 110 + (i % 6) * 2, at), 200)
    t.equal(await postReading(svc.url, tokens.carol, 150 + i, at), 200)
  }
  await addMember('bob', 'Bob')
  await addMember('carol', 'Carol')
  await until(screen, tileCount(3), 3)
  t.equal(await postReading(svc.url, tokens.bob, 120), 200)
  t.equal(await postReading(svc.url, tokens.carol, 171), 200)
  await textIs(screen, `.tile[data-profile-id="${carol}"] .num`, '171')
  // Carol has neither max nor age: the default 190; 171/190 = 90 %, zone 5.
  t.equal(await text(screen, `.tile[data-profile-id="${carol}"] .zone`), '90% · Zone 5 · maximum')
  await until(screen, () => document.querySelectorAll('.tile[data-state="live"]').length === 3, undefined)
  for (const [name, token, bpm] of [['alice', tokens.alice, 146], ['bob', tokens.bob, 121], ['carol', tokens.carol, 170]] as const) {
    t.equal(await postReading(svc.url, token, bpm), 200, `reading of ${name}`)
  }
  await textIs(screen, `.tile[data-profile-id="${carol}"] .num`, '170')
  t.not(await text(screen, `.tile[data-profile-id="${carol}"] .kcal`), '0 kcal today', 'calories of the earlier readings')
  await screen.screenshot({ path: join(ARTIFACTS, 'room-display-1920x1080.png') })

  // Removing Bob from the operator page removes his tile.
  const bobRow = op.locator('tr', { hasText: 'Bob' })
  await Promise.all([op.waitForURL(/done=removed/), bobRow.getByRole('button', { name: /Remove Bob/ }).click()])
  await until(screen, tileCount(2), 2)
  t.same(await screen.locator('.tile .name').allTextContents(), ['Alice', 'Carol'])

  // Without readings a tile shows no signal (10 s after the last one, on the page's clock).
  await screen.clock.fastForward(10_000)
  await until(screen, ([s, v]) => document.querySelector(s)?.getAttribute('data-state') === v, [`.tile[data-profile-id="${alice}"]`, 'no-signal'] as const, 30_000)
  t.equal(await text(screen, `.tile[data-profile-id="${alice}"] .num`), '--')

  // Revoking the display link: the old link answers 404, the new one works.
  await Promise.all([op.waitForURL(/done=revoked/), op.getByRole('button', { name: /Revoke display link/ }).click()])
  const fresh = await op.locator('a.display-link').getAttribute('href')
  t.not(fresh, link)
  t.equal((await fetch(link)).status, 404)
  t.equal((await fetch(link.replace('/display?', '/display/state?'))).status, 404)
  t.equal((await fetch(fresh ?? '')).status, 200)
  // The open display loses its stream, asks again after a second's backoff (the page's clock jumps over
  // it) and shows that its link was revoked.
  await until(screen, ([s, v]: [string, string[]]) => v.includes(document.querySelector(s)?.getAttribute('data-connection') ?? ''), ['#room', ['reconnecting', 'gone']])
  await screen.clock.fastForward(1250)
  await until(screen, ([s, v]) => document.querySelector(s)?.getAttribute('data-connection') === v, ['#room', 'gone'] as const, 30_000)
  t.equal(await text(screen, '#connection'), 'This display link was revoked. Ask the operator for the new link.')
  t.same(errors.filter(e => !/(status of|response code:) 40[34]/.test(e)), [], 'no errors on the display besides the refused reconnect')
  t.equal(opErrors.length, 1, 'one console error on the operator pages: the refused sign-in')
  t.match(opErrors[0], /status of 401/)
})

t.test('operator forms need the operator session and the CSRF token', async t => {
  const svc = await startTestService(t)
  const form = { 'content-type': 'application/x-www-form-urlencoded' }
  const anon = await fetch(`${svc.url}/operator/rooms`, { method: 'POST', headers: form, body: 'name=x', redirect: 'manual' })
  t.equal(anon.status, 403)
  t.same(svc.service.services.rooms.list(), [], 'no room created')
  // A member session is not an operator session, even with its CSRF token.
  const page = await fetch(`${svc.url}/operator/signin`)
  const cookie = (page.headers.get('set-cookie') ?? '').split(';')[0] ?? ''
  const csrf = /name="csrf" value="([^"]+)"/.exec(await page.text())?.[1] ?? ''
  t.ok(csrf.length > 10)
  const noOp = await fetch(`${svc.url}/operator/rooms`, { method: 'POST', headers: { ...form, cookie }, body: `csrf=${csrf}&name=x`, redirect: 'manual' })
  t.equal(noOp.status, 403)
  // Sign in; then a wrong CSRF token is refused and the right one works.
  const signIn = await fetch(`${svc.url}/operator/signin`, { method: 'POST', headers: { ...form, cookie }, body: `csrf=${csrf}&admin_token=${svc.adminToken}`, redirect: 'manual' })
  t.equal(signIn.status, 303)
  t.equal(signIn.headers.get('location'), '/operator')
  const opCookie = (signIn.headers.get('set-cookie') ?? '').split(';')[0] ?? ''
  t.not(opCookie, cookie, 'a new session id on sign-in')
  const rooms = await fetch(`${svc.url}/operator/rooms`, { headers: { cookie: opCookie } })
  t.equal(rooms.status, 200)
  const opCsrf = /name="csrf" value="([^"]+)"/.exec(await rooms.text())?.[1] ?? ''
  const bad = await fetch(`${svc.url}/operator/rooms`, { method: 'POST', headers: { ...form, cookie: opCookie }, body: `csrf=${csrf}&name=x`, redirect: 'manual' })
  t.equal(bad.status, 403)
  const good = await fetch(`${svc.url}/operator/rooms`, { method: 'POST', headers: { ...form, cookie: opCookie }, body: `csrf=${opCsrf}&name=Gym`, redirect: 'manual' })
  t.equal(good.status, 303)
  t.same(svc.service.services.rooms.list().map(r => r.name), ['Gym'])
  // The old (pre-sign-in) session id no longer works.
  const old = await fetch(`${svc.url}/operator`, { headers: { cookie }, redirect: 'manual' })
  t.equal(old.status, 303)
})

t.test('a display that loaded slowly still draws the newest readings in the trend', async t => {
  // The page's first estimate of the server's clock comes from its HTML; a page
  // whose script ran 3 s after that starts 3 s behind. Readings timed by the server must
  // still count as now, not as the future (the trend drops future samples).
  const svc = await startTestService(t)
  const [id, browser] = await Promise.all([svc.user('dana', { max_heart_rate: 200 }), launch(t)])
  const token = await svc.token('dana', 'data:heart_rate:write')
  const rooms = svc.service.services.rooms
  const room = await rooms.create('Late screen')
  await rooms.upsertMember(room.room_id, id, { display_name: 'Dana' })
  const errors: string[] = []
  const { page } = await newPage(browser, errors)
  // A slow load: the page script starts 3 s after the server wrote the page's
  // clock into its HTML (the lag is the condition under test). The page's clock
  // reads 3 s ahead while the page loads, as the real clock would after 3 s, and
  // is set back to the real time once the script has run, without waiting the 3 s.
  await page.clock.install({ time: Date.now() + 3000 })
  await page.goto(`${svc.url}/rooms/${room.room_id}/display?display_id=${room.display_id}`)
  // The stream is open once the page leaves 'connecting' (a member without readings: 'no-signal').
  await until(page, ([s, v]) => !['', v].includes(document.querySelector(s)?.getAttribute('data-connection') ?? ''), ['#room', 'connecting'] as const)
  t.ok(await page.evaluate('Date.now()') as number >= Date.now() + 2000, 'the script started with the page\'s clock 3 s past the server\'s')
  await page.clock.setSystemTime(Date.now())
  const now = Date.now()
  t.equal(await postReading(svc.url, token, 120, now - 2000), 200)
  t.equal(await postReading(svc.url, token, 126, now), 200)
  await textIs(page, `.tile[data-profile-id="${id}"] .num`, '126')
  const points = await page.locator(`.tile[data-profile-id="${id}"] polyline`).getAttribute('points')
  t.equal(points?.split(' ').length, 2, 'both readings are on the trend line')

  // A member added while the display runs: the tile comes from room_member_updated, and the maximum the server
  // resolves (here 220 - 40 = 180) from the state the page then fetches. Readings that arrive before that state show
  // with the default maximum of 190; the state, once it arrives, corrects the live tile without a further reading.
  const eve = await svc.user('eve', { age: 40 })
  const eveToken = await svc.token('eve', 'data:heart_rate:write')
  let release = (): void => {}
  const held = new Promise<void>(resolve => { release = resolve })
  await page.route(/\/display\/state\?/, async route => { await held; await route.continue() })
  await rooms.upsertMember(room.room_id, eve, { display_name: 'Eve' })
  t.equal(await postReading(svc.url, eveToken, 144), 200)
  await textIs(page, `.tile[data-profile-id="${eve}"] .num`, '144')
  t.equal(await text(page, `.tile[data-profile-id="${eve}"] .zone`), '76% · Zone 3 · moderate', 'before the state: the default maximum')
  release()
  await textIs(page, `.tile[data-profile-id="${eve}"] .zone`, '80% · Zone 4 · hard')
  t.equal(await text(page, `.tile[data-profile-id="${eve}"] .num`), '144')
  t.same(errors, [])
})
