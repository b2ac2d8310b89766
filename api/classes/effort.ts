// Effort points of a class (pure, no I/O).
//
// Minute i of a class covers [start + i·60 s, start + (i + 1)·60 s). Only
// completed minutes count: those that end at or before `until` (now while the
// class runs, its end once it ended). A minute's average is the mean of the
// bpm of the readings measured in it; its zone is that average's zone by the
// room display's zoneOf (api/web/static/zones.js) with the member's maximum
// and zone bounds, and it earns: below zone 1 → 0, zone 1 → 1, zone 2 → 2,
// zone 3 → 3, zones 4 and 5 → 4. A minute without readings earns nothing.
import type { ClassMinute } from './types.ts'
import { zoneOf } from '../web/static/zones.js'

export const MINUTE_MS = 60_000

/** One heart-rate reading of a member: measured_at (ms) and bpm. */
export interface HrSample { t: number, bpm: number }

/** Sum and count of the bpm of one minute's readings. */
export interface MinuteBucket { sum: number, count: number }

/** Points a minute in a zone earns (zone 0: below zone 1). */
export function zonePoints (zone: number): number {
  return zone <= 0 ? 0 : Math.min(zone, 4)
}

/** The minute of the class a time falls in, or -1 before the start. */
export function minuteOf (t: number, start: number): number {
  return t < start ? -1 : Math.floor((t - start) / MINUTE_MS)
}

/** How many minutes of the class are complete at `until`. */
export function completedMinutes (start: number, until: number): number {
  return until <= start ? 0 : Math.floor((until - start) / MINUTE_MS)
}

/** Adds a reading to its minute's bucket (readings before the start are left out). */
export function addToBuckets (buckets: Map<number, MinuteBucket>, start: number, s: HrSample): void {
  const m = minuteOf(s.t, start)
  if (m < 0) return
  const b = buckets.get(m)
  if (b === undefined) buckets.set(m, { sum: s.bpm, count: 1 })
  else { b.sum += s.bpm; b.count++ }
}

/** The buckets of a series of readings. */
export function bucketsOf (samples: Iterable<HrSample>, start: number): Map<number, MinuteBucket> {
  const buckets = new Map<number, MinuteBucket>()
  for (const s of samples) addToBuckets(buckets, start, s)
  return buckets
}

export interface EffortOptions {
  /** The member's maximum heart rate (bpm). */
  max: number
  /** Lower bounds of zones 1..5 in percent of max (default 50, 60, 70, 80, 90). */
  bounds?: readonly number[]
}

export interface Effort { minutes: ClassMinute[], total: number }

/** The points of the first `completed` minutes from their buckets. avg_bpm is rounded to 0.1 bpm; the zone is the exact average's. */
export function effortOfBuckets (buckets: ReadonlyMap<number, MinuteBucket>, completed: number, o: EffortOptions): Effort {
  const minutes: ClassMinute[] = []
  let total = 0
  for (let minute = 0; minute < completed; minute++) {
    const b = buckets.get(minute)
    if (b === undefined || b.count === 0) { minutes.push({ minute, avg_bpm: null, zone: 0, points: 0 }); continue }
    const avg = b.sum / b.count
    const zone: number = zoneOf(avg, o.max, o.bounds === undefined ? undefined : [...o.bounds]).index
    const points = zonePoints(zone)
    total += points
    minutes.push({ minute, avg_bpm: Math.round(avg * 10) / 10, zone, points })
  }
  return { minutes, total }
}

/** Effort points of a member's readings in a class that started at `start`, counting the minutes complete at `until`. */
export function effortPoints (samples: Iterable<HrSample>, start: number, until: number, o: EffortOptions): Effort {
  const buckets = new Map<number, MinuteBucket>()
  for (const s of samples) if (s.t < until) addToBuckets(buckets, start, s)
  return effortOfBuckets(buckets, completedMinutes(start, until), o)
}

/** Completed minutes in zones 1..5 (index 0 is zone 1). */
export function zoneMinutes (minutes: readonly ClassMinute[]): [number, number, number, number, number] {
  const out: [number, number, number, number, number] = [0, 0, 0, 0, 0]
  for (const m of minutes) if (m.zone >= 1 && m.zone <= 5) out[m.zone - 1] = (out[m.zone - 1] ?? 0) + 1
  return out
}
