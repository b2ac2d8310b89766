// What the streams carry of a member the coach hid for the class: a display's
// stream gets neither their heart rates nor their class numbers (their entry
// stays, last and zeroed, so that the display hides their tile); the coach
// page's stream gets everything, for a signed-in coach only, from a page of the
// box, and ends when the coach signs out or the session expires. Real hub, real WebSockets; the class
// engine is the test double (ClassDouble), which publishes room_class messages
// through the hub.
import t from 'tap'
import WebSocket from 'ws'
import { startTestService, type TestService } from '../../helpers/service.ts'
import { ClassDouble } from './class-double.ts'
import { sessionsOf } from '../../../api/web/guard.ts'
import type { FastifyRequest } from 'fastify'

const PASSWORD = 'coach-password-1'

interface Message { kind: string, heart_rate?: { profile_id: string, bpm: number }, room_class?: { members: Array<{ profile_id: string, effort_points: number, zone_minutes: number[], alert: boolean, hidden: boolean }> } | null }

/** A coach's session cookie and CSRF token, signed in through the sign-in form. */
async function signIn (s: TestService): Promise<{ cookie: string, csrf: string }> {
  const page = await fetch(`${s.url}/operator/signin`)
  const anonymous = (page.headers.get('set-cookie') ?? '').split(';')[0] ?? ''
  const csrf = /name="csrf" value="([^"]+)"/.exec(await page.text())?.[1] ?? ''
  const r = await fetch(`${s.url}/operator/signin`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: anonymous }, body: `csrf=${csrf}&name=coachcarla&password=${PASSWORD}`, redirect: 'manual' })
  if (r.status !== 303) throw new Error(`operator sign-in: ${r.status}`)
  const cookie = (r.headers.get('set-cookie') ?? '').split(';')[0] ?? ''
  const operator = await fetch(`${s.url}/operator`, { headers: { cookie } })
  return { cookie, csrf: /name="csrf" value="([^"]+)"/.exec(await operator.text())?.[1] ?? '' }
}

/** An open WebSocket and every message it got; `next(pred)` waits for the first (or a later) message that matches. */
async function open (url: string, headers: Record<string, string> = {}): Promise<{ ws: WebSocket, got: Message[], next: (pred: (m: Message) => boolean) => Promise<Message>, closed: Promise<number> }> {
  const ws = new WebSocket(url, { headers })
  const got: Message[] = []
  const waiting: Array<{ pred: (m: Message) => boolean, resolve: (m: Message) => void }> = []
  ws.on('message', data => {
    const m = JSON.parse(String(data)) as Message
    got.push(m)
    for (const w of [...waiting]) if (w.pred(m)) { waiting.splice(waiting.indexOf(w), 1); w.resolve(m) }
  })
  const closed = new Promise<number>(resolve => { ws.on('close', code => { resolve(code) }) })
  await new Promise<void>((resolve, reject) => { ws.once('open', resolve); ws.once('unexpected-response', (_req, res) => { reject(new Error(`handshake answered ${res.statusCode}`)) }); ws.once('error', reject) })
  const next = async (pred: (m: Message) => boolean): Promise<Message> => {
    const seen = got.find(pred)
    if (seen !== undefined) return seen
    return await new Promise(resolve => { waiting.push({ pred, resolve }) })
  }
  return { ws, got, next, closed }
}

/** The status a refused handshake is answered with. */
async function refused (url: string, headers: Record<string, string>): Promise<number> {
  const ws = new WebSocket(url, { headers })
  ws.on('error', () => { /* the aborted handshake below */ })
  return await new Promise((resolve, reject) => {
    // With this listener, ending the refused handshake is the caller's (ws's documentation): its request is aborted.
    ws.once('unexpected-response', (req, res) => { resolve(res.statusCode ?? 0); req.destroy() })
    ws.once('open', () => { ws.close(); reject(new Error('the handshake was accepted')) })
  })
}

t.test('a member the coach hid: nothing of theirs on display streams, everything on the coach stream while signed in', async t => {
  const svc = await startTestService(t)
  const [alice, bob] = await Promise.all([svc.user('alice', { max_heart_rate: 200 }), svc.user('bob', { max_heart_rate: 200 })])
  const { rooms, pipeline } = svc.service.services
  const room = await rooms.create('Spin')
  await rooms.upsertMember(room.room_id, alice, { display_name: 'Alice' })
  await rooms.upsertMember(room.room_id, bob, { display_name: 'Bob' })
  await svc.admin('POST', '/admin/operators', { name: 'coachcarla', role: 'coach', password: PASSWORD })
  const classes = ClassDouble.install(svc)
  await classes.start(room.room_id, { name: 'Spin 18:00' })
  classes.update(room.room_id, { [alice]: { effort_points: 4, zone_minutes: [1, 1, 0, 0, 0] }, [bob]: { effort_points: 9, zone_minutes: [0, 1, 2, 0, 0], alert: true } })
  await classes.setHidden(room.room_id, bob, true)
  t.equal(classes.hiddenFromDisplays(room.room_id, bob), true)
  t.equal(classes.hiddenFromDisplays(room.room_id, alice), false)

  const ws = svc.url.replace('http', 'ws')
  const kinds = 'kinds=heart_rate,room_class'
  const display = await open(`${ws}/rooms/${room.room_id}/stream?display_id=${room.display_id}&${kinds}`)
  const onDisplay = await display.next(m => m.kind === 'room_class')
  t.same(onDisplay.room_class?.members.map(m => [m.profile_id, m.effort_points, m.zone_minutes, m.alert, m.hidden]),
    [[alice, 4, [1, 1, 0, 0, 0], false, false], [bob, 0, [0, 0, 0, 0, 0], false, true]], 'the display: Bob last, with none of his numbers')

  // The coach stream: a signed-in coach's session, from a page of the box.
  const coachUrl = `${ws}/operator/rooms/${room.room_id}/coach/stream?${kinds}`
  t.equal(await refused(coachUrl, { origin: svc.url }), 403, 'no session')
  const { cookie, csrf } = await signIn(svc)
  t.equal(await refused(coachUrl, { cookie, origin: 'http://evil.example' }), 403, 'a page of another site')
  t.equal(await refused(coachUrl, { cookie }), 403, 'no Origin')
  t.equal(await refused(`${ws}/operator/rooms/nope/coach/stream?${kinds}`, { cookie, origin: svc.url }), 404, 'no such room')
  const coach = await open(coachUrl, { cookie, origin: svc.url })
  const onCoach = await coach.next(m => m.kind === 'room_class')
  t.same(onCoach.room_class?.members.map(m => [m.profile_id, m.effort_points, m.alert, m.hidden]), [[bob, 9, true, true], [alice, 4, false, false]], 'the coach: everyone, ranked')

  // Bob's reading, then Alice's: the display gets only Alice's, the coach both.
  const now = Date.now()
  t.equal((await pipeline.submit({ profile_id: bob, measured_at: now - 2000, heart_rate: 171, source: 'sim' })).status, 'stored')
  t.equal((await pipeline.submit({ profile_id: alice, measured_at: now - 1000, heart_rate: 122, source: 'sim' })).status, 'stored')
  await display.next(m => m.heart_rate?.profile_id === alice)
  t.same(display.got.filter(m => m.kind === 'heart_rate').map(m => [m.heart_rate?.profile_id, m.heart_rate?.bpm]), [[alice, 122]], 'no heart rate of Bob on the display')
  await coach.next(m => m.heart_rate?.profile_id === alice)
  t.same(coach.got.filter(m => m.kind === 'heart_rate').map(m => [m.heart_rate?.profile_id, m.heart_rate?.bpm]), [[bob, 171], [alice, 122]])

  // Shown again: his readings reach the display.
  await classes.setHidden(room.room_id, bob, false)
  t.equal((await pipeline.submit({ profile_id: bob, measured_at: now, heart_rate: 168, source: 'sim' })).status, 'stored')
  await display.next(m => m.heart_rate?.profile_id === bob)

  // The coach signs out: the stream ends at once, with no message to wait for.
  const out = await fetch(`${svc.url}/operator/signout`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', cookie }, body: `csrf=${csrf}`, redirect: 'manual' })
  t.equal(out.status, 303)
  t.equal(await coach.closed, 1008, 'closed: signed out')
  t.equal(await refused(coachUrl, { cookie, origin: svc.url }), 403, 'and the old cookie opens nothing')

  // A session that expires ends its stream when it expires, message or not.
  const again = await signIn(svc)
  const session = sessionsOf(svc.service.services).find({ headers: { cookie: again.cookie } } as unknown as FastifyRequest)
  if (session === undefined) throw new Error('no session for the new cookie')
  session.expires_at = Date.now() + 300
  const expiring = await open(coachUrl, { cookie: again.cookie, origin: svc.url })
  t.equal(await expiring.closed, 1008, 'closed: the session expired')
  display.ws.close()
})
