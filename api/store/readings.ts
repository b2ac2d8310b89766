// Heart-rate readings in LevelDB: raw readings (`hr_raw`, binary values),
// per-minute rollups (`hr_minute`) and the latest reading per profile
// (`hr_latest`), all keyed `<profile_id>!<13-digit ms>` (latest by profile id).
// `plan()` turns a group of readings into one list of batch operations (readings,
// rollups, latest) so the pipeline writes them atomically with one fsync.
// Plans run one at a time (the pipeline serialises them with prune()), so the
// store reads a plan makes are not raced by another plan.
import type { BatchOp, Store, Sub } from './db.ts'
import type { StoredReading } from '../pipeline/reading.ts'
import { decodeRaw, encodeRaw, minuteOf, padTs, profileHigh, profileLow, readingKey, splitKey, type RawValue } from '../pipeline/codec.ts'
import { addReading, changeCredit, emptyRollup, isRollup, streamCredit, type Rollup } from './rollups.ts'

export interface LatestRecord { measured_at: number, heart_rate: number, source: StoredReading['source'], device_id?: string }
export interface RawReading extends RawValue { measured_at: number }

export interface Plan {
  ops: BatchOp[]
  stored: StoredReading[]
  duplicates: StoredReading[]
  /** Applies the plan to the in-memory caches; call only after the batch was written. */
  commit (): void
}

interface Point { t: number, hr: number }

const DAY_MS = 86_400_000

export class Readings {
  readonly raw: Sub<Uint8Array>
  readonly minutes: Sub<Rollup>
  readonly latestSub: Sub<LatestRecord>
  /** Latest per profile (null: known to have none). */
  private readonly latestCache = new Map<string, LatestRecord | null>()
  /** The newest rollup written per profile, to avoid a read per in-order reading. */
  private readonly rollupCache = new Map<string, { key: string, rollup: Rollup }>()

  constructor (private readonly store: Store, private readonly options: { gapMs: number }) {
    this.raw = store.sub<Uint8Array>('hr_raw', 'view')
    this.minutes = store.sub<Rollup>('hr_minute')
    this.latestSub = store.sub<LatestRecord>('hr_latest')
  }

  get gapMs (): number { return this.options.gapMs }

  async latest (profileId: string): Promise<LatestRecord | undefined> {
    const cached = this.latestCache.get(profileId)
    if (cached !== undefined) return cached ?? undefined
    const v = await this.latestSub.get(profileId)
    this.latestCache.set(profileId, v ?? null)
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

  /** Rollups of the minutes starting in [fromMinute, toMinute), oldest first. */
  async * rollups (profileId: string, fromMinute: number, toMinute: number): AsyncGenerator<[number, Rollup]> {
    if (toMinute <= fromMinute) return
    for await (const [k, v] of this.minutes.iterator({ gte: readingKey(profileId, fromMinute), lt: readingKey(profileId, toMinute) })) {
      const key = splitKey(k)
      if (key !== undefined && isRollup(v)) yield [key.t, v]
    }
  }

  /** Plans the batch for a group of readings (already validated and owned). */
  async plan (group: StoredReading[]): Promise<Plan> {
    const ops: BatchOp[] = []
    const stored: StoredReading[] = []
    const duplicates: StoredReading[] = []
    const rollups = new Map<string, Rollup>()
    const latestNext = new Map<string, LatestRecord>()
    const byProfile = new Map<string, StoredReading[]>()
    for (const r of group) {
      const list = byProfile.get(r.profile_id)
      if (list === undefined) byProfile.set(r.profile_id, [r])
      else list.push(r)
    }
    const gap = this.options.gapMs
    const rollupFor = async (profileId: string, t: number): Promise<Rollup> => {
      const key = readingKey(profileId, minuteOf(t))
      let r = rollups.get(key)
      if (r !== undefined) return r
      const cached = this.rollupCache.get(profileId)
      if (cached?.key === key) r = { ...cached.rollup }
      else {
        const v = await this.minutes.get(key)
        r = isRollup(v) ? { ...v } : emptyRollup()
      }
      rollups.set(key, r)
      return r
    }

    for (const [profileId, list] of byProfile) {
      // Ascending order (stable: the first of equal timestamps wins), so every
      // reading inserted earlier in this group is before the current one.
      list.sort((a, b) => a.measured_at - b.measured_at)
      let latest = await this.latest(profileId)
      let lastInserted: Point | undefined
      for (const r of list) {
        const t = r.measured_at
        if (lastInserted !== undefined && lastInserted.t === t) { duplicates.push(r); continue }
        let pred: Point | undefined
        let succ: Point | undefined
        if (latest === undefined || t > latest.measured_at) {
          pred = latest === undefined ? undefined : { t: latest.measured_at, hr: latest.heart_rate }
        } else {
          if (t === latest.measured_at || await this.raw.get(readingKey(profileId, t)) !== undefined) { duplicates.push(r); continue }
          const before = await this.before(profileId, t)
          pred = before === undefined ? undefined : { t: before.measured_at, hr: before.heart_rate }
          if (lastInserted !== undefined && (pred === undefined || lastInserted.t > pred.t)) pred = lastInserted
          const after = await this.after(profileId, t)
          succ = after === undefined ? undefined : { t: after.measured_at, hr: after.heart_rate }
        }
        const credit = pred === undefined ? 0 : streamCredit(t - pred.t, gap)
        addReading(await rollupFor(profileId, t), t, r.heart_rate, credit)
        if (succ !== undefined) {
          const before = pred === undefined ? 0 : streamCredit(succ.t - pred.t, gap)
          const after = streamCredit(succ.t - t, gap)
          if (before !== after) changeCredit(await rollupFor(profileId, succ.t), succ.t, succ.hr, before, after)
        }
        ops.push({ type: 'put', sublevel: this.raw, key: readingKey(profileId, t), value: encodeRaw(r) })
        if (latest === undefined || t > latest.measured_at) {
          latest = { measured_at: t, heart_rate: r.heart_rate, source: r.source, ...(r.device_id === undefined ? {} : { device_id: r.device_id }) }
          latestNext.set(profileId, latest)
        }
        lastInserted = { t, hr: r.heart_rate }
        stored.push(r)
      }
    }
    for (const [key, value] of rollups) ops.push({ type: 'put', sublevel: this.minutes, key, value })
    for (const [profileId, value] of latestNext) ops.push({ type: 'put', sublevel: this.latestSub, key: profileId, value })
    return {
      ops,
      stored,
      duplicates,
      commit: () => {
        for (const [profileId, value] of latestNext) this.latestCache.set(profileId, value)
        for (const [key, rollup] of rollups) {
          const split = splitKey(key)
          if (split === undefined) continue
          const cached = this.rollupCache.get(split.profile_id)
          if (cached === undefined || cached.key <= key) this.rollupCache.set(split.profile_id, { key, rollup })
        }
      }
    }
  }

  /** Forgets cached state (after a failed batch the caches were never touched, so this is only for tests). */
  resetCaches (): void {
    this.latestCache.clear()
    this.rollupCache.clear()
  }

  /** Profiles that have ever had a reading. */
  async * profiles (): AsyncGenerator<string> {
    for await (const k of this.latestSub.keys()) yield k
  }

  /**
   * Deletes raw readings older than rawDays and rollups older than rollupDays,
   * at most `limit` keys per call. Returns how many were deleted (call again
   * while it returns `limit`).
   */
  async prune (now: number, retention: { rawDays: number, rollupDays: number }, limit = 1000): Promise<number> {
    const rawCut = now - retention.rawDays * DAY_MS
    const rollupCut = minuteOf(now - retention.rollupDays * DAY_MS)
    let deleted = 0
    for await (const profileId of this.profiles()) {
      for (const [sub, cut] of [[this.raw, rawCut], [this.minutes, rollupCut]] as const) {
        if (deleted >= limit) return deleted
        const ops: BatchOp[] = []
        for await (const k of (sub as Sub<unknown>).keys({ gte: profileLow(profileId), lt: `${profileId}!${padTs(Math.max(0, cut))}`, limit: limit - deleted })) {
          ops.push({ type: 'del', sublevel: sub as Sub<unknown>, key: k })
        }
        if (ops.length > 0) {
          await this.store.batch(ops)
          deleted += ops.length
          const cached = this.rollupCache.get(profileId)
          if (sub === this.minutes && cached !== undefined && ops.some(o => o.key === cached.key)) this.rollupCache.delete(profileId)
        }
      }
    }
    return deleted
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
