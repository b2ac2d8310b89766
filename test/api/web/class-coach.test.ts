// The coach's tablet (issue 43) in real Chromium, signed in as an operator
// with the coach role: start a class from the page, live tiles with "no
// signal" by the display's 10 s rule and the class's alerts, a member's last
// ten minutes on a tap, the "hide from display" switch that removes the member
// from an open display, end; refusals of the class engine as clear messages;
// the JSON routes and the page deny without an operator session. The class
// engine is a test double publishing room_class messages through the real hub.
import t from 'tap'
import type { Page } from 'playwright-core'
import { startTestService } from '../../helpers/service.ts'
import { data, launch, newPage, postReading, text, textIs, unlabelled, until } from '../../helpers/browser.ts'
import { ClassDouble } from './class-double.ts'
import { screenshot } from './class-screens.ts'

interface PageElement { getAttribute (name: string): string | null, hidden: boolean, submit (): void, value: string }
declare const document: { querySelector (selector: string): PageElement | null, getElementById (id: string): PageElement | null }

const PASSWORD = 'coach-password-1'

async function signIn (page: Page, url: string): Promise<void> {
  await page.goto(`${url}/operator/signin`)
  await page.getByLabel('Name').fill('coachcarla')
  await page.getByLabel('Password').fill(PASSWORD)
  await Promise.all([page.waitForURL(`${url}/operator`), page.getByRole('button', { name: 'Log in' }).click()])
}

const tile = (id: string): string => `.ctile[data-profile-id="${id}"]`

t.test('a coach runs a class from the tablet', async t => {
  const svc = await startTestService(t)
  const people = ['Alice', 'Bob', 'Carol']
  const [browser, ...ids] = await Promise.all([launch(t), ...people.map(async p => await svc.user(p.toLowerCase(), { max_heart_rate: 200 }))])
  const [alice, bob, carol] = ids as [string, string, string]
  const rooms = svc.service.services.rooms
  const room = await rooms.create('Spin')
  for (const [i, id] of ids.entries()) await rooms.upsertMember(room.room_id, id, { display_name: people[i] ?? '' })
  await svc.admin('POST', '/admin/operators', { name: 'coachcarla', role: 'coach', password: PASSWORD })
  const coachUrl = `${svc.url}/operator/rooms/${room.room_id}/coach`

  const errors: string[] = []
  const { page } = await newPage(browser, errors)
  // Deny by default: no session, no page and no JSON.
  await page.goto(coachUrl)
  t.equal(new URL(page.url()).pathname, '/operator/signin')
  for (const path of [`/operator/rooms/${room.room_id}/coach/state`, `/operator/rooms/${room.room_id}/coach/members/${alice}/readings`]) {
    const res = await fetch(svc.url + path)
    t.equal(res.status, 403, path)
    t.match(await res.json(), { error_code: 9403 })
  }
  await signIn(page, svc.url)

  const classes = ClassDouble.install(svc)
  // From the rooms page and from the navigation.
  await page.goto(`${svc.url}/operator/rooms`)
  await Promise.all([page.waitForURL(coachUrl), page.getByRole('link', { name: 'Coach page of Spin' }).click()])
  await page.goto(`${svc.url}/operator/coach`)
  t.equal(page.url(), coachUrl, 'the Coach entry of the navigation leads to the only room')
  await page.setViewportSize({ width: 1280, height: 720 })
  t.same(await unlabelled(page), [], 'every control has a label')
  t.equal(await text(page, '#coach-class-status'), 'No class is running.')
  await until(page, open => open.includes(document.querySelector('#coach')?.getAttribute('data-connection') ?? ''), ['waiting', 'live'])

  await page.getByLabel('Class name').fill('Spin 18:00')
  await page.getByLabel('Planned length (minutes)').fill('30')
  await Promise.all([page.waitForURL(/done=started$/), page.getByRole('button', { name: 'Start class' }).click()])
  t.same(classes.calls[0], ['start', room.room_id, { name: 'Spin 18:00', minutes: 30 }])
  t.equal(await text(page, '[role=status].notice'), 'Class started.')
  t.match(await text(page, '#coach-class-status'), /^Spin 18:00 · 0:[0-5]\d elapsed · (30:00|29:[0-5]\d) left$/)
  t.equal(await page.locator('#start-form').isHidden(), true)
  await until(page, open => open.includes(document.querySelector('#coach')?.getAttribute('data-connection') ?? ''), ['waiting', 'live'])

  // The display is open on the gym's screen.
  const { page: display } = await newPage(browser, errors)
  await display.goto(`${svc.url}/rooms/${room.room_id}/display?display_id=${room.display_id}`)
  await until(display, c => document.querySelector('#room')?.getAttribute('data-mode') === c, 'class')

  // Live tiles: Alice live; Bob's last reading is 5 s old, so he shows "no signal" 5 s later (the display's 10 s rule).
  const write = await Promise.all(['alice', 'bob', 'carol'].map(async u => await svc.token(u, 'data:heart_rate:write')))
  t.equal(await postReading(svc.url, write[0] ?? '', 150), 200)
  t.equal(await postReading(svc.url, write[1] ?? '', 130, Date.now() - 5000), 200)
  t.equal(await postReading(svc.url, write[2] ?? '', 192), 200)
  await textIs(page, `${tile(alice)} .num`, '150')
  t.equal(await text(page, `${tile(alice)} .zone`), '75% · Zone 3 · moderate')
  await textIs(page, `${tile(bob)} .num`, '130')
  await until(page, s => document.querySelector(s)?.getAttribute('data-state') === 'no-signal', tile(bob))
  t.equal(await text(page, `${tile(bob)} .zone`), 'no signal')
  t.equal(await text(page, `${tile(bob)} .num`), '--')

  // An alert: the tile is highlighted and listed on top.
  classes.update(room.room_id, { [carol]: { alert: true, effort_points: 4 }, [alice]: { effort_points: 3 } })
  await until(page, s => document.querySelector(s)?.getAttribute('data-alert') === 'true', tile(carol))
  t.equal(await text(page, '#alerts li'), 'Carol: at or above 95 % of their maximum for a minute')
  t.equal(await text(page, `${tile(carol)} .points`), '4 points')
  t.equal(await data(page, tile(alice), 'alert'), null)
  await screenshot(page, 'class-coach.png')

  // Tap Alice: her last ten minutes.
  await page.locator(`${tile(alice)} .ctile-open`).click()
  await until(page, () => document.getElementById('chart')?.getAttribute('data-points') === '1', null)
  t.equal(await text(page, '#detail-title'), 'Alice: last 10 minutes')
  t.equal(await text(page, '#chart-status'), '1 reading, latest 150 bpm.')
  await page.getByRole('button', { name: 'Close' }).click()
  t.equal(await page.locator('#member-detail').isHidden(), true)

  // Hide Alice from the display: her tile leaves the open display; the coach still sees her.
  await Promise.all([page.waitForURL(/done=hidden$/), page.getByRole('button', { name: 'Hide Alice from the display' }).click()])
  t.same(classes.calls.at(-1), ['setHidden', room.room_id, alice, true])
  await until(display, id => document.querySelector(`.tile[data-profile-id="${id}"]`)?.hidden === true, alice)
  const show = page.getByRole('button', { name: 'Show Alice on the display again' })
  t.equal(await show.getAttribute('aria-pressed'), 'true')
  t.equal(await text(page, `${tile(alice)} .flag`), 'hidden from the display')
  await Promise.all([page.waitForURL(/done=shown$/), show.click()])
  await until(display, id => document.querySelector(`.tile[data-profile-id="${id}"]`)?.hidden === false, alice)

  // A refusal of the engine is a clear message, and nothing changes: a start while the class runs.
  const [refused] = await Promise.all([page.waitForNavigation(), page.evaluate('document.getElementById("start-form").submit()')])
  t.equal(refused?.status(), 409)
  t.equal(await text(page, '.notice.error'), 'A class is already running in this room. End it first.')
  t.equal(classes.calls.filter(c => c[0] === 'start').length, 2, 'asked once more, refused')
  // A bad planned length never reaches the engine.
  await page.goto(coachUrl)
  await page.evaluate('document.getElementById("class-minutes").value = "0"; document.getElementById("start-form").submit()')
  await page.waitForLoadState()
  await until(page, () => document.querySelector('.notice.error') !== null, null)
  t.equal(await text(page, '.notice.error'), 'The planned length must be a whole number of minutes from 1 to 240.')
  t.equal(classes.calls.filter(c => c[0] === 'start').length, 2)

  // End: the display shows the results, the coach page the start form again.
  await page.goto(coachUrl)
  await Promise.all([page.waitForURL(/done=ended$/), page.getByRole('button', { name: 'End class' }).click()])
  t.equal(await text(page, '[role=status].notice'), 'Class ended: the display shows the results.')
  await until(display, c => document.querySelector('#room')?.getAttribute('data-mode') === c, 'results')
  t.equal(await page.locator('#start-form').isHidden(), false)
  const again = await page.evaluate('fetch(document.getElementById("end-form").action, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: "csrf=" + encodeURIComponent(document.querySelector("#end-form input[name=csrf]").value) }).then(r => r.status)')
  t.equal(again, 409, 'ending twice: no class is running')
  const refusals = ['409 (Conflict)', '400 (Bad Request)', '409 (Conflict)'].map(s => `Failed to load resource: the server responded with a status of ${s}`)
  t.same(errors, refusals, 'no page errors; the console lists the three refused requests')
})
