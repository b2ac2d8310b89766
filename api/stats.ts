// Statistics (spec 2.3) over the range [now - range, now]: hour rollups for
// the whole hours inside it, minute rollups for the whole minutes of the two
// partial edge hours, and raw readings of the partial minutes at both ends
// (the still-open minute included). An hour's rollup is the merge of its
// minutes', so the sums are the same whichever buckets cover a stretch.
//
// Definitions (docs/api.md "Heart-rate endpoints"):
// - max, min, average: over the readings in the range (average = mean of the
//   readings, not time-weighted), rounded to 0.1 bpm.
// - streamed_duration_in_seconds: every reading is credited with the time since
//   the previous reading when that is at most the gap (data.stream_gap_seconds,
//   default 5 s); the first reading in the range is credited at most the time
//   since the range start. Rounded to whole seconds.
// - calories_burned_in_kcal: Keytel et al. (2005), "Prediction of energy
//   expenditure from heart rate monitoring during submaximal exercise",
//   J Sports Sci 23(3):289-297, applied to every credited interval with the
//   bpm of the reading that ends it:
//     male:   kJ/min = -55.0969 + 0.6309·HR + 0.1988·W + 0.2017·A
//     female: kJ/min = -20.4022 + 0.4472·HR − 0.1263·W + 0.0740·A
//   kcal = kJ / 4.184. Defaults when the profile has none: age 30, weight 75 kg;
//   sex unknown uses the mean of both equations. A negative total is clamped
//   to 0. Rounded to 0.1 kcal.
import type { RawReading, ReadingStore } from './store/types.ts'
import { HOUR_MS, MINUTE_MS } from './pipeline/codec.ts'
import { streamCredit, type Rollup } from './store/rollups.ts'

export const TIME_RANGES = { '24h': 86_400_000, '7d': 7 * 86_400_000, '30d': 30 * 86_400_000 } as const
export type TimeRange = keyof typeof TIME_RANGES

export interface Statistics {
  maximum_beats_per_minute: number
  minimum_beats_per_minute: number
  average_beats_per_minute: number
  streamed_duration_in_seconds: number
  calories_burned_in_kcal: number
}

export interface Body { age?: number, weight_kg?: number, sex?: 'male' | 'female' }
export const BODY_DEFAULTS = { age: 30, weight_kg: 75 } as const

/** Raw sums before rounding (what the property test compares). */
export interface Sums { count: number, sum: number, min: number, max: number, streamedMs: number, bpmMs: number }

/** Keytel 2005 as kJ/min = intercept + slope·HR for this body. */
export function keytel (body: Body): { intercept: number, slope: number } {
  const a = body.age ?? BODY_DEFAULTS.age
  const w = body.weight_kg ?? BODY_DEFAULTS.weight_kg
  const male = { intercept: -55.0969 + 0.1988 * w + 0.2017 * a, slope: 0.6309 }
  const female = { intercept: -20.4022 - 0.1263 * w + 0.074 * a, slope: 0.4472 }
  if (body.sex === 'male') return male
  if (body.sex === 'female') return female
  return { intercept: (male.intercept + female.intercept) / 2, slope: (male.slope + female.slope) / 2 }
}

/** kcal for credited time `ms` with Σ bpm·ms = `bpmMs`; negative totals clamp to 0. */
export function kcal (ms: number, bpmMs: number, body: Body): number {
  const { intercept, slope } = keytel(body)
  const kj = (intercept * ms + slope * bpmMs) / MINUTE_MS
  return Math.max(0, kj / 4.184)
}

export function finish (s: Sums, body: Body): Statistics {
  if (s.count === 0) {
    return { maximum_beats_per_minute: 0, minimum_beats_per_minute: 0, average_beats_per_minute: 0, streamed_duration_in_seconds: 0, calories_burned_in_kcal: 0 }
  }
  return {
    maximum_beats_per_minute: s.max,
    minimum_beats_per_minute: s.min,
    average_beats_per_minute: Math.round((s.sum / s.count) * 10) / 10,
    streamed_duration_in_seconds: Math.round(s.streamedMs / 1000),
    calories_burned_in_kcal: Math.round(kcal(s.streamedMs, s.bpmMs, body) * 10) / 10
  }
}

/** Sums over readings with from <= measured_at <= to. */
export async function sums (readings: ReadingStore, profileId: string, from: number, to: number): Promise<Sums> {
  const s: Sums = { count: 0, sum: 0, min: 0, max: 0, streamedMs: 0, bpmMs: 0 }
  if (to < from) return s
  const gap = readings.gapMs
  let first = true
  const take = (count: number, sum: number, min: number, max: number): void => {
    s.min = s.count === 0 ? min : Math.min(s.min, min)
    s.max = s.count === 0 ? max : Math.max(s.max, max)
    s.count += count
    s.sum += sum
  }
  const rawSegment = async (a: number, b: number): Promise<void> => {
    if (b < a) return
    let prev: RawReading | undefined
    for await (const r of readings.range(profileId, a, b)) {
      if (prev === undefined) prev = await readings.before(profileId, r.measured_at)
      let credit = prev === undefined ? 0 : streamCredit(r.measured_at - prev.measured_at, gap)
      if (first) { credit = Math.min(credit, r.measured_at - from); first = false }
      take(1, r.heart_rate, r.heart_rate, r.heart_rate)
      s.streamedMs += credit
      s.bpmMs += r.heart_rate * credit
      prev = r
    }
  }

  const firstWhole = Math.ceil(from / MINUTE_MS) * MINUTE_MS
  const endWhole = Math.floor((to + 1) / MINUTE_MS) * MINUTE_MS
  if (firstWhole >= endWhole) {
    await rawSegment(from, to)
    return s
  }
  await rawSegment(from, firstWhole - 1)
  const rollup = (r: Rollup): void => {
    if (r.c === 0) return
    let st = r.st
    let sh = r.sh
    if (first) {
      const clipped = Math.min(r.fc, r.f - from)
      st += clipped - r.fc
      sh += r.fh * (clipped - r.fc)
      first = false
    }
    take(r.c, r.s, r.mn, r.mx)
    s.streamedMs += st
    s.bpmMs += sh
  }
  const firstHour = Math.ceil(firstWhole / HOUR_MS) * HOUR_MS
  const endHour = Math.floor(endWhole / HOUR_MS) * HOUR_MS
  if (firstHour < endHour) {
    for await (const [, r] of readings.rollups(profileId, firstWhole, firstHour)) rollup(r)
    for await (const [, r] of readings.hourRollups(profileId, firstHour, endHour)) rollup(r)
    for await (const [, r] of readings.rollups(profileId, endHour, endWhole)) rollup(r)
  } else {
    for await (const [, r] of readings.rollups(profileId, firstWhole, endWhole)) rollup(r)
  }
  await rawSegment(endWhole, to)
  return s
}

export async function statistics (readings: ReadingStore, profileId: string, range: TimeRange, body: Body, now = Date.now()): Promise<Statistics> {
  return finish(await sums(readings, profileId, now - TIME_RANGES[range], now), body)
}
