// Heart-rate readings in LevelDB: raw readings (`hr_raw`, binary values),
// per-minute and per-hour rollups (`hr_minute`, `hr_hour`) and the latest
// reading per profile (`hr_latest`), all keyed `<profile_id>!<13-digit ms>`
// (latest by profile id). `plan()` turns a group of readings into one list of
// batch operations (readings, both rollups, latest) so the pipeline writes
// them atomically with one fsync.
// Plans run one at a time (the pipeline serialises them with prune()), so the
// store reads a plan makes are not raced by another plan. A reading newer than
// the profile's latest (the usual case) needs no store read at all: the latest
// and the newest minute and hour rollup of each profile are cached, and a
// minute or hour that starts after the latest reading has no rollup yet.
// `plan(group, base)` plans on top of a plan whose batch is still being
// written (the pipeline's double buffering), from memory only.
import type { BatchOp, Store, Sub } from './db.ts'
import type { StoredReading } from '../pipeline/reading.ts'
import { decodeRaw, encodeRaw, hourOf, minuteOf, padTs, profileHigh, profileLow, readingKey, splitKey, type RawValue } from '../pipeline/codec.ts'
import { addReading, changeCredit, emptyRollup, isRollup, streamCredit, type Rollup } from './rollups.ts'
import { HOUR_SUBLEVEL } from './hour-rollups.ts'

export { HOUR_SUBLEVEL }

export interface LatestRecord { measured_at: number, heart_rate: number, source: StoredReading['source'], device_id?: string }
export interface RawReading extends RawValue { measured_at: number }

export interface Plan {
  /** Readings, rollups and latest records to write in one batch. */
  readonly ops: BatchOp[]
  readonly stored: StoredReading[]
  readonly duplicates: StoredReading[]
  /** Applies the plan to the in-memory caches; call only after the batch was written. */
  commit (): void
  /**
   * Adds a plan made on top of this one (`plan(more, this)`) so both are
   * written as one batch; `more` is not used afterwards.
   */
  absorb (more: Plan): void
}

/** What a plan writes, kept by key so a later plan can build on it before it is written. */
class GroupPlan implements Plan {
  readonly raw: BatchOp[] = []
  readonly stored: StoredReading[] = []
  readonly duplicates: StoredReading[] = []
  readonly minutes = new Map<string, Rollup>()
  readonly hours = new Map<string, Rollup>()
  readonly latest = new Map<string, LatestRecord>()
  committed = false

  constructor (private readonly owner: Readings, readonly base: GroupPlan | undefined) {}

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
class NeedsRead extends Error {}

interface Point { t: number, hr: number }

const DAY_MS = 86_400_000

export class Readings {
  readonly raw: Sub<Uint8Array>
  readonly minutes: Sub<Rollup>
  readonly hours: Sub<Rollup>
  readonly latestSub: Sub<LatestRecord>
  /** Latest per profile (null: known to have none). */
  private readonly latestCache = new Map<string, LatestRecord | null>()
  /** The newest minute and hour rollup written per profile, to avoid a read per in-order reading. */
  private readonly rollupCache = new Map<string, { key: string, rollup: Rollup }>()
  private readonly hourCache = new Map<string, { key: string, rollup: Rollup }>()
  private readonly maxCached: number

  constructor (private readonly store: Store, private readonly options: { gapMs: number, maxCachedProfiles?: number }) {
    this.raw = store.sub<Uint8Array>('hr_raw', 'view')
    this.minutes = store.sub<Rollup>('hr_minute')
    this.hours = store.sub<Rollup>(HOUR_SUBLEVEL)
    this.latestSub = store.sub<LatestRecord>('hr_latest')
    this.maxCached = options.maxCachedProfiles ?? 100_000
  }

  get gapMs (): number { return this.options.gapMs }

  async latest (profileId: string): Promise<LatestRecord | undefined> {
    const cached = this.latestCache.get(profileId)
    if (cached !== undefined) return cached ?? undefined
    const v = await this.latestSub.get(profileId)
    bounded(this.latestCache, profileId, v ?? null, this.maxCached)
    return v ?? undefined
  }

  /** The last reading strictly before t. */
  async before (profileId: string, t: number): Promise<RawReading | undefined> {
    for await (const [k, v] of this.raw.iterator({ gte: profileLow(profileId), lt: readingKey(profileId, t), reverse: true, limit: 1 })) {
      return toRaw(k, v)
    }
    return undefined
  }

  /** The first reading strictly after t. */
  async after (profileId: string, t: number): Promise<RawReading | undefined> {
    for await (const [k, v] of this.raw.iterator({ gt: readingKey(profileId, t), lt: profileHigh(profileId), limit: 1 })) {
      return toRaw(k, v)
    }
    return undefined
  }

  /** Raw readings with from <= measured_at <= to, oldest first. */
  async * range (profileId: string, from: number, to: number, limit = -1): AsyncGenerator<RawReading> {
    if (to < from) return
    for await (const [k, v] of this.raw.iterator({ gte: readingKey(profileId, Math.max(0, from)), lte: readingKey(profileId, to), limit })) {
      const r = toRaw(k, v)
      if (r !== undefined) yield r
    }
  }

  /**
   * At most `limit` raw readings with from <= measured_at < to (oldest first,
   * or newest first with `reverse`), read in one native call (history pages,
   * sessions); nextv may answer fewer rows than asked, so it loops.
   */
  async page (profileId: string, from: number, to: number, limit: number, reverse = false): Promise<RawReading[]> {
    if (to <= from || limit <= 0) return []
    const it = this.raw.iterator({ gte: readingKey(profileId, Math.max(0, from)), lt: readingKey(profileId, to), limit, reverse })
    try {
      const out: RawReading[] = []
      for (let read = 0; read < limit;) {
        const rows = await it.nextv(limit - read)
        if (rows.length === 0) break
        read += rows.length
        for (const [k, v] of rows) {
          const r = toRaw(k, v)
          if (r !== undefined) out.push(r)
        }
      }
      return out
    } finally {
      await it.close()
    }
  }

  /** Rollups of the minutes starting in [fromMinute, toMinute), oldest first. */
  async * rollups (profileId: string, fromMinute: number, toMinute: number): AsyncGenerator<[number, Rollup]> {
    yield * bucketRange(this.minutes, profileId, fromMinute, toMinute)
  }

  /** Rollups of the hours starting in [fromHour, toHour), oldest first (each the merge of its minutes). */
  async * hourRollups (profileId: string, fromHour: number, toHour: number): AsyncGenerator<[number, Rollup]> {
    yield * bucketRange(this.hours, profileId, fromHour, toHour)
  }

  /**
   * Plans the batch for a group of readings (already validated and owned).
   * With `base`, a plan whose batch is not written yet, the group is planned
   * as if base were written, without reading the store (a read would miss
   * base's writes): undefined when a reading needs one (older than the latest,
   * or a rollup neither planned nor cached), then plan again after base.
   */
  async plan (group: StoredReading[]): Promise<Plan>
  async plan (group: StoredReading[], base: Plan): Promise<Plan | undefined>
  async plan (group: StoredReading[], base?: Plan): Promise<Plan | undefined> {
    if (base !== undefined && !(base instanceof GroupPlan)) throw new TypeError('base must be a plan of this store')
    try {
      return await this.planOn(group, base)
    } catch (err) {
      if (err instanceof NeedsRead) return undefined
      throw err
    }
  }

  private async planOn (group: StoredReading[], base: GroupPlan | undefined): Promise<GroupPlan> {
    const plan = new GroupPlan(this, base)
    const speculative = base !== undefined && !base.committed
    const byProfile = new Map<string, StoredReading[]>()
    for (const r of group) {
      const list = byProfile.get(r.profile_id)
      if (list === undefined) byProfile.set(r.profile_id, [r])
      else list.push(r)
    }
    const gap = this.options.gapMs
    const read = <T>(f: () => Promise<T>): Promise<T> => {
      if (speculative) throw new NeedsRead()
      return f()
    }
    // The rollup of the bucket (minute or hour) starting at `start`, copied into
    // this plan; without a store read when it is planned (here or in a base) or
    // cached already, or when it starts after the latest stored reading (it has
    // no rollup yet).
    const known = (planned: Map<string, Rollup>, pick: (p: GroupPlan) => Map<string, Rollup>, cache: Map<string, { key: string, rollup: Rollup }>, key: string, start: number, profileId: string, latest0: LatestRecord | undefined): Rollup | undefined => {
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
    const credit = async (profileId: string, latest0: LatestRecord | undefined, t: number, f: (r: Rollup) => void): Promise<void> => {
      const m = minuteOf(t)
      const mk = readingKey(profileId, m)
      f(known(plan.minutes, p => p.minutes, this.rollupCache, mk, m, profileId, latest0) ?? await load(plan.minutes, this.minutes, mk))
      const h = hourOf(t)
      const hk = m === h ? mk : readingKey(profileId, h)
      f(known(plan.hours, p => p.hours, this.hourCache, hk, h, profileId, latest0) ?? await load(plan.hours, this.hours, hk))
    }

    for (const [profileId, list] of byProfile) {
      // Ascending order (stable: the first of equal timestamps wins), so every
      // reading inserted earlier in this group is before the current one.
      list.sort((a, b) => a.measured_at - b.measured_at)
      const cachedLatest = GroupPlan.find(base, p => p.latest, profileId) ?? this.latestCache.get(profileId)
      const latest0 = cachedLatest === undefined ? await read(async () => await this.latest(profileId)) : cachedLatest ?? undefined
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
          if (await read(async () => await this.raw.get(readingKey(profileId, t))) !== undefined) { plan.duplicates.push(r); continue }
          const before = await this.before(profileId, t)
          pred = before === undefined ? undefined : { t: before.measured_at, hr: before.heart_rate }
          if (lastInserted !== undefined && (pred === undefined || lastInserted.t > pred.t)) pred = lastInserted
          const after = await this.after(profileId, t)
          succ = after === undefined ? undefined : { t: after.measured_at, hr: after.heart_rate }
        }
        const c = pred === undefined ? 0 : streamCredit(t - pred.t, gap)
        await credit(profileId, latest0, t, x => { addReading(x, t, r.heart_rate, c) })
        if (succ !== undefined) {
          const s = succ
          const before = pred === undefined ? 0 : streamCredit(s.t - pred.t, gap)
          const after = streamCredit(s.t - t, gap)
          if (before !== after) await credit(profileId, latest0, s.t, x => { changeCredit(x, s.t, s.hr, before, after) })
        }
        plan.raw.push({ type: 'put', sublevel: this.raw, key: readingKey(profileId, t), value: encodeRaw(r) })
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

  /** The caches after a plan's batch was written (Plan.commit). */
  applyPlan (plan: GroupPlan): void {
    for (const [profileId, value] of plan.latest) bounded(this.latestCache, profileId, value, this.maxCached)
    for (const [planned, cache] of [[plan.minutes, this.rollupCache], [plan.hours, this.hourCache]] as const) {
      for (const [key, rollup] of planned) {
        const split = splitKey(key)
        if (split === undefined) continue
        const cached = cache.get(split.profile_id)
        if (cached === undefined || cached.key <= key) bounded(cache, split.profile_id, { key, rollup }, this.maxCached)
      }
    }
  }

  /** Forgets cached state (after a failed batch the caches were never touched, so this is only for tests). */
  resetCaches (): void {
    this.latestCache.clear()
    this.rollupCache.clear()
    this.hourCache.clear()
  }

  /** Profiles that have ever had a reading. */
  async * profiles (): AsyncGenerator<string> {
    for await (const k of this.latestSub.keys()) yield k
  }

  /**
   * Deletes raw readings older than rawDays and rollups older than rollupDays,
   * at most `limit` raw readings and minute rollups per call. Returns how many
   * of those were deleted (call again while it returns `limit`). An hour's
   * rollup goes in the same batch as the last of its minutes (an hour that
   * starts before the cut but ends after it is kept) and is not counted.
   */
  async prune (now: number, retention: { rawDays: number, rollupDays: number }, limit = 1000): Promise<number> {
    const rawCut = now - retention.rawDays * DAY_MS
    const rollupCut = minuteOf(now - retention.rollupDays * DAY_MS)
    let deleted = 0
    for await (const profileId of this.profiles()) {
      for (const [sub, cut] of [[this.raw, rawCut], [this.minutes, rollupCut]] as const) {
        if (deleted >= limit) return deleted
        const ops: BatchOp[] = []
        const budget = limit - deleted
        for await (const k of (sub as Sub<unknown>).keys({ gte: profileLow(profileId), lt: `${profileId}!${padTs(Math.max(0, cut))}`, limit: budget })) {
          ops.push({ type: 'del', sublevel: sub as Sub<unknown>, key: k })
        }
        const counted = ops.length
        if (sub === this.minutes && counted < budget) {
          // Every minute before the cut is in this batch: the whole hours before it go too.
          for await (const k of this.hours.keys({ gte: profileLow(profileId), lt: `${profileId}!${padTs(Math.max(0, hourOf(cut)))}`, limit })) {
            ops.push({ type: 'del', sublevel: this.hours, key: k })
          }
        }
        if (ops.length > 0) {
          await this.store.batch(ops)
          deleted += counted
          for (const cache of [this.rollupCache, this.hourCache]) {
            const cached = cache.get(profileId)
            if (sub === this.minutes && cached !== undefined && ops.some(o => o.key === cached.key && o.sublevel === (cache === this.rollupCache ? this.minutes : this.hours))) cache.delete(profileId)
          }
        }
      }
    }
    return deleted
  }
}

/** Sets a cache entry, dropping the oldest entries beyond `max`. */
function bounded<V> (cache: Map<string, V>, key: string, value: V, max: number): void {
  cache.delete(key)
  cache.set(key, value)
  while (cache.size > max) {
    const oldest = cache.keys().next()
    if (oldest.done === true) break
    cache.delete(oldest.value)
  }
}

/** Rollups keyed in [from, to), read 1000 at a time (one native call each, not one per row). */
async function * bucketRange (sub: Sub<Rollup>, profileId: string, from: number, to: number): AsyncGenerator<[number, Rollup]> {
  if (to <= from) return
  const it = sub.iterator({ gte: readingKey(profileId, from), lt: readingKey(profileId, to) })
  try {
    for (;;) {
      const rows = await it.nextv(1000)
      if (rows.length === 0) break
      for (const [k, v] of rows) {
        const key = splitKey(k)
        if (key !== undefined && isRollup(v)) yield [key.t, v]
      }
    }
  } finally {
    await it.close()
  }
}

function toRaw (key: string, value: Uint8Array): RawReading | undefined {
  const k = splitKey(key)
  if (k === undefined) return undefined
  try {
    return { measured_at: k.t, ...decodeRaw(value) }
  } catch {
    return undefined
  }
}
