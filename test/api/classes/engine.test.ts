// The class engine (api/classes/engine.ts) over the real store, pipeline and
// hub, with a clock the test advances: a 3-minute class with two members, the
// messages the displays get, the summaries and learned maximum it leaves, the
// results that expire, a class that ends while the box is down, and the
// coach's hide switch.
import t from 'tap'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pino from 'pino'
import { Store } from '../../../api/store/db.ts'
import { Users } from '../../../api/store/users.ts'
import { buildDataServices, type DataServices } from '../../../api/data-services.ts'
import { ClassEngine, type Clock } from '../../../api/classes/engine.ts'
import { ClassError, type ClassView } from '../../../api/classes/types.ts'
import type { RoomMessage } from '../../../api/hub.ts'

/** A clock the test sets; due timers run in time order when it moves. */
class TestClock implements Clock {
  private timers: Array<{ due: number, fn: () => void, id: number }> = []
  private next = 1
  constructor (public t: number) {}
  now (): number { return this.t }
  setTimeout (fn: () => void, ms: number): unknown { const id = this.next++; this.timers.push({ due: this.t + ms, fn, id }); return id }
  clearTimeout (h: unknown): void { this.timers = this.timers.filter(x => x.id !== h) }
  set (to: number): void {
    for (;;) {
      const due = this.timers.filter(x => x.due <= to).sort((a, b) => a.due - b.due || a.id - b.id)[0]
      if (due === undefined) break
      this.timers = this.timers.filter(x => x !== due)
      this.t = Math.max(this.t, due.due)
      due.fn()
    }
    this.t = to
  }
}

// Two hours ago, on a whole minute: readings are in the past for the pipeline's clock.
const T0 = Math.floor((Date.now() - 7_200_000) / 60_000) * 60_000

interface Box { store: Store, users: Users, data: DataServices, clock: TestClock, dir: string }

async function open (t: { teardown (fn: () => unknown): void }, dir?: string, clock = new TestClock(T0), o: { learn?: boolean, consent?: boolean } = {}): Promise<Box> {
  const d = dir ?? await mkdtemp(join(tmpdir(), 'hr-classes-'))
  const store = await Store.open(d)
  const users = new Users(store)
  const data = await buildDataServices({
    store,
    users,
    log: pino({ level: 'silent' }),
    retention: { rawDays: 35, rollupDays: 400 },
    streamGapSeconds: 5,
    pruneIntervalMs: 0,
    clock,
    classes: { learnMaxHeartRate: o.learn ?? true, resultsSeconds: 120 },
    ...(o.consent === true ? { consent: { required: true, noticeVersion: '2' } } : {})
  })
  let closed = false
  const close = async (): Promise<void> => { if (closed) return; closed = true; data.classes.stop(); await data.pipeline.stop(); await store.close() }
  t.teardown(close)
  if (dir === undefined) t.teardown(async () => { await rm(d, { recursive: true, force: true }) })
  return { store, users, data, clock, dir: d }
}

/** Why a class command was refused ('resolved' when it was not). */
async function refused (p: Promise<unknown>): Promise<string> {
  try { await p; return 'resolved' } catch (err) { return err instanceof ClassError ? err.reason : String(err) }
}

/** The room_class messages of a room, in order, and a promise for the first one that passes `fn`. */
function watch (data: DataServices, roomId: string): { seen: Array<ClassView | null>, when: (fn: (v: ClassView | null) => boolean) => Promise<ClassView | null> } {
  const seen: Array<ClassView | null> = []
  const waiting: Array<{ fn: (v: ClassView | null) => boolean, resolve: (v: ClassView | null) => void }> = []
  data.hub.subscribeRoom(roomId, (m: RoomMessage) => {
    if (m.kind !== 'room_class') return
    seen.push(m.room_class)
    for (const w of [...waiting]) if (w.fn(m.room_class)) { waiting.splice(waiting.indexOf(w), 1); w.resolve(m.room_class) }
  })
  return { seen, when: async fn => await new Promise(resolve => { waiting.push({ fn, resolve }) }) }
}

async function reading (data: DataServices, profileId: string, at: number, bpm: number): Promise<void> {
  const r = await data.pipeline.submit({ profile_id: profileId, measured_at: at, heart_rate: bpm, source: 'http' })
  if (r.status !== 'stored') throw new Error(`reading not stored: ${JSON.stringify(r)}`)
}

const points = (v: ClassView | null): Array<[string, number, boolean]> => (v?.members ?? []).map(m => [m.display_name, m.effort_points, m.alert])

t.test('a 3-minute class: live view, alert, end at its planned length, summaries, learned maximum, results that expire', async t => {
  const { data, users, clock } = await open(t)
  const ann = await users.create({ username: 'ann', password: 'password123', max_heart_rate: 180, age: 40, weight_kg: 60, sex: 'female' })
  const bob = await users.create({ username: 'bob', password: 'password123', age: 30 })
  const room = await data.rooms.create('Studio 1')
  await data.rooms.upsertMember(room.room_id, ann.profile_id, { display_name: 'Ann', max_heart_rate: null })
  await data.rooms.upsertMember(room.room_id, bob.profile_id, { display_name: 'Bob', max_heart_rate: 200 })
  const w = watch(data, room.room_id)

  const rec = await data.classes.start(room.room_id, { name: 'Spin 18:00', minutes: 3 })
  t.same({ ...rec, class_id: '' }, { class_id: '', room_id: room.room_id, name: 'Spin 18:00', started_at: T0, planned_end: T0 + 180_000, ended_at: null, hidden: [] })
  t.same(points(w.seen[0]!), [['Ann', 0, false], ['Bob', 0, false]])
  t.equal(w.seen[0]?.state, 'running')
  t.equal(await refused(data.classes.start(room.room_id, {})), 'class_running')
  t.equal(await refused(data.classes.start('nope', {})), 'no_room')

  // Ann 190 bpm (105 % of her 180: zone 5, 4 points a minute; at or above 95 % for the alert); Bob 150 bpm (75 % of his configured 200: zone 3).
  for (let s = 0; s < 180; s++) {
    clock.set(T0 + s * 1000)
    await Promise.all([reading(data, ann.profile_id, T0 + s * 1000, 190), reading(data, bob.profile_id, T0 + s * 1000, 150)])
  }
  const states = w.seen.map(points)
  t.same(states, [
    [['Ann', 0, false], ['Bob', 0, false]], // start
    [['Ann', 4, false], ['Bob', 3, false]], // minute 0 complete (before the readings of 60 s)
    [['Ann', 4, true], ['Bob', 3, false]], // Ann's readings from 0 to 60 s are at or above 171 bpm: 60 s
    [['Ann', 8, true], ['Bob', 6, false]] // minute 1 complete
  ])
  t.equal(data.classes.view(room.room_id)?.members[0]?.alert, true)

  const results = w.when(v => v?.state === 'results')
  clock.set(T0 + 180_000)
  const r = await results
  t.same(r, {
    class_id: rec.class_id,
    room_id: room.room_id,
    name: 'Spin 18:00',
    started_at: T0,
    planned_end: T0 + 180_000,
    ended_at: T0 + 180_000,
    state: 'results',
    results_until: T0 + 300_000,
    members: [
      { profile_id: ann.profile_id, display_name: 'Ann', effort_points: 12, zone_minutes: [0, 0, 0, 0, 3], max_heart_rate: 180, alert: false, hidden: false },
      { profile_id: bob.profile_id, display_name: 'Bob', effort_points: 9, zone_minutes: [0, 0, 3, 0, 0], max_heart_rate: 200, alert: false, hidden: false }
    ]
  })
  t.same(data.classes.view(room.room_id), r)
  t.equal(await refused(data.classes.end(room.room_id)), 'no_class')

  const [annSummary] = await data.classStore.summariesOf(ann.profile_id)
  t.match(annSummary, { class_id: rec.class_id, room_id: room.room_id, name: 'Spin 18:00', started_at: T0, ended_at: T0 + 180_000, duration_s: 180, avg_bpm: 190, max_bpm: 190, zones_s: [0, 0, 0, 0, 179], effort_points: 12, rank: 1, ranked: 2, max_heart_rate: 180 })
  t.ok(annSummary!.calories_kcal > 0)
  t.match(await data.classStore.summariesOf(bob.profile_id), [{ effort_points: 9, rank: 2, ranked: 2, zones_s: [0, 0, 179, 0, 0], max_heart_rate: 200 }])
  // Ann held above her own maximum (180) for the whole class: it is raised to the highest 30 s average.
  t.same(await data.classStore.learnedOf(ann.profile_id), [{ at: T0 + 180_000, class_id: rec.class_id, old_bpm: 180, new_bpm: 190 }])
  t.equal((await users.get(ann.profile_id))?.max_heart_rate, 190)
  // Bob's own maximum (190, the default) was never exceeded: nothing learned; the room's 200 is the operator's.
  t.same(await data.classStore.learnedOf(bob.profile_id), [])
  t.equal((await users.get(bob.profile_id))?.max_heart_rate, undefined)

  clock.set(T0 + 299_999)
  t.equal(w.seen.at(-1)?.state, 'results')
  clock.set(T0 + 300_000)
  t.equal(w.seen.at(-1), null, 'the results expire: null')
  t.equal(data.classes.view(room.room_id), null)
})

t.test('ended by the coach; a room member hidden from displays and one hidden by the coach', async t => {
  const { data, users, clock } = await open(t)
  const ann = await users.create({ username: 'ann', password: 'password123' })
  const cy = await users.create({ username: 'cy', password: 'password123' })
  const dee = await users.create({ username: 'dee', password: 'password123' })
  const room = await data.rooms.create('Studio 2')
  for (const [u, name] of [[ann, 'Ann'], [cy, 'Cy'], [dee, 'Dee']] as const) await data.rooms.upsertMember(room.room_id, u.profile_id, { display_name: name, max_heart_rate: 200 })
  await users.update(dee.profile_id, u => ({ ...u, room_hidden: { since: 0, until: null } }))
  const w = watch(data, room.room_id)
  await data.classes.start(room.room_id, {})
  t.same(w.seen[0]?.members.map(m => m.display_name), ['Ann', 'Cy'], 'a member hidden from room displays is not in the view')
  t.equal(w.seen[0]?.planned_end, T0 + 45 * 60_000, 'default length 45 minutes')
  t.equal(w.seen[0]?.name, 'Studio 2', 'default name: the room\'s')
  const v = await data.classes.setHidden(room.room_id, cy.profile_id, true)
  t.same(v.members.map(m => [m.display_name, m.hidden]), [['Ann', false], ['Cy', true]])
  t.same(w.seen.at(-1), v)
  t.equal(data.classes.hiddenFromDisplays(room.room_id, cy.profile_id), true, 'display streams leave out Cy\'s readings')
  t.equal(data.classes.hiddenFromDisplays(room.room_id, ann.profile_id), false)
  t.equal(await refused(data.classes.setHidden(room.room_id, 'stranger', true)), 'not_member')
  for (let s = 0; s < 70; s++) {
    clock.set(T0 + s * 1000)
    await Promise.all([ann, cy, dee].map(async u => { await reading(data, u.profile_id, T0 + s * 1000, 130) }))
  }
  clock.set(T0 + 90_000)
  const ended = await data.classes.end(room.room_id)
  t.equal(ended.ended_at, T0 + 90_000)
  t.same(ended.hidden, [cy.profile_id])
  t.equal(data.classes.hiddenFromDisplays(room.room_id, cy.profile_id), false, 'the results have no readings to hide')
  const last = w.seen.at(-1)
  t.same(last?.members.map(m => [m.display_name, m.effort_points]), [['Ann', 2]], 'the results leave out the coach-hidden member and the one hidden from displays')
  // Every member who took part has a summary: 130 bpm is 65 % of 200, zone 2, one complete minute.
  for (const u of [ann, cy, dee]) t.match(await data.classStore.summariesOf(u.profile_id), [{ effort_points: 2, rank: 1, ranked: 3, duration_s: 90 }])
  t.equal(await refused(data.classes.end(room.room_id)), 'no_class')
  t.equal(await refused(data.classes.setHidden(room.room_id, ann.profile_id, false)), 'no_class')
})

t.test('a running class survives a restart; one whose planned end passed while the box was down ends at its planned end', async t => {
  const dir = await mkdtemp(join(tmpdir(), 'hr-classes-'))
  t.teardown(async () => { await rm(dir, { recursive: true, force: true }) })
  let box = await open(t, dir)
  const ann = await box.users.create({ username: 'ann', password: 'password123' })
  const room = await box.data.rooms.create('Studio 3')
  await box.data.rooms.upsertMember(room.room_id, ann.profile_id, { display_name: 'Ann', max_heart_rate: 200 })
  const rec = await box.data.classes.start(room.room_id, { minutes: 5 })
  for (let s = 0; s < 60; s++) await reading(box.data, ann.profile_id, T0 + s * 1000, 170)
  box.data.classes.stop()
  box.clock.set(T0 + 400_000)
  t.same((await box.data.classStore.runningClasses()).map(c => c.class_id), [rec.class_id], 'stop() cleared the timer: the class did not end')
  await box.data.pipeline.stop()
  await box.store.close()

  // Back two minutes in: the class goes on, its first minute rebuilt from the stored readings.
  box = await open(t, dir, new TestClock(T0 + 120_000))
  const view = box.data.classes.view(room.room_id)
  t.same(view?.members.map(m => [m.display_name, m.effort_points]), [['Ann', 4]])
  t.equal(view?.class_id, rec.class_id)
  box.data.classes.stop()
  await box.data.pipeline.stop()
  await box.store.close()

  // Back an hour later: it ended at its planned end, nothing is shown.
  box = await open(t, dir, new TestClock(T0 + 3_600_000))
  t.equal(box.data.classes.view(room.room_id), null)
  t.match(await box.data.classStore.summariesOf(ann.profile_id), [{ class_id: rec.class_id, ended_at: T0 + 300_000, duration_s: 300, effort_points: 4 }])
  t.same((await box.data.classStore.ofRoom(room.room_id)).map(c => c.ended_at), [T0 + 300_000])
  t.same(await box.data.classStore.runningClasses(), [])
  t.ok(box.data.classes instanceof ClassEngine)
})

t.test('members who join or leave during a class; without consent; classes.learn_max_heart_rate off', async t => {
  const { data, users, clock } = await open(t, undefined, new TestClock(T0), { learn: false, consent: true })
  const ann = await users.create({ username: 'ann', password: 'password123', max_heart_rate: 150 })
  const bob = await users.create({ username: 'bob', password: 'password123', max_heart_rate: 150 })
  const cy = await users.create({ username: 'cy', password: 'password123' })
  for (const u of [ann, bob]) await users.giveConsent(u.profile_id, '2', 'member')
  const room = await data.rooms.create('Studio 4')
  await data.rooms.upsertMember(room.room_id, ann.profile_id, { display_name: 'Ann', max_heart_rate: null })
  await data.rooms.upsertMember(room.room_id, cy.profile_id, { display_name: 'Cy', max_heart_rate: null })
  const w = watch(data, room.room_id)
  const rec = await data.classes.start(room.room_id, { minutes: 2 })
  t.same(w.seen[0]?.members.map(m => m.display_name), ['Ann'], 'Cy has not consented to the current notice: not on the display')

  const joined = w.when(v => v?.members.some(m => m.display_name === 'Bob') === true)
  await data.rooms.upsertMember(room.room_id, bob.profile_id, { display_name: 'Bob', max_heart_rate: null })
  t.same((await joined)?.members.map(m => m.display_name), ['Ann', 'Bob'], 'a member added during the class joins it')
  await data.classes.setHidden(room.room_id, bob.profile_id, true)
  for (let s = 0; s < 40; s++) {
    clock.set(T0 + s * 1000)
    await Promise.all([ann, bob].map(async u => { await reading(data, u.profile_id, T0 + s * 1000, 170) }))
  }
  await data.rooms.removeMember(room.room_id, bob.profile_id)
  t.same(w.seen.at(-1)?.members.map(m => m.display_name), ['Ann'], 'a member removed during the class leaves it')
  const results = w.when(v => v?.state === 'results')
  clock.set(T0 + 120_000)
  t.same((await results)?.members.map(m => [m.display_name, m.effort_points]), [['Ann', 4]])
  t.same((await data.classStore.get(rec.class_id))?.hidden, [], 'the removed member is out of the hidden list')
  t.same(await data.classStore.summariesOf(bob.profile_id), [], 'no summary for a member who left')
  // Ann held 170 bpm, above her 150, for 40 s: with classes.learn_max_heart_rate off nothing is learned.
  t.same(await data.classStore.learnedOf(ann.profile_id), [])
  t.equal((await users.get(ann.profile_id))?.max_heart_rate, 150)
})

t.test('a maximum the operator set on the room member stays; the member\'s own is raised', async t => {
  const { data, users, clock } = await open(t)
  const eve = await users.create({ username: 'eve', password: 'password123', max_heart_rate: 160 })
  const room = await data.rooms.create('Studio 3')
  await data.rooms.upsertMember(room.room_id, eve.profile_id, { display_name: 'Eve', max_heart_rate: 200 })
  const w = watch(data, room.room_id)
  await data.classes.start(room.room_id, { minutes: 1 })
  // 170 bpm for 40 s: above her own 160 for 30 s and more, below the room's 200.
  for (let s = 0; s < 40; s++) { clock.set(T0 + s * 1000); await reading(data, eve.profile_id, T0 + s * 1000, 170) }
  const results = w.when(v => v?.state === 'results')
  clock.set(T0 + 60_000)
  t.equal((await results)?.members[0]?.max_heart_rate, 200, 'the class used the room\'s maximum')
  t.same(await data.classStore.learnedOf(eve.profile_id), [{ at: T0 + 60_000, class_id: (await results)?.class_id, old_bpm: 160, new_bpm: 170 }])
  t.equal((await users.get(eve.profile_id))?.max_heart_rate, 170, 'her own maximum is raised')
  t.equal(data.rooms.get(room.room_id)?.members[0]?.max_heart_rate, 200, 'the room member\'s stays')
})
