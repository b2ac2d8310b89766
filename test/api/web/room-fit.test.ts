// The room display on a gym screen, in real Chromium (one browser for the
// file, one page reused): every tile inside the viewport and none overlapping, for 8, 20 and
// 40 members at 1920x1080 and 1280x720; the first paint (the room stream
// blocked) already shows every member with the last readings; readings older
// than 10 s are "no signal"; ?order= sorts the tiles; names and bpm keep a
// readable size. Screenshots go to test/artifacts/.
import t from 'tap'
import { join } from 'node:path'
import type { Browser, Page } from 'playwright-core'
import { startTestService, type TestService } from '../../helpers/service.ts'
import { ARTIFACTS, launch, postReading } from '../../helpers/browser.ts'

interface El { textContent: string | null, getAttribute (name: string): string | null, querySelector (s: string): El | null, getBoundingClientRect (): { x: number, y: number, width: number, height: number } }
declare function getComputedStyle (e: El): { fontSize: string }

interface Box { id: string, x: number, y: number, w: number, h: number, name: string, num: string, state: string, nameSize: number, numSize: number }

interface Member { id: string, name: string, bpm: number, fresh: boolean, token: string }

/**
 * The members of every room: member i reads 60 + 3i bpm, except every fifth,
 * whose last reading is 30 s old. The room of n members holds members 0..n-1
 * (creating a user costs a scrypt hash, so the rooms share them).
 */
async function membersOf (svc: TestService, n: number): Promise<Member[]> {
  return await Promise.all(Array.from({ length: n }, async (_, i) => {
    const username = `m${i}`
    const id = await svc.user(username, { max_heart_rate: 200 })
    const name = `Member ${String(i).padStart(2, '0')} ${'x'.repeat(i % 7)}`
    const fresh = i % 5 !== 4
    const bpm = 60 + i * 3
    const token = await svc.token(username, 'data:heart_rate:write')
    if (!fresh && (await postReading(svc.url, token, bpm, Date.now() - 30_000)) !== 200) throw new Error('reading refused')
    return { id, name, bpm, fresh, token }
  }))
}

/** Room with the given members; returns the display link. */
async function roomOf (svc: TestService, members: Member[]): Promise<string> {
  const rooms = svc.service.services.rooms
  const room = await rooms.create(`${members.length} members`)
  for (const m of members) await rooms.upsertMember(room.room_id, m.id, { display_name: m.name })
  return `${svc.url}/rooms/${room.room_id}/display?display_id=${room.display_id}`
}

/** Fresh readings right before a page opens (a reading counts for 10 s). */
async function readNow (url: string, members: Member[]): Promise<void> {
  const refused = await Promise.all(members.filter(m => m.fresh).map(async m => (await postReading(url, m.token, m.bpm)) !== 200))
  if (refused.includes(true)) throw new Error('reading refused')
}

/**
 * Opens the display with the room stream blocked (nothing but the first paint)
 * and reads every tile's box. With JavaScript the file's one page is reused,
 * resized and navigated again (a context or a page more costs a renderer's
 * start); without, a context of its own.
 */
class Screens {
  private js: Promise<{ page: Page, errors: string[] }> | undefined
  constructor (private readonly browser: Browser) {}

  private async open (js: boolean): Promise<{ page: Page, errors: string[] }> {
    const context = await this.browser.newContext({ viewport: { width: 1920, height: 1080 }, javaScriptEnabled: js })
    const page = await context.newPage()
    const errors: string[] = []
    page.on('pageerror', err => { errors.push(String(err)) })
    await page.routeWebSocket(/\/stream/, () => {}) // never connects to the server: no message arrives
    return { page, errors }
  }

  async firstPaint (url: string, width: number, height: number, js = true): Promise<{ page: Page, tiles: Box[] }> {
    const { page, errors } = js ? await (this.js ??= this.open(true)) : await this.open(false)
    errors.length = 0
    await page.setViewportSize({ width, height })
    await page.goto(url, { waitUntil: 'domcontentloaded' })
    const tiles = await page.$$eval('.tile', (nodes: El[]) => nodes.map(n => {
      const r = n.getBoundingClientRect()
      const name = n.querySelector('.name') as El
      const num = n.querySelector('.num') as El
      return {
        id: n.getAttribute('data-profile-id') ?? '',
        x: r.x, y: r.y, w: r.width, h: r.height,
        name: name.textContent ?? '', num: num.textContent ?? '', state: n.getAttribute('data-state') ?? '',
        nameSize: parseFloat(getComputedStyle(name).fontSize), numSize: parseFloat(getComputedStyle(num).fontSize)
      }
    }))
    if (errors.length > 0) throw new Error(errors.join('\n'))
    return { page, tiles }
  }
}

function overlaps (a: Box, b: Box): boolean {
  return a.x < b.x + b.w - 0.5 && b.x < a.x + a.w - 0.5 && a.y < b.y + b.h - 0.5 && b.y < a.y + a.h - 0.5
}

t.test('every member fits the screen at first paint, without overlap', async t => {
  const svc = await startTestService(t)
  const [everyone, browser] = await Promise.all([membersOf(svc, 40), launch(t)])
  const screens = new Screens(browser)
  for (const n of [8, 20, 40]) {
    const members = everyone.slice(0, n)
    const link = await roomOf(svc, members)
    for (const [width, height] of [[1920, 1080], [1280, 720]] as const) {
      await t.test(`${n} members at ${width}x${height}`, async t => {
        await readNow(svc.url, members)
        const { page, tiles } = await screens.firstPaint(link, width, height)
        await page.screenshot({ path: join(ARTIFACTS, `room-fit-${n}-${width}x${height}.png`) })
        t.equal(tiles.length, n, 'a tile per member before any stream message')
        t.same(tiles.map(x => x.id).sort(), members.map(m => m.id).sort())
        for (const m of members) {
          const tile = tiles.find(x => x.id === m.id)
          t.equal(tile?.name, m.name)
          t.equal(tile?.num, m.fresh ? String(m.bpm) : '--', `${m.name}: ${m.fresh ? 'the last reading' : 'no signal, its reading is 30 s old'}`)
          t.equal(tile?.state, m.fresh ? 'live' : 'no-signal')
        }
        const outside = tiles.filter(b => b.x < 0 || b.y < 0 || b.x + b.w > width + 0.5 || b.y + b.h > height + 0.5)
        t.same(outside, [], 'every tile inside the viewport')
        const pairs: string[] = []
        for (let i = 0; i < tiles.length; i++) for (let j = i + 1; j < tiles.length; j++) if (overlaps(tiles[i]!, tiles[j]!)) pairs.push(`${tiles[i]!.name} / ${tiles[j]!.name}`)
        t.same(pairs, [], 'no tile overlaps another')
        t.equal(await page.evaluate('document.documentElement.scrollHeight <= window.innerHeight'), true, 'nothing to scroll')
        // Readable: within the required counts (40 at 1080p, 24 at 720p) names are at least 20 px, bpm at least 40 px.
        if (height === 1080 || n <= 24) {
          const small = tiles.filter(b => b.nameSize < 20 || b.numSize < 40).map(b => `${b.name}: ${b.nameSize}/${b.numSize}`)
          t.same(small, [], 'names and bpm large enough')
        }
        if (n === 8 && width === 1920) {
          t.ok(tiles.every(b => b.nameSize >= 48 && b.numSize >= 120), 'few members get large type')
          t.equal(await page.locator('.legend li').count(), 7, 'legend: five zones, no signal, paused')
          t.same(await page.locator('.legend li').allTextContents(), [
            'Zone 1 · very light 50–60 %', 'Zone 2 · light 60–70 %', 'Zone 3 · moderate 70–80 %', 'Zone 4 · hard 80–90 %', 'Zone 5 · maximum 90–100 %', 'no signal', 'paused'
          ])
          t.equal(await page.locator('.empty').isVisible(), false, 'no "No members" text')
          t.equal(await page.locator('#connection').textContent(), '', 'no "connecting…" over the tiles')
        }
      })
    }
    if (n === 8) {
      await t.test('server-rendered: the members and readings are there without JavaScript', async t => {
        await readNow(svc.url, members)
        const { tiles } = await screens.firstPaint(link, 1920, 1080, false)
        t.equal(tiles.length, 8)
        t.same(tiles.map(x => x.num), members.map(m => m.fresh ? String(m.bpm) : '--'), 'in name order, with the last readings')
      })
      await t.test('the operator chooses the order with ?order=', async t => {
        const live = members.filter(m => m.fresh)
        const byBpm = [...live].sort((a, b) => b.bpm - a.bpm).map(m => m.id)
        for (const order of ['bpm', 'zone']) {
          await readNow(svc.url, members)
          const { page, tiles } = await screens.firstPaint(`${link}&order=${order}`, 1920, 1080)
          const visual = [...tiles].sort((a, b) => Math.round(a.y - b.y) || a.x - b.x).map(b => b.id)
          t.same(visual.slice(0, live.length), byBpm, `${order}: live members first, highest first`)
          t.same(visual.slice(live.length), members.filter(m => !m.fresh).map(m => m.id), `${order}: members without signal last`)
          t.equal(await page.locator('#room').getAttribute('data-order'), order)
        }
      })
    }
  }
})
