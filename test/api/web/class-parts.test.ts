// Several screens per room (issue 43): part=1of2 and part=2of2 on a display
// link split the members over two screens, evenly and by name, in real
// Chromium; a member who joins lands on exactly one of them; a bad part= is a
// clear 400 page (and a 400 JSON on the state route), never a crash.
import t from 'tap'
import type { Page } from 'playwright-core'
import { startTestService } from '../../helpers/service.ts'
import { launch, newPage, textIs, until } from '../../helpers/browser.ts'
import { ClassDouble } from './class-double.ts'

interface PageElement { getAttribute (name: string): string | null }
declare const document: { querySelectorAll (selector: string): ArrayLike<PageElement>, querySelector (selector: string): PageElement | null }

const names = async (page: Page): Promise<string[]> => (await page.locator('.tile .name').allTextContents()).sort()
const tileCount = async (page: Page, n: number): Promise<void> => { await until(page, x => document.querySelectorAll('.tile').length === x, n) }

t.test('two screens share a room\'s members; a new member lands on one of them', async t => {
  const svc = await startTestService(t)
  const people = ['Ana', 'Ben', 'Cleo', 'Dev', 'Eva']
  const [browser, ...ids] = await Promise.all([launch(t), ...people.map(async p => await svc.user(p.toLowerCase()))])
  const rooms = svc.service.services.rooms
  const room = await rooms.create('Two TVs')
  for (const [i, id] of ids.entries()) await rooms.upsertMember(room.room_id, id, { display_name: people[i] ?? '' })
  const classes = ClassDouble.install(svc)
  const link = `${svc.url}/rooms/${room.room_id}/display?display_id=${room.display_id}`
  const errors: string[] = []
  const { page: left } = await newPage(browser, errors)
  const { page: right } = await newPage(browser, errors)
  await Promise.all([left.goto(`${link}&part=1of2`), right.goto(`${link}&part=2of2`)])
  t.equal(await left.locator('#room').getAttribute('data-part'), '1of2')
  t.same(await names(left), ['Ana', 'Ben'])
  t.same(await names(right), ['Cleo', 'Dev', 'Eva'])
  for (const p of [left, right]) await until(p, c => document.querySelector('#room')?.getAttribute('data-connection') === c, 'waiting')

  // Aaron joins: the shares move, every member is on exactly one screen.
  const aaron = await svc.user('aaron')
  await rooms.upsertMember(room.room_id, aaron, { display_name: 'Aaron' })
  await tileCount(left, 3)
  t.same(await names(left), ['Aaron', 'Ana', 'Ben'])
  t.same(await names(right), ['Cleo', 'Dev', 'Eva'])

  // Dev leaves: Ben moves to the right screen.
  await rooms.removeMember(room.room_id, ids[3] ?? '')
  await tileCount(left, 2)
  t.same(await names(left), ['Aaron', 'Ana'])
  await until(right, id => document.querySelector(`.tile[data-profile-id="${id}"]`) !== null, ids[1] ?? '')
  t.same(await names(right), ['Ben', 'Cleo', 'Eva'])

  // A class: each screen shows its members' points; the results are cut by rank.
  await classes.start(room.room_id, { name: 'Split', minutes: 30 })
  classes.update(room.room_id, Object.fromEntries([aaron, ...ids].map((id, i) => [id, { effort_points: 10 - i }])))
  await textIs(right, `.tile[data-profile-id="${ids[4] ?? ''}"] .points`, '5 points')
  await textIs(left, `.tile[data-profile-id="${aaron}"] .points`, '10 points')
  await classes.end(room.room_id)
  for (const p of [left, right]) await until(p, m => document.querySelector('#room')?.getAttribute('data-mode') === m, 'results')
  // Ranked: Aaron 10, Ana 9, Ben 8, Cleo 7, Eva 5 (Dev left the room).
  t.same(await left.locator('#results-list .rname').allTextContents(), ['Aaron', 'Ana'])
  t.same(await right.locator('#results-list .rname').allTextContents(), ['Ben', 'Cleo', 'Eva'])
  t.same(await right.locator('#results-list .rank').allTextContents(), ['3', '4', '5'], 'ranks of the whole class')
  t.same(errors, [])
})

t.test('a bad part= is a clear 400', async t => {
  const svc = await startTestService(t)
  const room = await svc.service.services.rooms.create('Room')
  const link = `${svc.url}/rooms/${room.room_id}/display?display_id=${room.display_id}`
  for (const bad of ['3of2', '0of1', 'two', '1of9']) {
    const res = await fetch(`${link}&part=${bad}`)
    t.equal(res.status, 400, bad)
    const html = await res.text()
    t.match(html, `<p role="alert">part=${bad} is not a screen of this room. Use part=1of2 and part=2of2 for two screens (up to part=8of8), or leave part= out for one screen.</p>`)
    const state = await fetch(`${link.replace('/display?', '/display/state?')}&part=${bad}`)
    t.equal(state.status, 400)
    t.match(await state.json(), { error_code: 7013 })
  }
  const long = await fetch(`${link}&part=${'1'.repeat(50)}`)
  t.equal(long.status, 400, 'too long for the schema')
  t.equal((await fetch(`${link}&part=1of1`)).status, 200)
  t.equal((await fetch(`${svc.url}/rooms/${room.room_id}/display?display_id=nope&part=1of2`)).status, 404, 'a wrong display link is still a 404')
})

t.test('40 members on two screens during a class: 20 tiles each, every line of every tile inside it', async t => {
  const svc = await startTestService(t)
  const browser = await launch(t)
  const rooms = svc.service.services.rooms
  const room = await rooms.create('Forty')
  const ids: string[] = []
  for (let i = 0; i < 40; i++) {
    const id = await svc.user(`m${i}`, { max_heart_rate: 200 })
    ids.push(id)
    await rooms.upsertMember(room.room_id, id, { display_name: `Member ${String(i).padStart(2, '0')} ${'x'.repeat(i % 7)}` })
  }
  const classes = ClassDouble.install(svc)
  await classes.start(room.room_id, { name: 'Forty', minutes: 45 })
  classes.update(room.room_id, Object.fromEntries(ids.map((id, i) => [id, { effort_points: 120 - i, alert: i % 9 === 0 }])))
  const link = `${svc.url}/rooms/${room.room_id}/display?display_id=${room.display_id}&order=effort`
  const seen: string[] = []
  for (const [part, size] of [['1of2', { width: 1920, height: 1080 }], ['2of2', { width: 1280, height: 720 }]] as const) {
    const errors: string[] = []
    const { page } = await newPage(browser, errors)
    await page.setViewportSize(size)
    await page.goto(`${link}&part=${part}`)
    await until(page, () => document.querySelectorAll('.tile').length === 20, null)
    // Every tile in the window, and its name, bpm, zone, points and calories inside the tile.
    const bad = await page.evaluate(`Array.from(document.querySelectorAll('.tile')).filter(tile => {
      const b = tile.getBoundingClientRect()
      if (b.top < 0 || b.left < 0 || b.bottom > innerHeight + 1 || b.right > innerWidth + 1) return true
      return Array.from(tile.querySelectorAll('.name, .bpm, .zone, .points, .kcal')).some(e => { const x = e.getBoundingClientRect(); return x.bottom > b.bottom + 1 || x.top < b.top - 1 })
    }).map(e => e.dataset.profileId)`)
    t.same(bad, [], `${part} at ${size.width}x${size.height}: every tile and line fits`)
    seen.push(...await page.locator('.tile').evaluateAll(nodes => nodes.map(n => n.getAttribute('data-profile-id') ?? '')))
    t.same(errors, [])
  }
  t.same(seen.sort(), [...ids].sort(), 'every member on exactly one screen')
})
