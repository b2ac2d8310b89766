// Planning a group of readings: one list of batch operations (raw readings,
// minute and hour rollups, latest records) that the pipeline writes atomically
// and durably (reading-log.ts). Plans run one at a time (the pipeline serialises them with
// prune()), so the store reads a plan makes are not raced by another plan. A
// reading newer than the profile's latest (the usual case) needs no store read
// at all: the latest and the newest minute and hour rollup of each profile are
// cached (readings-cache.ts), and a minute or hour that starts after the
// latest reading has no rollup yet. A plan made on top of a plan whose batch
// is still being written (the pipeline's double buffering) is made from memory
// only, or not at all (NeedsRead).
import type { BatchOp, Sub } from './sublevel.ts'
import type { StoredReading } from '../pipeline/reading.ts'
import type { LatestRecord, RawReading } from './records.ts'
import type { ReadingPlan } from './types.ts'
import type { CachedRollup, ReadingCaches } from './readings-cache.ts'
import { encodeRaw, hourOf, minuteOf, readingKey } from '../pipeline/codec.ts'
import { addReading, changeCredit, emptyRollup, isRollup, streamCredit, type Rollup } from './rollups.ts'

/** A plan of the LevelDB store: its ops are LevelDB batch operations. */
export interface Plan extends ReadingPlan {
  /** Readings, rollups and latest records to write in one batch. */
  readonly ops: BatchOp[]
  /**
   * Adds a plan made on top of this one (`plan(more, this)`) so both are
   * written as one batch; `more` is not used afterwards.
   */
  absorb (more: Plan): void
}

/** What planning uses of the readings store (readings.ts). */
export interface PlanContext {
  readonly raw: Sub<Uint8Array>
  readonly minutes: Sub<Rollup>
  readonly hours: Sub<Rollup>
  readonly latestSub: Sub<LatestRecord>
  readonly gapMs: number
  readonly caches: ReadingCaches
  latest (profileId: string): Promise<LatestRecord | undefined>
  before (profileId: string, t: number): Promise<RawReading | undefined>
  after (profileId: string, t: number): Promise<RawReading | undefined>
  /** Updates the caches once a plan's batch was written (Plan.commit). */
  applyPlan (plan: GroupPlan): void
}

/** What a plan writes, kept by key so a later plan can build on it before it is written. */
export class GroupPlan implements Plan {
  readonly raw: BatchOp[] = []
  readonly stored: StoredReading[] = []
  readonly duplicates: StoredReading[] = []
  readonly minutes = new Map<string, Rollup>()
  readonly hours = new Map<string, Rollup>()
  readonly latest = new Map<string, LatestRecord>()
  committed = false

  constructor (private readonly owner: PlanContext, readonly base: GroupPlan | undefined) {}

  get ops (): BatchOp[] {
    const o = this.owner
    const ops = this.raw.slice()
    for (const [key, value] of this.minutes) ops.push({ type: 'put', sublevel: o.minutes, key, value })
    for (const [key, value] of this.hours) ops.push({ type: 'put', sublevel: o.hours, key, value })
    for (const [key, value] of this.latest) ops.push({ type: 'put', sublevel: o.latestSub, key, value })
    return ops
  }

  commit (): void {
    this.owner.applyPlan(this)
    this.committed = true
  }

  absorb (more: Plan): void {
    if (!(more instanceof GroupPlan) || more.base !== this) throw new TypeError('absorb takes a plan made on top of this one')
    for (const op of more.raw) this.raw.push(op)
    for (const r of more.stored) this.stored.push(r)
    for (const r of more.duplicates) this.duplicates.push(r)
    for (const [k, v] of more.minutes) this.minutes.set(k, v)
    for (const [k, v] of more.hours) this.hours.set(k, v)
    for (const [k, v] of more.latest) this.latest.set(k, v)
  }

  /** The newest uncommitted value of a key along this plan's bases. */
  static find<V> (base: GroupPlan | undefined, pick: (p: GroupPlan) => Map<string, V>, key: string): V | undefined {
    for (let p = base; p !== undefined && !p.committed; p = p.base) {
      const v = pick(p).get(key)
      if (v !== undefined) return v
    }
    return undefined
  }
}

/** A speculative plan needed a store read: plan the group again once the base is written. */
export class NeedsRead extends Error {}

interface Point { t: number, hr: number }

const minutesOf = (p: GroupPlan): Map<string, Rollup> => p.minutes
const hoursOf = (p: GroupPlan): Map<string, Rollup> => p.hours
const latestOf = (p: GroupPlan): Map<string, LatestRecord> => p.latest
const byTime = (a: StoredReading, b: StoredReading): number => a.measured_at - b.measured_at

/**
 * Plans a group of readings (already validated and owned) on top of `base`
 * (a plan not written yet, or undefined). Throws NeedsRead when planning on
 * an unwritten base would need a store read.
 */
export async function planGroup (ctx: PlanContext, group: StoredReading[], base: GroupPlan | undefined): Promise<GroupPlan> {
  const plan = new GroupPlan(ctx, base)
  const speculative = base !== undefined && !base.committed
  const byProfile = new Map<string, StoredReading[]>()
  for (const r of group) {
    const list = byProfile.get(r.profile_id)
    if (list === undefined) byProfile.set(r.profile_id, [r])
    else list.push(r)
  }
  const gap = ctx.gapMs
  const caches = ctx.caches
  const read = <T>(f: () => Promise<T>): Promise<T> => {
    if (speculative) throw new NeedsRead()
    return f()
  }
  // The rollup of the bucket (minute or hour) starting at `start`, copied into
  // this plan; without a store read when it is planned (here or in a base) or
  // cached already, or when it starts after the latest stored reading (it has
  // no rollup yet).
  const known = (planned: Map<string, Rollup>, pick: (p: GroupPlan) => Map<string, Rollup>, cache: Map<string, CachedRollup>, key: string, start: number, profileId: string, latest0: LatestRecord | undefined): Rollup | undefined => {
    let r = planned.get(key)
    if (r !== undefined) return r
    const inBase = GroupPlan.find(base, pick, key)
    const cached = cache.get(profileId)
    if (inBase !== undefined) r = { ...inBase }
    else if (cached?.key === key) r = { ...cached.rollup }
    else if (latest0 === undefined || start > latest0.measured_at) r = emptyRollup()
    else return undefined
    planned.set(key, r)
    return r
  }
  const load = async (planned: Map<string, Rollup>, sub: Sub<Rollup>, key: string): Promise<Rollup> => {
    const v = await read(async () => await sub.get(key))
    const r = isRollup(v) ? { ...v } : emptyRollup()
    planned.set(key, r)
    return r
  }
  // Applies f to the minute and the hour rollup of t; a promise only when one of them has to be read.
  const credit = (profileId: string, latest0: LatestRecord | undefined, t: number, f: (r: Rollup) => void): Promise<void> | undefined => {
    const m = minuteOf(t)
    const mk = readingKey(profileId, m)
    const minute = known(plan.minutes, minutesOf, caches.minute, mk, m, profileId, latest0)
    const h = hourOf(t)
    const hk = m === h ? mk : readingKey(profileId, h)
    const hour = known(plan.hours, hoursOf, caches.hour, hk, h, profileId, latest0)
    if (minute !== undefined && hour !== undefined) { f(minute); f(hour); return undefined }
    return (async () => {
      f(minute ?? await load(plan.minutes, ctx.minutes, mk))
      f(hour ?? await load(plan.hours, ctx.hours, hk))
    })()
  }

  for (const [profileId, list] of byProfile) {
    // Ascending order (stable: the first of equal timestamps wins), so every
    // reading inserted earlier in this group is before the current one.
    if (list.length > 1) list.sort(byTime)
    const cachedLatest = GroupPlan.find(base, latestOf, profileId) ?? caches.latest.get(profileId)
    const latest0 = cachedLatest === undefined ? await read(async () => await ctx.latest(profileId)) : cachedLatest ?? undefined
    let latest = latest0
    let lastInserted: Point | undefined
    for (const r of list) {
      const t = r.measured_at
      if (lastInserted !== undefined && lastInserted.t === t) { plan.duplicates.push(r); continue }
      let pred: Point | undefined
      let succ: Point | undefined
      if (latest === undefined || t > latest.measured_at) {
        pred = latest === undefined ? undefined : { t: latest.measured_at, hr: latest.heart_rate }
      } else {
        if (t === latest.measured_at) { plan.duplicates.push(r); continue }
        if (await read(async () => await ctx.raw.get(readingKey(profileId, t))) !== undefined) { plan.duplicates.push(r); continue }
        const before = await ctx.before(profileId, t)
        pred = before === undefined ? undefined : { t: before.measured_at, hr: before.heart_rate }
        if (lastInserted !== undefined && (pred === undefined || lastInserted.t > pred.t)) pred = lastInserted
        const after = await ctx.after(profileId, t)
        succ = after === undefined ? undefined : { t: after.measured_at, hr: after.heart_rate }
      }
      const c = pred === undefined ? 0 : streamCredit(t - pred.t, gap)
      const crediting = credit(profileId, latest0, t, x => { addReading(x, t, r.heart_rate, c) })
      if (crediting !== undefined) await crediting
      if (succ !== undefined) {
        const s = succ
        const before = pred === undefined ? 0 : streamCredit(s.t - pred.t, gap)
        const after = streamCredit(s.t - t, gap)
        if (before !== after) {
          const changing = credit(profileId, latest0, s.t, x => { changeCredit(x, s.t, s.hr, before, after) })
          if (changing !== undefined) await changing
        }
      }
      plan.raw.push({ type: 'put', sublevel: ctx.raw, key: readingKey(profileId, t), value: encodeRaw(r) })
      if (latest === undefined || t > latest.measured_at) {
        latest = { measured_at: t, heart_rate: r.heart_rate, source: r.source, ...(r.device_id === undefined ? {} : { device_id: r.device_id }) }
        plan.latest.set(profileId, latest)
      }
      lastInserted = { t, hr: r.heart_rate }
      plan.stored.push(r)
    }
  }
  return plan
}
