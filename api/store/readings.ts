// Heart-rate readings in LevelDB: raw readings (`hr_raw`, binary values),
// per-minute and per-hour rollups (`hr_minute`, `hr_hour`) and the latest
// reading per profile (`hr_latest`), all keyed `<profile_id>!<13-digit ms>`
// (latest by profile id). The LevelDB ReadingStore (types.ts): this facade
// owns the sublevels and the caches; planning is in readings-plan.ts, reads in
// readings-query.ts, retention in readings-prune.ts, the in-memory state in
// readings-cache.ts, and the hour-rollup migration in hour-rollups.ts.
import type { Logger } from 'pino'
import type { Store, Sub } from './db.ts'
import type { StoredReading } from '../pipeline/reading.ts'
import type { LatestRecord, RawReading } from './records.ts'
import type { ReadingStore } from './types.ts'
import { splitKey } from '../pipeline/codec.ts'
import { copyRollup, type Rollup } from './rollups.ts'
import { HOUR_SUBLEVEL } from './hour-rollups.ts'
import { bounded, ReadingCaches, type CachedRollup } from './readings-cache.ts'
import { GroupPlan, NeedsRead, planGroup, type Plan, type PlanContext } from './readings-plan.ts'
import { bucketRange, rawAfter, rawBefore, rawPage, rawRange, type OnCorrupt } from './readings-query.ts'
import { pruneReadings } from './readings-prune.ts'

export { HOUR_SUBLEVEL }
export type { LatestRecord, Plan, RawReading }

export interface ReadingsOptions {
  gapMs: number
  maxCachedProfiles?: number
  /** Warned about raw records skipped because they do not decode (once per key). */
  log?: Pick<Logger, 'warn'>
}

/** Keys of corrupt raw records already warned about, at most (the oldest are forgotten first). */
const MAX_WARNED = 1000

export class Readings implements ReadingStore {
  readonly raw: Sub<Uint8Array>
  readonly minutes: Sub<Rollup>
  readonly hours: Sub<Rollup>
  readonly latestSub: Sub<LatestRecord>
  private readonly caches: ReadingCaches
  private readonly warned = new Map<string, true>()
  private readonly corrupt: OnCorrupt = (key, err) => {
    if (this.warned.has(key)) return
    bounded(this.warned, key, true, MAX_WARNED)
    this.options.log?.warn({ key, err: err instanceof Error ? err.message : String(err) }, 'corrupt raw reading skipped')
  }

  private readonly planContext: PlanContext

  constructor (private readonly store: Store, private readonly options: ReadingsOptions) {
    this.raw = store.sub<Uint8Array>('hr_raw', 'view')
    this.minutes = store.sub<Rollup>('hr_minute')
    this.hours = store.sub<Rollup>(HOUR_SUBLEVEL)
    this.latestSub = store.sub<LatestRecord>('hr_latest')
    this.caches = new ReadingCaches(options.maxCachedProfiles ?? 100_000)
    this.planContext = {
      raw: this.raw,
      minutes: this.minutes,
      hours: this.hours,
      latestSub: this.latestSub,
      caches: this.caches,
      get gapMs () { return options.gapMs },
      latest: async profileId => await this.latest(profileId),
      before: async (profileId, t) => await this.before(profileId, t),
      after: async (profileId, t) => await this.after(profileId, t),
      applyPlan: plan => { this.applyPlan(plan) }
    }
  }

  get gapMs (): number { return this.options.gapMs }

  async latest (profileId: string): Promise<LatestRecord | undefined> {
    const cached = this.caches.latest.get(profileId)
    if (cached !== undefined) return cached ?? undefined
    const v = await this.latestSub.get(profileId)
    bounded(this.caches.latest, profileId, v ?? null, this.caches.max)
    return v ?? undefined
  }

  /**
   * `latest` answered from memory only: null when the profile has no reading, undefined when the cache
   * does not know (then only `latest` can tell).
   */
  cachedLatest (profileId: string): LatestRecord | null | undefined {
    return this.caches.latest.get(profileId)
  }

  /** The last reading strictly before t. */
  async before (profileId: string, t: number): Promise<RawReading | undefined> {
    return await rawBefore(this.raw, profileId, t, this.corrupt)
  }

  /** The first reading strictly after t. */
  async after (profileId: string, t: number): Promise<RawReading | undefined> {
    return await rawAfter(this.raw, profileId, t, this.corrupt)
  }

  /** Raw readings with from <= measured_at <= to, oldest first. */
  async * range (profileId: string, from: number, to: number, limit = -1): AsyncGenerator<RawReading> {
    yield * rawRange(this.raw, profileId, from, to, limit, this.corrupt)
  }

  /**
   * At most `limit` raw readings with from <= measured_at < to (oldest first,
   * or newest first with `reverse`), read in one native call (history pages,
   * sessions).
   */
  async page (profileId: string, from: number, to: number, limit: number, reverse = false): Promise<RawReading[]> {
    return await rawPage(this.raw, profileId, from, to, limit, reverse, this.corrupt)
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
      return await planGroup(this.planContext, group, base)
    } catch (err) {
      if (err instanceof NeedsRead) return undefined
      throw err
    }
  }

  /** The caches after a plan's batch was written (Plan.commit). */
  applyPlan (plan: GroupPlan): void {
    const caches = this.caches
    for (const [profileId, value] of plan.latest) cacheLatest(caches.latest, profileId, value, caches.max)
    cacheNewest(plan.minutes, caches.minute, caches.max)
    cacheNewest(plan.hours, caches.hour, caches.max)
  }

  /**
   * Forgets the cached latest readings and newest rollups, so that the next
   * plan reads them from the store. Called in production by the ingest
   * pipeline when a batch fails to write (api/pipeline/ingest.ts): it drops
   * the plan made on top of the failed one too, and the next plan starts from
   * what the store holds rather than from memory.
   */
  resetCaches (): void {
    this.caches.clear()
  }

  /** Profiles that have ever had a reading. */
  async * profiles (): AsyncGenerator<string> {
    for await (const k of this.latestSub.keys()) yield k
  }

  /**
   * Deletes raw readings older than rawDays and rollups older than rollupDays,
   * at most `limit` raw readings and minute rollups per call. Returns how many
   * of those were deleted (call again while it returns `limit`); see
   * readings-prune.ts.
   */
  async prune (now: number, retention: { rawDays: number, rollupDays: number }, limit = 1000): Promise<number> {
    return await pruneReadings({ store: this.store, raw: this.raw, minutes: this.minutes, hours: this.hours, caches: this.caches, profiles: () => this.profiles() }, now, retention, limit)
  }
}

// The caches are updated in place where they can be. A profile's cached objects
// have lived since its first readings, so V8 keeps them in the old generation;
// a plan's objects are new. Caching the plan's objects kept every profile's
// newest latest record and rollups young for about a second (until the next
// reading), so each scavenge copied them and then promoted them: most of what
// survived a scavenge under load. Copying
// the values into the cached objects lets the plan's objects die young. Nothing
// else holds a cached object: a plan copies what it takes from the cache
// (readings-plan.ts `known`), and readers format a record at once.

/** Caches a profile's newest written latest record, in place when the cached record has the same fields. */
function cacheLatest (cache: Map<string, LatestRecord | null>, profileId: string, value: LatestRecord, max: number): void {
  const cached = cache.get(profileId)
  if (cached !== undefined && cached !== null && (cached.device_id === undefined) === (value.device_id === undefined)) {
    cached.measured_at = value.measured_at
    cached.heart_rate = value.heart_rate
    cached.source = value.source
    if (value.device_id !== undefined) cached.device_id = value.device_id
  } else bounded(cache, profileId, value, max)
}

/** Caches each profile's newest written rollup; the entry of the same bucket takes the new values in place. */
function cacheNewest (planned: Map<string, Rollup>, cache: Map<string, CachedRollup>, max: number): void {
  for (const [key, rollup] of planned) {
    const split = splitKey(key)
    if (split === undefined) continue
    const cached = cache.get(split.profile_id)
    if (cached !== undefined && cached.key === key) copyRollup(cached.rollup, rollup)
    else if (cached === undefined || cached.key < key) bounded(cache, split.profile_id, { key, rollup }, max)
  }
}
