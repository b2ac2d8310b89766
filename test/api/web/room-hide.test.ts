// "Hide me from room displays" (docs/operator.md, "Pages the box serves"): the member hides from
// /me; the display shows "paused" live and at first paint; the room streams
// (display and other members' API streams) never carry the member's bpm while
// hidden; showing again brings the readings back.
import t from 'tap'
import { join } from 'node:path'
import { startTestService } from '../../helpers/service.ts'
import { ARTIFACTS, data, launch, newPage, postReading, text, textIs, until } from '../../helpers/browser.ts'
import { openWs, wsUrl } from '../http/fetch.ts'

interface PageElement { getAttribute (name: string): string | null }
declare const document: { querySelector (selector: string): PageElement | null }

// The bpm 161 as a value of its own (`>161<`, `:161,`), not three digits inside a timestamp or a UUID such as
// server_now 1795502334161, which made this check fail by chance.
const BPM_161 = /(?<![\w.-])161(?![\w.-])/

const stateIs = async (page: import('playwright-core').Page, id: string, state: string): Promise<void> => {
  await until(page, ([s, v]) => document.querySelector(s)?.getAttribute('data-state') === v, [`.tile[data-profile-id="${id}"]`, state] as const)
}

t.test('a member hides from room displays and comes back', async t => {
  const svc = await startTestService(t)
  const [alice, bob, browser] = await Promise.all([svc.user('alice', { max_heart_rate: 200 }), svc.user('bob', { max_heart_rate: 200 }), launch(t)])
  const rooms = svc.service.services.rooms
  const room = await rooms.create('Spin')
  await rooms.upsertMember(room.room_id, alice, { display_name: 'Alice' })
  await rooms.upsertMember(room.room_id, bob, { display_name: 'Bob' })
  const write = { alice: await svc.token('alice', 'data:heart_rate:write'), bob: await svc.token('bob', 'data:heart_rate:write') }
  const link = `${svc.url}/rooms/${room.room_id}/display?display_id=${room.display_id}`
  const kinds = 'kinds=heart_rate,room_member_updated'
  const display = await openWs(wsUrl(svc.url, `/rooms/${room.room_id}/stream?display_id=${room.display_id}&${kinds}`))
  const bobApi = await openWs(wsUrl(svc.url, `/api/v2/data/rooms/${room.room_id}/real_time?access_token=${await svc.token('bob', 'data:room:read')}&${kinds}`))
  const aliceApi = await openWs(wsUrl(svc.url, `/api/v2/data/rooms/${room.room_id}/real_time?access_token=${await svc.token('alice', 'data:room:read')}&${kinds}`))
  t.teardown(() => { for (const c of [display, bobApi, aliceApi]) c.ws.terminate() })

  const errors: string[] = []
  const { page: screen } = await newPage(browser, errors)
  await screen.goto(link)
  await until(screen, ([s, v]) => document.querySelector(s)?.getAttribute('data-connection') === v, ['#room', 'waiting'] as const)
  t.equal(await postReading(svc.url, write.alice, 150), 200)
  await textIs(screen, `.tile[data-profile-id="${alice}"] .num`, '150')
  for (const c of [display, bobApi, aliceApi]) t.equal(JSON.parse(await c.next()).heart_rate.bpm, 150, 'visible: everyone gets the bpm')

  // Alice hides for 15 minutes from /me.
  const { page: me } = await newPage(browser, errors)
  await me.goto(`${svc.url}/me`)
  await me.getByLabel('Username').fill('alice')
  await me.getByLabel('Password').fill('password123')
  await Promise.all([me.waitForURL(`${svc.url}/me`), me.getByRole('button', { name: 'Sign in' }).click()])
  t.equal(await text(me, '#room-visibility'), 'Room displays show you.')
  await me.getByLabel('Hide me from room displays').selectOption('15m')
  const before = Date.now()
  await Promise.all([me.waitForURL(/\/me#room-displays$/), me.getByRole('button', { name: 'Hide me' }).click()])
  t.match(await text(me, '#room-visibility'), /^You are hidden from room displays until \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC\.$/)
  const stored = (await svc.service.services.users.get(alice))?.room_hidden
  t.ok(stored !== undefined && stored.until !== null && stored.until - stored.since === 15 * 60_000 && stored.since >= before, 'stored on the user record for 15 minutes')

  // Live: the display shows "paused" at once, from a room_member_updated with config.paused.
  await stateIs(screen, alice, 'paused')
  t.equal(await text(screen, `.tile[data-profile-id="${alice}"] .num`), '--')
  t.equal(await text(screen, `.tile[data-profile-id="${alice}"] .zone`), 'paused')
  for (const c of [display, bobApi, aliceApi]) {
    t.same(JSON.parse(await c.next()).room_member_updated, { profile_id: alice, config: { display_name: 'Alice', max_heart_rate: null, zones: [50, 60, 70, 80, 90], paused: true } })
  }

  // While hidden her bpm never leaves the box for displays or other members; Bob's still does.
  t.equal(await postReading(svc.url, write.alice, 161), 200)
  t.equal(await postReading(svc.url, write.bob, 120), 200)
  for (const c of [display, bobApi]) t.same(JSON.parse(await c.next()).heart_rate, { profile_id: bob, bpm: 120 }, 'the next message is Bob\'s, not Alice\'s')
  t.same(JSON.parse(await aliceApi.next()).heart_rate, { profile_id: alice, bpm: 161 }, 'her own stream still has her bpm')
  t.same(JSON.parse(await aliceApi.next()).heart_rate, { profile_id: bob, bpm: 120 })
  await textIs(screen, `.tile[data-profile-id="${bob}"] .num`, '120')
  t.equal(await data(screen, `.tile[data-profile-id="${alice}"]`, 'state'), 'paused')
  t.equal(await text(screen, `.tile[data-profile-id="${alice}"] .num`), '--')

  // First paint of a fresh display and the state route: paused, without her readings.
  const { page: fresh } = await newPage(browser, errors)
  await fresh.routeWebSocket(/\/stream/, () => {})
  await fresh.goto(link, { waitUntil: 'domcontentloaded' })
  t.equal(await data(fresh, `.tile[data-profile-id="${alice}"]`, 'state'), 'paused')
  t.equal(await text(fresh, `.tile[data-profile-id="${alice}"] .zone`), 'paused')
  const html = await (await fetch(link)).text()
  t.notMatch(html, BPM_161, 'her last bpm is nowhere in the page')
  const state = await (await fetch(link.replace('/display?', '/display/state?'))).json() as { members: Array<Record<string, unknown>> }
  const a = state.members.find(m => m.profile_id === alice)
  t.same([a?.paused, a?.paused_until, a?.latest, a?.trend, a?.calories_today_kcal], [true, stored?.until, null, [], 0])
  await screen.screenshot({ path: join(ARTIFACTS, 'room-display-paused.png') })

  // She comes back: displays learn it, and her next reading shows.
  await Promise.all([me.waitForURL(/\/me#room-displays$/), me.getByRole('button', { name: 'Show me on room displays again' }).click()])
  t.equal(await text(me, '#room-visibility'), 'Room displays show you.')
  const ended = (await svc.service.services.users.get(alice))?.room_hidden
  t.ok(ended !== undefined && ended.since === stored?.since && ended.until !== null && ended.until <= Date.now() && ended.until < (stored?.until ?? 0), 'the hidden period ends now and is kept')
  t.equal(JSON.parse(await display.next()).room_member_updated.config.paused, false)
  // What she read while hidden stays off displays after she shows again: not in the state, the page or the stream.
  const shown = await (await fetch(link.replace('/display?', '/display/state?'))).json() as { members: Array<Record<string, unknown>> }
  const back = shown.members.find(m => m.profile_id === alice)
  t.same([back?.paused, back?.latest, back?.trend], [false, null, []], 'no latest or trend from the hidden time')
  t.notMatch(await (await fetch(link)).text(), BPM_161, 'her bpm of the hidden time is nowhere in the page')
  await stateIs(screen, alice, 'no-signal')
  t.equal(await text(screen, `.tile[data-profile-id="${alice}"] .num`), '--')
  // A reading measured while she hid that arrives only now (a device's backlog) is not streamed to displays.
  t.equal(await postReading(svc.url, write.alice, 150, (ended?.until ?? 0) - 1000), 200)
  t.equal(await postReading(svc.url, write.alice, 133), 200)
  t.same(JSON.parse(await display.next()).heart_rate, { profile_id: alice, bpm: 133 }, 'the next message is her reading measured after she came back')
  await textIs(screen, `.tile[data-profile-id="${alice}"] .num`, '133')

  // "until I turn it off" stores no end; an unknown choice is refused and changes nothing.
  await me.getByLabel('Hide me from room displays').selectOption('off')
  await Promise.all([me.waitForURL(/\/me#room-displays$/), me.getByRole('button', { name: 'Hide me' }).click()])
  t.equal(await text(me, '#room-visibility'), 'You are hidden from room displays until you turn it off.')
  t.equal((await svc.service.services.users.get(alice))?.room_hidden?.until, null)
  await stateIs(screen, alice, 'paused')
  t.same(errors, [], 'no page errors')
})

t.test('the hide form needs a session, its CSRF token and a known duration', async t => {
  const svc = await startTestService(t)
  const form = { 'content-type': 'application/x-www-form-urlencoded' }
  const anon = await fetch(`${svc.url}/me/room-visibility`, { method: 'POST', headers: form, body: 'hide=15m', redirect: 'manual' })
  t.equal(anon.status, 403)
  const id = await svc.user('dan')
  const signin = await fetch(`${svc.url}/signin`)
  const cookie = (signin.headers.get('set-cookie') ?? '').split(';')[0] ?? ''
  const csrf = /name="csrf" value="([^"]+)"/.exec(await signin.text())?.[1] ?? ''
  const done = await fetch(`${svc.url}/signin`, { method: 'POST', headers: { ...form, cookie }, body: `csrf=${csrf}&username=dan&password=password123`, redirect: 'manual' })
  t.equal(done.status, 303)
  const session = (done.headers.get('set-cookie') ?? '').split(';')[0] || cookie
  const me = await fetch(`${svc.url}/me`, { headers: { cookie: session } })
  t.equal(me.status, 200)
  const token = /name="csrf" value="([^"]+)"/.exec(await me.text())?.[1] ?? ''
  const bad = await fetch(`${svc.url}/me/room-visibility`, { method: 'POST', headers: { ...form, cookie: session }, body: `csrf=${token}&hide=forever`, redirect: 'manual' })
  t.equal(bad.status, 400)
  t.equal((await svc.service.services.users.get(id))?.room_hidden, undefined)
  const wrong = await fetch(`${svc.url}/me/room-visibility`, { method: 'POST', headers: { ...form, cookie: session }, body: 'csrf=nope&hide=15m', redirect: 'manual' })
  t.equal(wrong.status, 403)
  const ok = await fetch(`${svc.url}/me/room-visibility`, { method: 'POST', headers: { ...form, cookie: session }, body: `csrf=${token}&hide=1h`, redirect: 'manual' })
  t.equal(ok.status, 303)
  const h = (await svc.service.services.users.get(id))?.room_hidden
  t.equal(h !== undefined && h.until !== null ? h.until - h.since : 0, 3_600_000)
})
