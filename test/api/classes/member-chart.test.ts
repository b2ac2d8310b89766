// A class summary page on /me in real Chromium: the chart (static/chart.js)
// draws the member's readings of the class window, its time axis is the class.
import t from 'tap'
import { join } from 'node:path'
import { startTestService } from '../../helpers/service.ts'
import { ARTIFACTS, launch, newPage, text, until } from '../../helpers/browser.ts'
import type { ClassRecord, ClassSummary } from '../../../api/classes/types.ts'

interface PageElement { getAttribute (name: string): string | null }
declare const document: { querySelector (selector: string): PageElement | null }

t.test('the class page draws the class window', async t => {
  const svc = await startTestService(t)
  const [browser, mia] = await Promise.all([launch(t), svc.user('mia', { age: 20 })])
  const base = Math.floor((Date.now() - 3_600_000) / 60_000) * 60_000
  for (let i = 0; i < 30; i++) {
    const r = await svc.service.services.pipeline.submit({ profile_id: mia, measured_at: base + i * 2000, heart_rate: 140 + (i % 10), source: 'sim' })
    t.equal(r.status, 'stored')
  }
  // A reading after the class: not in its chart.
  t.equal((await svc.service.services.pipeline.submit({ profile_id: mia, measured_at: base + 90_000, heart_rate: 90, source: 'sim' })).status, 'stored')
  const rec: ClassRecord = { class_id: 'c-9', room_id: 'room-1', name: 'Spin 18:00', started_at: base, planned_end: base + 60_000, ended_at: base + 60_000, hidden: [] }
  const summary: ClassSummary = { class_id: 'c-9', room_id: 'room-1', name: 'Spin 18:00', started_at: base, ended_at: base + 60_000, duration_s: 60, avg_bpm: 144.5, max_bpm: 149, zones_s: [0, 0, 58, 0, 0], calories_kcal: 12.1, effort_points: 3, rank: 2, ranked: 5, max_heart_rate: 200 }
  await svc.service.services.classStore.create({ ...rec, ended_at: null })
  await svc.service.services.classStore.finish(rec, [{ profile_id: mia, summary }])

  const errors: string[] = []
  const { page } = await newPage(browser, errors)
  await page.goto(`${svc.url}/me/classes/c-9`)
  await page.getByLabel('Username').fill('mia')
  await page.getByLabel('Password').fill('password123')
  await Promise.all([page.waitForURL(`${svc.url}/me/classes/c-9`), page.getByRole('button', { name: 'Sign in' }).click()])
  await until(page, () => document.querySelector('#chart')?.getAttribute('data-x-max') != null, undefined)
  await page.screenshot({ path: join(ARTIFACTS, 'member-class.png'), fullPage: true })
  t.same(errors, [], 'no page errors')
  t.equal(await page.locator('#chart').getAttribute('data-points'), '30')
  t.equal(await page.locator('#chart').getAttribute('data-x-min'), String(base), 'the axis starts at the class start')
  t.equal(await page.locator('#chart').getAttribute('data-x-max'), String(base + 60_000), 'and ends at its end')
  t.equal(await text(page, '#chart-status'), '30 readings in this class, latest 149 bpm.')
  t.equal(await text(page, '#class-rank'), '2 of 5')
  t.equal(await page.title(), 'Spin 18:00 · hr-relay')
})
