// The class engine behind the pages, end to end in real Chromium: a class
// started and ended through the admin API (what the CLI and the demo call)
// reaches an open room display through the engine's room_class messages, the
// display switches to the class and to its results without a reload, and each
// member who sent readings has the class's summary in GET /api/v1/classes.
// The other class page tests drive the pages with a test double of the engine.
import t from 'tap'
import type { Page } from 'playwright-core'
import { startTestService } from '../../helpers/service.ts'
import { data, launch, newPage, postReading, text, textIs, until } from '../../helpers/browser.ts'

interface PageElement { getAttribute (name: string): string | null }
declare const document: { querySelector (selector: string): PageElement | null, querySelectorAll (selector: string): ArrayLike<PageElement> }

const modeIs = async (page: Page, mode: string): Promise<void> => { await until(page, m => document.querySelector('#room')?.getAttribute('data-mode') === m, mode) }

t.test('a class through the admin API, on an open display and in the member\'s classes', async t => {
  const svc = await startTestService(t)
  const [browser, alice, bob] = await Promise.all([launch(t), svc.user('alice', { max_heart_rate: 200 }), svc.user('bob', { max_heart_rate: 180 })])
  const room = await svc.admin('POST', '/admin/rooms', { name: 'Spin' }) as { room_id: string, display_id: string }
  for (const u of ['alice', 'bob']) await svc.admin('POST', `/admin/rooms/${room.room_id}/members`, { username: u })

  const { page } = await newPage(browser)
  await page.goto(`${svc.url}/rooms/${room.room_id}/display?display_id=${room.display_id}&order=effort`)
  await until(page, open => open.includes(document.querySelector('#room')?.getAttribute('data-connection') ?? ''), ['waiting', 'live'])
  t.equal(await data(page, '#room', 'mode'), 'room')

  const started = await svc.admin('POST', `/admin/rooms/${room.room_id}/class`, { name: 'Spin 18:00', minutes: 45 }) as { class_id: string, name: string, started_at: number, planned_end: number }
  t.equal(started.name, 'Spin 18:00')
  t.equal(started.planned_end - started.started_at, 45 * 60_000)
  await modeIs(page, 'class')
  t.equal(await text(page, '#class-name'), 'Spin 18:00')
  await textIs(page, `.tile[data-profile-id="${alice}"] .points`, '0 points')

  const [wa, wb] = await Promise.all([svc.token('alice', 'data:heart_rate:write'), svc.token('bob', 'data:heart_rate:write')])
  const now = Date.now()
  for (let s = 0; s < 3; s++) {
    t.equal(await postReading(svc.url, wa, 150 + s, now + s * 1000), 200)
    t.equal(await postReading(svc.url, wb, 120, now + s * 1000), 200)
  }
  await textIs(page, `.tile[data-profile-id="${alice}"] .num`, '152')

  const ended = await svc.admin('POST', `/admin/rooms/${room.room_id}/class/end`) as { class_id: string, ended_at: number }
  t.equal(ended.class_id, started.class_id)
  await modeIs(page, 'results')
  await until(page, () => document.querySelectorAll('#results-list .result').length === 2, null)

  const read = await svc.token('alice', 'data:heart_rate:read')
  const res = await fetch(`${svc.url}/api/v1/classes?from=${started.started_at - 1000}&to=${Date.now() + 60_000}`, { headers: { authorization: `Bearer ${read}` } })
  t.equal(res.status, 200)
  const body = await res.json() as { classes: Array<Record<string, unknown>> }
  t.equal(body.classes.length, 1, 'alice has one class')
  t.match(body.classes[0], { class_id: started.class_id, name: 'Spin 18:00', avg_bpm: 151, max_bpm: 152, effort_points: 0, rank: 1, ranked: 2, max_heart_rate: 200 })
  void bob
})
