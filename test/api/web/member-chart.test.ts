// The member page's "Today's heart rate" chart in real Chromium with 0, 1, 2
// and many readings: the time axis uPlot draws (its x scale, kept in the
// chart's data-x-min / data-x-max) lies within today, around the readings.
import t, { type Test } from 'tap'
import { join } from 'node:path'
import type { BrowserContext, Page } from 'playwright-core'
import { startTestService, type TestService } from '../../helpers/service.ts'
import { ARTIFACTS, launch, newPage, postReading, text, until } from '../../helpers/browser.ts'
import { startOfToday } from '../../../api/web/readings-view.ts'

interface PageElement { getAttribute (name: string): string | null }
declare const document: { querySelector (selector: string): PageElement | null }

/**
 * Signs in as the member on the file's one page (cookies cleared first: a new
 * context per member would cost a renderer's start) and reads the chart's axis.
 */
async function chartOf (t: Test, svc: TestService, { page, context, errors }: { page: Page, context: BrowserContext, errors: string[] }, username: string, readings: number[]): Promise<{ min: number, max: number, status: string | null, points: string | null }> {
  const write = await svc.token(username, 'data:heart_rate:write')
  // In parallel, a few at a time (the pipeline writes what arrives together in one batch).
  for (let i = 0; i < readings.length; i += 25) {
    const statuses = await Promise.all(readings.slice(i, i + 25).map(async at => await postReading(svc.url, write, 100 + (at % 50), at)))
    for (const status of statuses) t.equal(status, 200)
  }
  errors.length = 0
  await context.clearCookies()
  await page.goto(`${svc.url}/me`)
  await page.getByLabel('Username').fill(username)
  await page.getByLabel('Password').fill('password123')
  await Promise.all([page.waitForURL(`${svc.url}/me`), page.getByRole('button', { name: 'Sign in' }).click()])
  await until(page, () => document.querySelector('#chart')?.getAttribute('data-x-max') != null, undefined)
  await page.screenshot({ path: join(ARTIFACTS, `member-chart-${readings.length}.png`) })
  t.same(errors, [], 'no page errors')
  return {
    min: Number(await page.locator('#chart').getAttribute('data-x-min')),
    max: Number(await page.locator('#chart').getAttribute('data-x-max')),
    status: await text(page, '#chart-status'),
    points: await page.locator('#chart').getAttribute('data-points')
  }
}

t.test('the chart\'s time axis is today for 0, 1, 2 and many readings', async t => {
  const svc = await startTestService(t)
  const [browser] = await Promise.all([launch(t), Promise.all(['zero', 'one', 'two', 'many'].map(async u => await svc.user(u)))])
  const errors: string[] = []
  const screen = { ...await newPage(browser, errors), errors }
  const now = Date.now()
  const midnight = startOfToday(now)
  // Readings a few minutes back, never before midnight (a run just after midnight stays today).
  const back = (ms: number): number => Math.max(midnight, now - ms)
  const today = (t: Test, r: { min: number, max: number }): void => {
    t.ok(r.min >= midnight, `axis starts today (${new Date(r.min).toISOString()})`)
    t.ok(r.max <= Date.now() + 1000, `axis ends by now (${new Date(r.max).toISOString()})`)
    t.ok(r.max > r.min, 'a non-empty range')
  }

  const zero = await chartOf(t, svc, screen, 'zero', [])
  today(t, zero)
  t.equal(zero.status, 'No readings today yet.')
  t.equal(zero.points, '0')

  const single = back(60_000)
  const one = await chartOf(t, svc, screen, 'one', [single])
  today(t, one)
  t.ok(one.min <= single && single <= one.max, 'the reading is on the axis')
  t.ok(one.max - one.min <= 10 * 60_000, `at most ten minutes wide (${one.max - one.min} ms)`)
  t.equal(one.points, '1')

  const two = await chartOf(t, svc, screen, 'two', [back(90_000), back(30_000)])
  today(t, two)
  t.ok(two.min <= back(90_000) && back(30_000) <= two.max, 'both readings on the axis')
  t.ok(two.max - two.min <= 10 * 60_000)

  const times = Array.from({ length: 300 }, (_, i) => back(300_000 - i * 1000))
  const many = await chartOf(t, svc, screen, 'many', [...new Set(times)])
  today(t, many)
  t.ok(many.min <= times[0]! && times[times.length - 1]! <= many.max, 'every reading on the axis')
})
