// The one write path of readings into PostgreSQL, shared by the readings store (pg-readings.ts, readings posted
// to the hub) and the MQTT ingest (hub/ingest/chain-writer.ts, readings forwarded by boxes): a call of the SQL
// function hr_store_readings (hub/migrations/002-store-readings.sql), which stores a group of readings with their
// rollups and latest records under per-member locks and notifies every hub instance of what it stored. This
// module builds that call and reads its notifications; it does no I/O.
import type { StoredReading } from '../../api/pipeline/reading.ts'

/** The channel hr_store_readings notifies with the readings it stored (pg-events.ts listens). */
export const READINGS_CHANNEL = 'hr_readings'

/**
 * One reading as a notification on READINGS_CHANNEL carries it. The source is a string: a box forwards its own
 * (a ReadingSource), the wire format allows any short string, and a reading that was stored is heard.
 */
export interface ReadingsNoticeItem {
  profile_id: string
  measured_at: number
  heart_rate: number
  source: string
  device_id?: string
}

/**
 * A reading to store (a StoredReading is one), and the box that forwarded it (none for a reading posted to the hub
 * itself). A box's reading carries its source as the wire format allows it: any short string.
 */
export interface ReadingRow extends Omit<StoredReading, 'source'> {
  source: string
  box_id?: string
}

/**
 * Stores readings (parameters: storeReadingsParams). Answers `stored`, how many were inserted (the others were held
 * already, or erased), and `deferred`: when called without waiting, the 1-based positions of the readings left out
 * because another transaction holds their member (null when none); the caller stores them in a later call.
 */
export const STORE_READINGS_SQL = 'SELECT stored, deferred FROM hr_store_readings($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)'

/** What STORE_READINGS_SQL answers. */
export interface StoreReadingsRow { stored: number, deferred: number[] | null }

/** Locks the members (text[]) of a transaction that writes several of them in more than one call, in one order. */
export const LOCK_PROFILES_SQL = 'SELECT hr_lock_profiles($1)'

/**
 * Deletes what a box forwarded of a member and keeps a tombstone ($1 box_id, $2 profile_id, $3 erased_at, $4 the
 * stream gap); their rollups and latest record are made again from what is left.
 */
export const ERASE_BOX_MEMBER_SQL = 'SELECT hr_erase_box_member($1, $2, $3, $4) AS deleted'

/** The stream gap as the SQL functions take it: whole milliseconds (a credit is a whole number of ms at most the gap). */
export function sqlGap (gapMs: number): number {
  return Math.floor(gapMs)
}

/**
 * The parameters of STORE_READINGS_SQL: one array per column (an optional column nobody carries is '{}'), the
 * stream gap, and whether to wait for members another transaction holds (else their readings are deferred).
 */
export function storeReadingsParams (rows: readonly ReadingRow[], gapMs: number, wait: boolean): unknown[] {
  const n = rows.length
  const p = new Array<string>(n)
  const m = new Array<number>(n)
  const h = new Array<number>(n)
  const s = new Array<string>(n)
  const d = new Array<string | null>(n)
  let b: Array<string | null> | undefined
  let rr: number[] | undefined
  let rrFrom: Array<number | null> | undefined
  let rrLen: Array<number | null> | undefined
  let e: Array<number | null> | undefined
  let sc: Array<boolean | null> | undefined
  const column = <T>(): Array<T | null> => new Array<T | null>(n).fill(null)
  let i = 0
  for (const r of rows) {
    p[i] = r.profile_id
    m[i] = r.measured_at
    h[i] = r.heart_rate
    s[i] = r.source
    d[i] = r.device_id ?? null
    if (r.box_id !== undefined) (b ??= column<string>())[i] = r.box_id
    if (r.energy_expended_kj !== undefined) (e ??= column<number>())[i] = r.energy_expended_kj
    if (r.sensor_contact !== undefined) (sc ??= column<boolean>())[i] = r.sensor_contact
    const list = r.rr_intervals_ms
    if (list !== undefined && list.length > 0) {
      rr ??= []
      ;(rrFrom ??= column<number>())[i] = rr.length + 1
      ;(rrLen ??= column<number>())[i] = list.length
      for (const x of list) rr.push(x)
    }
    i++
  }
  return [p, m, h, s, d, b ?? [], rr ?? [], rrFrom ?? [], rrLen ?? [], e ?? [], sc ?? [], sqlGap(gapMs), wait]
}

export class ReadingsNoticeError extends Error {
  readonly code = 'HR_HUB_READINGS_NOTICE'
  constructor (detail: string) { super(`not a readings notification: ${detail}`); this.name = 'ReadingsNoticeError' }
}

/**
 * The readings of one notification on READINGS_CHANNEL: a JSON array of [profile_id, measured_at, heart_rate,
 * source, device_id or null] (hr_store_readings). Throws ReadingsNoticeError for anything else.
 */
export function decodeReadingsNotice (payload: string): ReadingsNoticeItem[] {
  let parsed: unknown
  try {
    parsed = JSON.parse(payload)
  } catch {
    throw new ReadingsNoticeError('payload is not JSON')
  }
  if (!Array.isArray(parsed)) throw new ReadingsNoticeError('payload is not an array')
  return parsed.map((x: unknown, i) => {
    if (!Array.isArray(x) || x.length !== 5) throw new ReadingsNoticeError(`element ${i} is not a 5-element array`)
    const [profileId, measuredAt, heartRate, source, deviceId] = x as unknown[]
    if (typeof profileId !== 'string' || typeof measuredAt !== 'number' || typeof heartRate !== 'number' ||
      typeof source !== 'string' || (deviceId !== null && typeof deviceId !== 'string')) {
      throw new ReadingsNoticeError(`element ${i} does not hold a reading`)
    }
    return {
      profile_id: profileId,
      measured_at: measuredAt,
      heart_rate: heartRate,
      source,
      ...(deviceId === null ? {} : { device_id: deviceId })
    }
  })
}
