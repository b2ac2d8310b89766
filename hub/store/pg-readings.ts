// Heart-rate readings in PostgreSQL: the hub's ReadingStore (api/store/types.ts), the counterpart of the box's
// LevelDB store (api/store/readings.ts). Raw readings are the table `readings`, which the MQTT ingest writes too;
// rollups are `reading_rollups` (minute and hour rows) and the latest record per member `reading_latest`
// (hub/migrations/002-store-readings.sql). Every write goes through the SQL function hr_store_readings
// (pg-readings-write.ts), which keeps rollups and latest records in step under per-member locks, so that several
// hub instances may write the same member's readings at once. Nothing is cached: another instance may have
// written since, and one query answers as fast as a cache check would be made safe.
import type pg from 'pg'
import type { ReadingSource, StoredReading } from '../../api/pipeline/reading.ts'
import type { Rollup } from '../../api/store/rollups.ts'
import type { LatestRecord, RawReading, ReadingLog, ReadingPlan, ReadingStore, WriteOp } from '../../api/store/types.ts'
import type { PgEvents } from './pg-events.ts'
import { pgOp, runOps, type PgOp } from './pg-op.ts'
import { pruneReadings } from './pg-readings-prune.ts'
import { decodeReadingsNotice, READINGS_CHANNEL, STORE_READINGS_SQL, storeReadingsParams, type ReadingsNoticeItem } from './pg-readings-write.ts'

export { decodeReadingsNotice, READINGS_CHANNEL, ReadingsNoticeError, type ReadingsNoticeItem } from './pg-readings-write.ts'

export interface PgReadingsOptions {
  /** The stream gap (ms) rollups credit streamed time with (config data.stream_gap_seconds × 1000). */
  gapMs: number
  /** The instance's notification connection: `onStored` listens through it. */
  events?: PgEvents
}

/** Rows read at a time by `range`, `rollups` and `hourRollups`. */
const PAGE = 1000
const MINUTE_SPAN = 60_000
const HOUR_SPAN = 3_600_000

interface RawRow {
  measured_at: string
  heart_rate: number
  source: ReadingSource
  rr_intervals_ms: number[] | null
  energy_expended_kj: number | null
  sensor_contact: boolean | null
}
const RAW_COLUMNS = 'measured_at, heart_rate, source, rr_intervals_ms, energy_expended_kj, sensor_contact'

interface RollupRow { start: string, c: number, s: string, mn: number, mx: number, st: string, sh: string, f: string, fc: number, fh: number }

/** A row of `readings` as the store answers it: the optional fields only when the reading carried them. */
function toRaw (row: RawRow): RawReading {
  const r: RawReading = { measured_at: Number(row.measured_at), heart_rate: row.heart_rate, source: row.source }
  if (row.rr_intervals_ms !== null) r.rr_intervals_ms = row.rr_intervals_ms
  if (row.energy_expended_kj !== null) r.energy_expended_kj = row.energy_expended_kj
  if (row.sensor_contact !== null) r.sensor_contact = row.sensor_contact
  return r
}

function toRollup (row: RollupRow): [number, Rollup] {
  return [Number(row.start), {
    c: row.c, s: Number(row.s), mn: row.mn, mx: row.mx, st: Number(row.st), sh: Number(row.sh), f: Number(row.f), fc: row.fc, fh: row.fh
  }]
}

const keyOf = (profileId: string, t: number): string => `${profileId}\n${t}`

/**
 * A plan of the PostgreSQL store: its one op calls hr_store_readings with the readings to store. `stored` and
 * `duplicates` are what the store held when the plan was made; the function decides again under its locks (a
 * reading another instance stored meanwhile is not stored twice).
 */
export class PgPlan implements ReadingPlan {
  readonly stored: StoredReading[] = []
  readonly duplicates: StoredReading[] = []
  /** The keys of `stored`, for plans made on top of this one. */
  readonly keys = new Set<string>()
  committed = false

  constructor (private readonly gapMs: number, readonly base: PgPlan | undefined) {}

  get ops (): PgOp[] {
    if (this.stored.length === 0) return []
    // Waits for members another instance holds: the whole group is stored by this op, or nothing.
    return [pgOp('put', 'readings', STORE_READINGS_SQL, storeReadingsParams(this.stored, this.gapMs, true))]
  }

  commit (): void {
    this.committed = true
  }

  absorb (more: ReadingPlan): void {
    if (!(more instanceof PgPlan) || more.base !== this) throw new TypeError('absorb takes a plan made on top of this one')
    for (const r of more.stored) this.stored.push(r)
    for (const r of more.duplicates) this.duplicates.push(r)
    for (const k of more.keys) this.keys.add(k)
  }

  /** Whether this plan or a base of it, not written yet, stores the reading at `key`. */
  plans (key: string): boolean {
    for (let p: PgPlan | undefined = this; p !== undefined && !p.committed; p = p.base) {
      if (p.keys.has(key)) return true
    }
    return false
  }
}

/**
 * The reading log on PostgreSQL: each append is one transaction (runOps), one at a time in the order called, and
 * resolves after COMMIT (synchronous_commit: the commit is durable by then). After the bundle's pool is ended,
 * appends reject.
 */
export class PgReadingLog implements ReadingLog {
  private last: Promise<void> = Promise.resolve()

  constructor (private readonly pool: pg.Pool) {}

  append (ops: readonly WriteOp[]): Promise<void> {
    const batch = [...ops]
    const write = async (): Promise<void> => {
      if (this.pool.ended) throw new Error('the PostgreSQL store is closed')
      await runOps(this.pool, batch)
    }
    const done = this.last.then(write)
    this.last = done.catch(() => undefined)
    return done
  }
}

export class PgReadings implements ReadingStore {
  readonly readingLog: PgReadingLog

  constructor (private readonly pool: pg.Pool, private readonly options: PgReadingsOptions) {
    this.readingLog = new PgReadingLog(pool)
  }

  get gapMs (): number { return this.options.gapMs }

  async latest (profileId: string): Promise<LatestRecord | undefined> {
    const { rows } = await this.pool.query<{ measured_at: string, heart_rate: number, source: ReadingSource, device_id: string | null }>(
      'SELECT measured_at, heart_rate, source, device_id FROM reading_latest WHERE profile_id = $1 AND measured_at IS NOT NULL', [profileId])
    const row = rows[0]
    if (row === undefined) return undefined
    return { measured_at: Number(row.measured_at), heart_rate: row.heart_rate, source: row.source, ...(row.device_id === null ? {} : { device_id: row.device_id }) }
  }

  /** Never known from memory: another instance may have stored a newer reading (ask `latest`). */
  cachedLatest (_profileId: string): undefined {
    return undefined
  }

  async before (profileId: string, t: number): Promise<RawReading | undefined> {
    const { rows } = await this.pool.query<RawRow>(
      `SELECT ${RAW_COLUMNS} FROM readings WHERE profile_id = $1 AND measured_at < $2 ORDER BY measured_at DESC LIMIT 1`, [profileId, t])
    return rows[0] === undefined ? undefined : toRaw(rows[0])
  }

  /** Readings with from <= measured_at <= to, oldest first, read PAGE at a time. */
  async * range (profileId: string, from: number, to: number, limit = -1): AsyncGenerator<RawReading> {
    let left = limit < 0 ? Number.POSITIVE_INFINITY : limit
    let low = from
    while (left > 0 && low <= to) {
      const n = Math.min(PAGE, left)
      const { rows } = await this.pool.query<RawRow>(
        `SELECT ${RAW_COLUMNS} FROM readings WHERE profile_id = $1 AND measured_at >= $2 AND measured_at <= $3 ORDER BY measured_at LIMIT $4`,
        [profileId, low, to, n])
      for (const row of rows) yield toRaw(row)
      if (rows.length < n) return
      left -= rows.length
      low = Number(rows[rows.length - 1]?.measured_at) + 1
    }
  }

  async page (profileId: string, from: number, to: number, limit: number, reverse = false): Promise<RawReading[]> {
    if (to <= from || limit <= 0) return []
    const { rows } = await this.pool.query<RawRow>(
      `SELECT ${RAW_COLUMNS} FROM readings WHERE profile_id = $1 AND measured_at >= $2 AND measured_at < $3
        ORDER BY measured_at ${reverse ? 'DESC' : 'ASC'} LIMIT $4`, [profileId, from, to, limit])
    return rows.map(toRaw)
  }

  async * rollups (profileId: string, fromMinute: number, toMinute: number): AsyncGenerator<[number, Rollup]> {
    yield * this.buckets(profileId, MINUTE_SPAN, fromMinute, toMinute)
  }

  async * hourRollups (profileId: string, fromHour: number, toHour: number): AsyncGenerator<[number, Rollup]> {
    yield * this.buckets(profileId, HOUR_SPAN, fromHour, toHour)
  }

  /** Rollups of one span starting in [from, to), oldest first, PAGE at a time. */
  private async * buckets (profileId: string, span: number, from: number, to: number): AsyncGenerator<[number, Rollup]> {
    let low = from
    while (low < to) {
      const { rows } = await this.pool.query<RollupRow>(
        `SELECT start, c, s, mn, mx, st, sh, f, fc, fh FROM reading_rollups
          WHERE profile_id = $1 AND span = $2 AND start >= $3 AND start < $4 ORDER BY start LIMIT $5`,
        [profileId, span, low, to, PAGE])
      for (const row of rows) yield toRollup(row)
      if (rows.length < PAGE) return
      low = Number(rows[rows.length - 1]?.start) + 1
    }
  }

  /**
   * Plans a group: the first of a time repeated within the group is stored, a time the store holds (or a plan
   * not written yet below this one) is a duplicate. On top of `base` it reads the store too (a read here cannot
   * miss base's writes: base's keys are checked in memory), so it never answers undefined.
   */
  async plan (group: StoredReading[]): Promise<PgPlan>
  async plan (group: StoredReading[], base: ReadingPlan): Promise<PgPlan | undefined>
  async plan (group: StoredReading[], base?: ReadingPlan): Promise<PgPlan | undefined> {
    if (base !== undefined && !(base instanceof PgPlan)) throw new TypeError('base must be a plan of this store')
    const plan = new PgPlan(this.options.gapMs, base)
    const firsts: StoredReading[] = []
    const seen = new Set<string>()
    for (const r of group) {
      const key = keyOf(r.profile_id, r.measured_at)
      if (seen.has(key) || base?.plans(key) === true) plan.duplicates.push(r)
      else { seen.add(key); firsts.push(r) }
    }
    const held = await this.held(firsts)
    for (const r of firsts) {
      const key = keyOf(r.profile_id, r.measured_at)
      if (held.has(key)) plan.duplicates.push(r)
      else { plan.stored.push(r); plan.keys.add(key) }
    }
    return plan
  }

  /** The keys of the readings the store holds among `group`. */
  private async held (group: StoredReading[]): Promise<Set<string>> {
    if (group.length === 0) return new Set()
    const { rows } = await this.pool.query<{ profile_id: string, measured_at: string }>(
      `SELECT r.profile_id, r.measured_at FROM unnest($1::text[], $2::bigint[]) AS u(p, m)
         JOIN readings r ON r.profile_id = u.p AND r.measured_at = u.m`,
      [group.map(r => r.profile_id), group.map(r => r.measured_at)])
    return new Set(rows.map(r => keyOf(r.profile_id, Number(r.measured_at))))
  }

  /** Nothing is cached. */
  resetCaches (): void {}

  async prune (now: number, retention: { rawDays: number, rollupDays: number }, limit = 1000): Promise<number> {
    return await pruneReadings(this.pool, now, retention, limit)
  }

  /**
   * Calls fn with the readings every instance stores (this one's too), once each is committed; through the
   * bundle's notification connection. Resolves with the unsubscribe once listening.
   */
  async onStored (fn: (readings: ReadingsNoticeItem[]) => void): Promise<() => void> {
    const events = this.options.events
    if (events === undefined) throw new Error('this readings store was opened without a notification connection')
    return await events.listen(READINGS_CHANNEL, payload => { fn(decodeReadingsNotice(payload)) })
  }
}
