// The room display during and after a class, in real Chromium (issue 43): an
// open display switches to the class when it starts (class name, elapsed and
// remaining time, effort points, order=effort as a leaderboard, an alert tile
// highlighted, a member the coach hid gone), then to the results when it ends
// (ranked, zone minutes, without the hidden members), then back to the room,
// all without a reload. The class engine is a test double publishing
// room_class messages through the real hub.
import t from 'tap'
import { join } from 'node:path'
import type { Page } from 'playwright-core'
import { startTestService } from '../../helpers/service.ts'
import { ARTIFACTS, data, launch, newPage, postReading, style, text, textIs, until } from '../../helpers/browser.ts'
import { ClassDouble } from './class-double.ts'
import { screenshot } from './class-screens.ts'

interface PageElement { getAttribute (name: string): string | null, textContent: string | null, hidden: boolean, style: { order: string } }
declare const document: { querySelectorAll (selector: string): ArrayLike<PageElement>, querySelector (selector: string): PageElement | null }

const modeIs = async (page: Page, mode: string): Promise<void> => { await until(page, m => document.querySelector('#room')?.getAttribute('data-mode') === m, mode) }

/** Profile ids of the shown tiles in their CSS order. */
const tileOrder = async (page: Page): Promise<string[]> => await page.evaluate(`Array.from(document.querySelectorAll('.tile')).filter(e => !e.hidden)
  .sort((a, b) => Number(a.style.order) - Number(b.style.order)).map(e => e.dataset.profileId)`) as string[]

t.test('an open display follows a class: running, results, back to the room', async t => {
  const svc = await startTestService(t)
  const names = ['alice', 'bob', 'carol', 'dan', 'erin']
  const [browser, ...ids] = await Promise.all([launch(t), ...names.map(async n => await svc.user(n, { max_heart_rate: 200 }))])
  const [alice, bob, carol, dan, erin] = ids as [string, string, string, string, string]
  const rooms = svc.service.services.rooms
  const room = await rooms.create('Spin studio')
  for (const [i, id] of ids.entries()) await rooms.upsertMember(room.room_id, id, { display_name: (names[i] ?? '').replace(/^./, c => c.toUpperCase()) })
  const classes = ClassDouble.install(svc)
  const link = `${svc.url}/rooms/${room.room_id}/display?display_id=${room.display_id}&order=effort`

  const errors: string[] = []
  const { page } = await newPage(browser, errors)
  await page.setViewportSize({ width: 1280, height: 720 })
  await page.goto(link)
  await until(page, c => document.querySelector('#room')?.getAttribute('data-connection') === c, 'waiting')
  t.equal(await data(page, '#room', 'mode'), 'room')
  t.equal(await page.locator('#class-bar').isHidden(), true, 'no class bar without a class')
  const write = await Promise.all(names.map(async n => await svc.token(n, 'data:heart_rate:write')))
  for (const [i, bpm] of [150, 172, 192, 120].entries()) t.equal(await postReading(svc.url, write[i] ?? '', bpm), 200)
  await textIs(page, `.tile[data-profile-id="${carol}"] .num`, '192')

  // The class starts: the display switches without a reload.
  await classes.start(room.room_id, { name: 'Spin 18:00', minutes: 45 })
  await modeIs(page, 'class')
  t.equal(await text(page, '#class-name'), 'Spin 18:00')
  t.match(await text(page, '#class-elapsed'), /^0:[0-5]\d elapsed$/)
  t.match(await text(page, '#class-remaining'), /^(45:00|44:[0-5]\d) left$/)
  await textIs(page, `.tile[data-profile-id="${alice}"] .points`, '0 points')

  // Minutes complete: points, an alert, the leaderboard order of order=effort.
  classes.update(room.room_id, {
    [alice]: { effort_points: 5, zone_minutes: [1, 1, 1, 0, 0] },
    [bob]: { effort_points: 12, zone_minutes: [0, 0, 2, 1, 1] },
    [carol]: { effort_points: 8, zone_minutes: [0, 0, 0, 1, 1], alert: true },
    [dan]: { effort_points: 3, zone_minutes: [2, 0, 0, 0, 0] },
    [erin]: { effort_points: 1, zone_minutes: [1, 0, 0, 0, 0] }
  })
  await textIs(page, `.tile[data-profile-id="${bob}"] .points`, '12 points')
  t.equal(await text(page, `.tile[data-profile-id="${erin}"] .points`), '1 point')
  t.same(await tileOrder(page), [bob, carol, alice, dan, erin], 'order=effort: most points first')
  t.equal(await data(page, `.tile[data-profile-id="${carol}"]`, 'alert'), 'true', 'the alert tile is marked')
  t.equal(await data(page, `.tile[data-profile-id="${bob}"]`, 'alert'), null)
  t.not(await style(page, `.tile[data-profile-id="${carol}"]`, 'box-shadow'), 'none', 'and highlighted')

  // The coach hides Dan: his tile goes from the open display.
  await classes.setHidden(room.room_id, dan, true)
  await until(page, id => document.querySelector(`.tile[data-profile-id="${id}"]`)?.hidden === true, dan)
  t.same(await tileOrder(page), [bob, carol, alice, erin])
  await screenshot(page, 'class-display.png')

  // The first paint of a fresh display has the class, and the state route gives it without Dan's numbers.
  const { page: fresh } = await newPage(browser, errors)
  await fresh.routeWebSocket(/\/stream/, () => {})
  await fresh.goto(link, { waitUntil: 'domcontentloaded' })
  t.equal(await data(fresh, '#room', 'mode'), 'class')
  t.equal(await text(fresh, '#class-name'), 'Spin 18:00')
  t.equal(await text(fresh, `.tile[data-profile-id="${bob}"] .points`), '12 points')
  t.equal(await fresh.locator(`.tile[data-profile-id="${dan}"]`).isHidden(), true)
  const html = await (await fetch(link)).text()
  t.match(html, /<article class="tile" data-profile-id="[^"]+" data-state="live" data-zone="5" data-alert="true">/, 'the alert tile of the first paint')
  const state = await (await fetch(link.replace('/display?', '/display/state?'))).json() as { class: { state: string, members: Array<{ profile_id: string, effort_points: number, hidden: boolean }> } }
  t.equal(state.class.state, 'running')
  t.same(state.class.members.map(m => [m.profile_id, m.effort_points, m.hidden]), [[bob, 12, false], [carol, 8, false], [alice, 5, false], [erin, 1, false], [dan, 0, true]], 'Dan last, without his numbers: his place would tell how he did')

  // Erin hides from room displays: she is not on the results either.
  await svc.service.services.users.update(erin, u => ({ ...u, room_hidden: { since: Date.now(), until: null } }))
  t.equal(svc.service.services.users.roomHidden(erin), true)
  await rooms.upsertMember(room.room_id, erin, { display_name: 'Erin' })

  // The class ends: the results replace the tiles.
  await classes.end(room.room_id)
  await modeIs(page, 'results')
  t.equal(await text(page, '#results-title'), 'Results · Spin 18:00 · effort points and minutes in zones 1 to 5')
  t.match(await text(page, '#class-elapsed'), /^0:\d\d in all$/)
  await until(page, () => document.querySelectorAll('#results-list .result').length === 3, null)
  const rows = await page.evaluate('Array.from(document.querySelectorAll(\'#results-list .result\')).map(r => [r.dataset.profileId, r.querySelector(\'.rank\').textContent, r.querySelector(\'.rpoints\').textContent, Array.from(r.querySelectorAll(\'.zm\')).map(z => z.textContent).join(\' \')])')
  t.same(rows, [[bob, '1', '12', '0′ 0′ 2′ 1′ 1′'], [carol, '2', '8', '0′ 0′ 0′ 1′ 1′'], [alice, '3', '5', '1′ 1′ 1′ 0′ 0′']], 'ranked, with zone minutes; Dan (hidden by the coach) and Erin (hidden from displays) absent')
  t.equal(await page.locator('#tiles').isHidden(), true)
  t.equal(await text(page, '#class-remaining'), 'results')
  await screenshot(page, 'class-results.png')

  // The results' time is up: back to the normal room, tiles without points.
  classes.expire(room.room_id)
  await modeIs(page, 'room')
  t.equal(await page.locator('#class-bar').isHidden(), true)
  t.equal(await page.locator('#results').isHidden(), true)
  t.equal(await text(page, `.tile[data-profile-id="${bob}"] .points`), '')
  t.equal(await page.locator(`.tile[data-profile-id="${dan}"]`).isHidden(), false, 'Dan is back after the class')
  t.same(errors, [], 'no page errors')
})

t.test('the results end by themselves at results_until', async t => {
  const svc = await startTestService(t)
  const [browser, alice] = await Promise.all([launch(t), svc.user('alice', { max_heart_rate: 200 })])
  const room = await svc.service.services.rooms.create('Studio')
  await svc.service.services.rooms.upsertMember(room.room_id, alice, { display_name: 'Alice' })
  const classes = new ClassDouble(svc.service.services, 60_000)
  Object.assign(svc.service.services, { classes })
  const errors: string[] = []
  const { page } = await newPage(browser, errors)
  await page.clock.install()
  await page.goto(`${svc.url}/rooms/${room.room_id}/display?display_id=${room.display_id}`)
  await until(page, c => document.querySelector('#room')?.getAttribute('data-connection') === c, 'waiting')
  await classes.start(room.room_id, { name: 'Short', minutes: 3 })
  await modeIs(page, 'class')
  await classes.end(room.room_id)
  await modeIs(page, 'results')
  t.equal(await text(page, '#results-list .result .rname'), 'Alice')
  await page.clock.runFor(61_000)
  await modeIs(page, 'room')
  t.same(errors, [])
})

t.test('the results of 40 members fit on one screen', async t => {
  const svc = await startTestService(t)
  const browser = await launch(t)
  const rooms = svc.service.services.rooms
  const room = await rooms.create('Big studio')
  const ids: string[] = []
  for (let i = 0; i < 40; i++) {
    const id = await svc.user(`m${i}`)
    ids.push(id)
    await rooms.upsertMember(room.room_id, id, { display_name: `Member ${String(i + 1).padStart(2, '0')}` })
  }
  const classes = ClassDouble.install(svc)
  const errors: string[] = []
  const { page } = await newPage(browser, errors)
  await page.setViewportSize({ width: 1280, height: 720 })
  await page.goto(`${svc.url}/rooms/${room.room_id}/display?display_id=${room.display_id}`)
  await until(page, c => document.querySelector('#room')?.getAttribute('data-connection') === c, 'waiting')
  await classes.start(room.room_id, { name: 'Full house', minutes: 45 })
  classes.update(room.room_id, Object.fromEntries(ids.map((id, i) => [id, { effort_points: 100 - i, zone_minutes: [1, 2, 3, 4, 5] }])))
  await classes.end(room.room_id)
  await modeIs(page, 'results')
  await until(page, () => document.querySelectorAll('#results-list .result').length === 40, null)
  // Every row and its text inside the window and inside its row (nothing cut off or scrolled away).
  const outside = await page.evaluate(`Array.from(document.querySelectorAll('#results-list .result')).filter(r => {
    const b = r.getBoundingClientRect()
    const texts = Array.from(r.querySelectorAll('.rank, .rpoints, .zm'))
    return b.top < 0 || b.left < 0 || b.bottom > innerHeight || b.right > innerWidth || b.height < 20 ||
      texts.some(e => { const x = e.getBoundingClientRect(); return x.right > b.right + 1 || x.bottom > b.bottom + 1 || e.scrollWidth > e.clientWidth + 1 })
  }).map(r => r.dataset.profileId)`)
  t.same(outside, [], 'all 40 rows fit')
  t.same(await page.locator('#results-list .rank').first().textContent(), '1')
  await page.screenshot({ path: join(ARTIFACTS, 'class-results-40.png') })
  t.same(errors, [])
})
