// The class engine (issue 43): runs the classes of the box's rooms.
// A class starts (start) and ends (end, or by itself at its planned end). While
// it runs the engine follows the room's readings through the hub, keeps each
// member's minute buckets and their readings of the last minutes (the safety
// rule), and publishes the class view (`room_class` to the room's display
// streams) when it starts, at every completed minute, when an alert turns on
// or off, when the coach hides or shows a member, when it ends (the results,
// shown for classes.results_seconds) and null when the results expire. At the
// end, every member's summary is computed from the stored readings of the
// class window (summary.ts) and written with the learned maxima (learn-max.ts)
// in one batch; then the members' own maxima are raised.
// The running class of a room is stored: after a restart it goes on, and one
// whose planned end passed while the box was down ends at its planned end.
// Time comes from an injectable clock, so tests drive it without sleeps.
import { randomUUID } from 'node:crypto'
import type { Logger } from 'pino'
import type { Hub, RoomMessage } from '../hub.ts'
import type { Rooms, MemberRecord } from '../store/rooms.ts'
import type { ReadingStore, UserStore } from '../store/types.ts'
import type { ClassStore, MemberOutcome } from '../store/classes.ts'
import { KeyedLock } from '../store/lock.ts'
import { maxHeartRate } from '../web/zones.ts'
import { sessionOptions } from '../session-reads.ts'
import { addToBuckets, completedMinutes, effortOfBuckets, MINUTE_MS, zoneMinutes, type HrSample, type MinuteBucket } from './effort.ts'
import { alertOf, ALERT_HOLD_MS } from './safety.ts'
import { learnedMax } from './learn-max.ts'
import { classResults, type ResultInput } from './summary.ts'
import { ClassError, type ClassControl, type ClassMemberView, type ClassRecord, type ClassView } from './types.ts'

export const DEFAULT_MINUTES = 45
export const MAX_MINUTES = 600

/** Time and timers; tests pass one they advance by hand. */
export interface Clock {
  now (): number
  setTimeout (fn: () => void, ms: number): unknown
  clearTimeout (handle: unknown): void
}

export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => { const h = setTimeout(fn, ms); h.unref(); return h },
  clearTimeout: h => { clearTimeout(h as ReturnType<typeof setTimeout>) }
}

export interface ClassEngineOptions {
  classes: ClassStore
  rooms: Rooms
  users: UserStore
  readings: ReadingStore
  hub: Hub
  log?: Logger
  /** Members whose data never reaches a display: hidden from room displays, or without the consent required. */
  offDisplay: (profileId: string) => boolean
  /** classes.learn_max_heart_rate */
  learnMaxHeartRate: boolean
  /** classes.results_seconds */
  resultsSeconds: number
  /** data.stream_gap_seconds in ms: readings further apart break a hold (learned maximum, safety). */
  streamGapMs: number
  clock?: Clock
}

interface MemberLive {
  profile_id: string
  display_name: string
  max: number
  bounds: number[]
  buckets: Map<number, MinuteBucket>
  /** Readings of the last minutes, time order (the safety rule). */
  recent: HrSample[]
  alert: boolean
}

interface Running { kind: 'running', rec: ClassRecord, members: Map<string, MemberLive>, off: () => void, timer: unknown, published: number }
interface Results { kind: 'results', view: ClassView, timer: unknown }

export class ClassEngine implements ClassControl {
  private readonly clock: Clock
  private readonly state = new Map<string, Running | Results>()
  private readonly lock = new KeyedLock()
  private stopped = false

  constructor (private readonly o: ClassEngineOptions) {
    this.clock = o.clock ?? systemClock
  }

  /** Takes up the stored running classes: each goes on, or ends at its planned end if that passed. */
  async load (): Promise<void> {
    for (const rec of await this.o.classes.runningClasses()) {
      await this.lock.run(rec.room_id, async () => {
        if (this.o.rooms.get(rec.room_id) === undefined || rec.planned_end <= this.clock.now()) {
          await this.finish(rec, Math.min(rec.planned_end, Math.max(rec.started_at, this.clock.now())))
          return
        }
        const live = await this.follow(rec)
        for (const m of live.members.values()) {
          for await (const r of this.o.readings.range(m.profile_id, rec.started_at, this.clock.now())) this.add(live, m, { t: r.measured_at, bpm: r.heart_rate })
        }
        this.publish(rec.room_id)
      })
    }
  }

  /** Clears every timer and subscription; running classes stay stored and go on at the next load. */
  stop (): void {
    this.stopped = true
    for (const s of this.state.values()) {
      this.clock.clearTimeout(s.timer)
      if (s.kind === 'running') s.off()
    }
    this.state.clear()
  }

  async start (roomId: string, o: { name?: string, minutes?: number }): Promise<ClassRecord> {
    return await this.lock.run(roomId, async () => {
      const room = this.o.rooms.get(roomId)
      if (room === undefined) throw new ClassError('no_room', `no room ${roomId}`)
      if (this.state.get(roomId)?.kind === 'running') throw new ClassError('class_running', `a class is running in room ${roomId}`)
      const minutes = o.minutes ?? DEFAULT_MINUTES
      if (!Number.isInteger(minutes) || minutes < 1 || minutes > MAX_MINUTES) throw new RangeError(`minutes must be an integer from 1 to ${MAX_MINUTES}`)
      const now = this.clock.now()
      const rec: ClassRecord = { class_id: randomUUID(), room_id: roomId, name: o.name ?? room.name, started_at: now, planned_end: now + minutes * MINUTE_MS, ended_at: null, hidden: [] }
      await this.o.classes.create(rec)
      this.clearResults(roomId)
      await this.follow(rec)
      this.publish(roomId)
      this.o.log?.info({ room_id: roomId, class_id: rec.class_id, minutes }, 'class started')
      return structuredClone(rec)
    })
  }

  async end (roomId: string): Promise<ClassRecord> {
    return await this.lock.run(roomId, async () => {
      const s = this.state.get(roomId)
      if (s?.kind !== 'running') throw new ClassError('no_class', `no class is running in room ${roomId}`)
      return await this.finish(s.rec, Math.min(this.clock.now(), s.rec.planned_end))
    })
  }

  view (roomId: string): ClassView | null {
    const s = this.state.get(roomId)
    if (s === undefined) return null
    return s.kind === 'results' ? structuredClone(s.view) : this.liveView(s)
  }

  hiddenFromDisplays (roomId: string, profileId: string): boolean {
    const s = this.state.get(roomId)
    return s?.kind === 'running' && s.rec.hidden.includes(profileId)
  }

  async setHidden (roomId: string, profileId: string, hidden: boolean): Promise<ClassView> {
    return await this.lock.run(roomId, async () => {
      const s = this.state.get(roomId)
      if (s?.kind !== 'running') throw new ClassError('no_class', `no class is running in room ${roomId}`)
      if (!this.o.rooms.isMember(roomId, profileId)) throw new ClassError('not_member', `${profileId} is not a member of room ${roomId}`)
      const next = new Set(s.rec.hidden)
      if (hidden) next.add(profileId); else next.delete(profileId)
      const rec = { ...s.rec, hidden: [...next] }
      await this.o.classes.save(rec)
      s.rec = rec
      this.publish(roomId)
      return this.liveView(s)
    })
  }

  /** Subscribes to the room and builds its members' state. */
  private async follow (rec: ClassRecord): Promise<Running> {
    const room = this.o.rooms.get(rec.room_id)
    const live: Running = { kind: 'running', rec, members: new Map(), off: () => {}, timer: undefined, published: -1 }
    for (const m of room?.members ?? []) live.members.set(m.profile_id, await this.memberLive(m))
    live.off = this.o.hub.subscribeRoom(rec.room_id, message => { this.onRoomMessage(live, message) })
    this.state.set(rec.room_id, live)
    this.schedule(live)
    return live
  }

  private async memberLive (m: MemberRecord, before?: MemberLive): Promise<MemberLive> {
    const user = await this.o.users.get(m.profile_id)
    return {
      profile_id: m.profile_id,
      display_name: m.display_name,
      max: maxHeartRate(m.max_heart_rate, user?.max_heart_rate, user?.age).bpm,
      bounds: [...m.zones],
      buckets: before?.buckets ?? new Map(),
      recent: before?.recent ?? [],
      alert: before?.alert ?? false
    }
  }

  private onRoomMessage (live: Running, message: RoomMessage): void {
    if (this.state.get(live.rec.room_id) !== live) return
    if (message.kind === 'heart_rate') {
      const m = live.members.get(message.heart_rate.profile_id)
      if (m === undefined) return
      const t = Date.parse(message.timestamp)
      if (t < live.rec.started_at || t >= live.rec.planned_end) return
      const was = m.alert
      this.add(live, m, { t, bpm: message.heart_rate.bpm })
      if (m.alert !== was) { this.publish(live.rec.room_id); this.schedule(live) }
    } else if (message.kind === 'room_member_removed') {
      // A member who leaves (or is erased) is out of the class: no summary, and out of the coach's hidden list.
      const pid = message.room_member_removed.profile_id
      if (live.rec.hidden.includes(pid)) {
        live.rec = { ...live.rec, hidden: live.rec.hidden.filter(p => p !== pid) }
        const rec = live.rec
        this.lock.run(rec.room_id, async () => { if (this.state.get(rec.room_id) === live) await this.o.classes.save(live.rec) })
          .catch((err: unknown) => { this.o.log?.error({ err, room_id: rec.room_id }, 'class: saving the hidden members failed') })
      }
      if (live.members.delete(pid)) this.publish(live.rec.room_id)
    } else if (message.kind === 'room_member_updated') {
      // A new member, a new maximum or zones, or a member who hides from displays (or shows again).
      const pid = message.room_member_updated.profile_id
      const member = this.o.rooms.get(live.rec.room_id)?.members.find(x => x.profile_id === pid)
      if (member === undefined) return
      this.memberLive(member, live.members.get(pid)).then(m => {
        if (this.state.get(live.rec.room_id) !== live || !this.o.rooms.isMember(live.rec.room_id, pid)) return
        live.members.set(pid, m)
        this.publish(live.rec.room_id)
      }, (err: unknown) => { this.o.log?.error({ err, room_id: live.rec.room_id }, 'class: reading a member failed') })
    }
  }

  /** Adds a reading to the member's minute bucket and recent readings, and updates their alert. */
  private add (live: Running, m: MemberLive, s: HrSample): void {
    addToBuckets(m.buckets, live.rec.started_at, s)
    let i = m.recent.length
    while (i > 0 && m.recent[i - 1]!.t > s.t) i--
    m.recent.splice(i, 0, s)
    const newest = m.recent[m.recent.length - 1]!.t
    const keepFrom = newest - ALERT_HOLD_MS - 2 * this.o.streamGapMs
    let drop = 0
    while (drop < m.recent.length && m.recent[drop]!.t < keepFrom) drop++
    if (drop > 0) m.recent.splice(0, drop)
    m.alert = alertOf(m.recent, m.max, this.clock.now(), { gapMs: this.o.streamGapMs })
  }

  /** The next tick: the next minute boundary or the planned end; every stream gap while an alert is on (a strap that stops ends it). */
  private schedule (live: Running): void {
    this.clock.clearTimeout(live.timer)
    if (this.stopped) return
    const now = this.clock.now()
    const start = live.rec.started_at
    let due = Math.min(start + (completedMinutes(start, now) + 1) * MINUTE_MS, live.rec.planned_end)
    if ([...live.members.values()].some(m => m.alert)) due = Math.min(due, now + this.o.streamGapMs)
    live.timer = this.clock.setTimeout(() => { this.tick(live) }, Math.max(0, due - now))
  }

  private tick (live: Running): void {
    const roomId = live.rec.room_id
    if (this.state.get(roomId) !== live) return
    const now = this.clock.now()
    if (now >= live.rec.planned_end) {
      this.lock.run(roomId, async () => {
        if (this.state.get(roomId) === live) await this.finish(live.rec, live.rec.planned_end)
      }).catch((err: unknown) => {
        this.o.log?.error({ err, room_id: roomId }, 'ending the class failed; trying again')
        if (this.state.get(roomId) === live) live.timer = this.clock.setTimeout(() => { this.tick(live) }, 5000)
      })
      return
    }
    let changed = completedMinutes(live.rec.started_at, now) !== live.published
    for (const m of live.members.values()) {
      const alert = alertOf(m.recent, m.max, now, { gapMs: this.o.streamGapMs })
      if (alert !== m.alert) { m.alert = alert; changed = true }
    }
    if (changed) this.publish(roomId)
    this.schedule(live)
  }

  /** The running class's view: its members on displays, ranked by effort points (ties by name). */
  private liveView (live: Running): ClassView {
    const completed = completedMinutes(live.rec.started_at, Math.min(this.clock.now(), live.rec.planned_end))
    const members: ClassMemberView[] = []
    for (const m of live.members.values()) {
      if (this.o.offDisplay(m.profile_id)) continue
      const e = effortOfBuckets(m.buckets, completed, { max: m.max, bounds: m.bounds })
      members.push({ profile_id: m.profile_id, display_name: m.display_name, effort_points: e.total, zone_minutes: zoneMinutes(e.minutes), max_heart_rate: m.max, alert: m.alert, hidden: live.rec.hidden.includes(m.profile_id) })
    }
    members.sort(byEffort)
    const r = live.rec
    return { class_id: r.class_id, room_id: r.room_id, name: r.name, started_at: r.started_at, planned_end: r.planned_end, ended_at: null, state: 'running', results_until: null, members }
  }

  private publish (roomId: string): void {
    const s = this.state.get(roomId)
    if (s?.kind === 'running') s.published = completedMinutes(s.rec.started_at, Math.min(this.clock.now(), s.rec.planned_end))
    const view = s === undefined ? null : s.kind === 'results' ? s.view : this.liveView(s)
    this.o.hub.publishRoomEvent(roomId, { kind: 'room_class', timestamp: new Date(this.clock.now()).toISOString(), room_class: view })
  }

  private clearResults (roomId: string): void {
    const s = this.state.get(roomId)
    if (s?.kind === 'results') { this.clock.clearTimeout(s.timer); this.state.delete(roomId) }
  }

  /**
   * Ends a class at `endedAt`: summaries from the stored readings, learned maxima, one batch; then the members' own
   * maxima; then the results on the displays until results_until (nothing when that already passed).
   */
  private async finish (rec: ClassRecord, endedAt: number): Promise<ClassRecord> {
    const live = this.state.get(rec.room_id)
    const ended: ClassRecord = { ...rec, ended_at: endedAt }
    const room = this.o.rooms.get(rec.room_id)
    const inputs: ResultInput[] = []
    const learnable = new Map<string, { max: number, userMax: number | null }>()
    for (const m of room?.members ?? []) {
      const user = await this.o.users.get(m.profile_id)
      if (user === undefined) continue
      const readings = []
      for await (const r of this.o.readings.range(m.profile_id, rec.started_at, endedAt - 1)) readings.push({ measured_at: r.measured_at, heart_rate: r.heart_rate })
      const max = maxHeartRate(m.max_heart_rate, user.max_heart_rate, user.age).bpm
      inputs.push({ profile_id: m.profile_id, display_name: m.display_name, readings, max, bounds: m.zones, body: sessionOptions(user, 0, 0).body })
      // Learned against the member's own maximum, which is what is raised; a maximum the operator set on the room member stays as it is.
      learnable.set(m.profile_id, { max: maxHeartRate(null, user.max_heart_rate, user.age).bpm, userMax: user.max_heart_rate ?? null })
    }
    const results = classResults(rec, endedAt, inputs, { streamGapMs: this.o.streamGapMs })
    const outcomes: MemberOutcome[] = results.map(r => {
      const l = learnable.get(r.profile_id)
      const input = inputs.find(i => i.profile_id === r.profile_id)
      const learned = !this.o.learnMaxHeartRate || l === undefined || input === undefined
        ? null
        : learnedMax(input.readings.map(x => ({ t: x.measured_at, bpm: x.heart_rate })), l.max, { gapMs: this.o.streamGapMs })
      return { profile_id: r.profile_id, summary: r.summary, ...(learned === null ? {} : { learned: { at: endedAt, class_id: rec.class_id, old_bpm: l?.userMax ?? null, new_bpm: learned } }) }
    })
    await this.o.classes.finish(ended, outcomes)
    if (live?.kind === 'running') { this.clock.clearTimeout(live.timer); live.off() }
    this.state.delete(rec.room_id)
    for (const o of outcomes) {
      const learned = o.learned
      if (learned === undefined) continue
      await this.o.users.update(o.profile_id, u => (u.max_heart_rate ?? 0) < learned.new_bpm ? { ...u, max_heart_rate: learned.new_bpm } : u)
      this.o.log?.info({ profile_id: o.profile_id, old_bpm: learned.old_bpm, new_bpm: learned.new_bpm }, 'class raised a member\'s maximum heart rate')
    }
    const until = endedAt + this.o.resultsSeconds * 1000
    const now = this.clock.now()
    if (until > now && !this.stopped) {
      const members: ClassMemberView[] = results
        .filter(r => !this.o.offDisplay(r.profile_id) && !rec.hidden.includes(r.profile_id))
        .map(r => ({ profile_id: r.profile_id, display_name: r.display_name, effort_points: r.summary.effort_points, zone_minutes: zoneMinutes(r.effort.minutes), max_heart_rate: r.summary.max_heart_rate, alert: false, hidden: false }))
        .sort(byEffort)
      const view: ClassView = { class_id: rec.class_id, room_id: rec.room_id, name: rec.name, started_at: rec.started_at, planned_end: rec.planned_end, ended_at: endedAt, state: 'results', results_until: until, members }
      const shown: Results = { kind: 'results', view, timer: undefined }
      shown.timer = this.clock.setTimeout(() => {
        if (this.state.get(rec.room_id) !== shown) return
        this.state.delete(rec.room_id)
        this.publish(rec.room_id)
      }, until - now)
      this.state.set(rec.room_id, shown)
    }
    this.publish(rec.room_id)
    this.o.log?.info({ room_id: rec.room_id, class_id: rec.class_id, members: results.length }, 'class ended')
    return ended
  }
}

function byEffort (a: ClassMemberView, b: ClassMemberView): number {
  return b.effort_points - a.effort_points || a.display_name.localeCompare(b.display_name)
}
