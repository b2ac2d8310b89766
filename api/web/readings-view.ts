// Read-only views of a profile's readings for the pages: today's series for
// the chart, the recent trend for a display tile, calories since a time.
// Everything goes through the readings store and api/stats.ts (issue 3).
import type { ReadingStore } from '../store/types.ts'
import { kcal, sums, type Body } from '../stats.ts'

const MINUTE = 60_000

/** Local midnight of the server's time zone (docs/operator.md "Pages the box serves": "today"). */
export function startOfToday (now: number): number {
  const d = new Date(now)
  d.setHours(0, 0, 0, 0)
  return d.getTime()
}

/** [measured_at, bpm] pairs with from <= t <= to, oldest first, at most `limit`. */
export async function trend (readings: ReadingStore, profileId: string, from: number, to: number, limit = 600): Promise<Array<[number, number]>> {
  const out: Array<[number, number]> = []
  for await (const r of readings.range(profileId, from, to, limit)) out.push([r.measured_at, r.heart_rate])
  return out
}

/** Calories (kcal, one decimal) of the streamed time in [from, to], as the statistics compute them. */
export async function caloriesSince (readings: ReadingStore, profileId: string, from: number, to: number, body: Body): Promise<number> {
  const s = await sums(readings, profileId, from, to)
  return Math.round(kcal(s.streamedMs, s.bpmMs, body) * 10) / 10
}

export interface Series { resolution: 'reading' | 'minute', points: Array<[number, number]> }

/**
 * The chart series of [from, to]: every reading when there are at most
 * maxRaw of them, else the per-minute averages (at most 1440 a day).
 */
export async function series (readings: ReadingStore, profileId: string, from: number, to: number, maxRaw = 5000): Promise<Series> {
  const raw = await trend(readings, profileId, from, to, maxRaw + 1)
  if (raw.length <= maxRaw) return { resolution: 'reading', points: raw }
  const points: Array<[number, number]> = []
  for await (const [t, r] of readings.rollups(profileId, Math.floor(from / MINUTE) * MINUTE, to + 1)) {
    if (r.c > 0) points.push([t, Math.round((r.s / r.c) * 10) / 10])
  }
  return { resolution: 'minute', points }
}
