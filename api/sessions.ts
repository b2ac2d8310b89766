// Training sessions and heart-rate variability: pure functions, no I/O
// (docs/api.md "hr-relay extensions"). The store reads that feed them are in
// api/session-reads.ts.
//
// Session: readings of one profile in time order; a gap between two readings
// longer than data.session_gap_seconds (default 300 s) starts a new session.
// Its id is its first reading's measured_at as a decimal string (stable).
//
// Per session:
// - duration_s = (end - start) / 1000, rounded to whole seconds;
// - avg (mean of the readings, 0.1 bpm), min, max;
// - kcal and the seconds in each zone credit every reading with the time since
//   the previous reading when that is at most the stream gap
//   (data.stream_gap_seconds), as the statistics do (api/stats.ts): kcal is
//   Keytel (2005) through stats.kcal; a reading's zone is its bpm in percent of
//   the maximum heart rate (api/web/zones.ts), rounded, mapped to zones 1..5
//   (50, 60, 70, 80, 90 % and up) by the room display's zoneOf
//   (api/web/static/zones.js); time below 50 % is in no zone.
// - HRV over the session's RR intervals in order (Task Force of the ESC and
//   NASPE, Circulation 1996;93:1043-1065): an RR outside 300..2000 ms is an
//   artefact, and so is one that differs from the previous accepted RR by more
//   than 20 % of that previous RR. sdnn_ms is the population standard deviation
//   of the accepted RR; rmssd_ms the root mean square of the differences of
//   successive accepted RR, leaving out a pair with a dropped RR between them.
//   Both null when there are too few values; rr_dropped counts the artefacts.
import { kcal, type Body } from './stats.ts'
import { streamCredit } from './store/rollups.ts'
import { zoneOf } from './web/static/zones.js'

/** One reading as sessions and exports use it. */
export interface SessionReading {
  measured_at: number
  heart_rate: number
  rr_intervals_ms?: number[]
  energy_expended_kj?: number
}

export const RR_MIN_MS = 300
export const RR_MAX_MS = 2000
/** An RR differing from the previous accepted one by more than this fraction of it is an artefact. */
export const RR_MAX_CHANGE = 0.2

export interface Hrv {
  rmssd_ms: number | null
  sdnn_ms: number | null
  rr_count: number
  rr_dropped: number
}

export interface SessionSummary {
  id: string
  start: number
  end: number
  duration_s: number
  readings: number
  avg: number
  min: number
  max: number
  kcal: number
  /** Seconds in zones 1..5. */
  zones_s: [number, number, number, number, number]
  max_heart_rate: number
  rmssd_ms: number | null
  sdnn_ms: number | null
  rr_dropped: number
}

/** Splits time-ordered readings where consecutive readings are more than gapMs apart. */
export function splitSessions<R extends { measured_at: number }> (readings: readonly R[], gapMs: number): R[][] {
  const out: R[][] = []
  let current: R[] = []
  for (const r of readings) {
    const prev = current[current.length - 1]
    if (prev !== undefined && r.measured_at - prev.measured_at > gapMs) { out.push(current); current = [] }
    current.push(r)
  }
  if (current.length > 0) out.push(current)
  return out
}

const round = (v: number, digits: number): number => { const f = 10 ** digits; return Math.round(v * f) / f }

/** Artefact filtering and RMSSD / SDNN (milliseconds, 0.01 ms), as in the module comment. */
export function hrv (rr: readonly number[]): Hrv {
  const accepted: number[] = []
  let dropped = 0
  let sumSq = 0
  let pairs = 0
  let prev: number | undefined
  let broken = false
  for (const v of rr) {
    const ok = Number.isFinite(v) && v >= RR_MIN_MS && v <= RR_MAX_MS && (prev === undefined || Math.abs(v - prev) <= RR_MAX_CHANGE * prev)
    if (!ok) { dropped++; broken = true; continue }
    if (prev !== undefined && !broken) { sumSq += (v - prev) ** 2; pairs++ }
    accepted.push(v)
    prev = v
    broken = false
  }
  let sdnn: number | null = null
  if (accepted.length >= 2) {
    const mean = accepted.reduce((a, b) => a + b, 0) / accepted.length
    sdnn = round(Math.sqrt(accepted.reduce((a, b) => a + (b - mean) ** 2, 0) / accepted.length), 2)
  }
  return { rmssd_ms: pairs === 0 ? null : round(Math.sqrt(sumSq / pairs), 2), sdnn_ms: sdnn, rr_count: accepted.length, rr_dropped: dropped }
}

/** Zone 1..5 of a bpm (0: below zone 1): the room display's zoneOf with its default bounds. */
export function zoneIndex (bpm: number, maxHr: number): number {
  const z: { index: number } = zoneOf(bpm, maxHr)
  return z.index
}

/** The summary of one session's readings (time order, at least one). */
export function summarise (readings: readonly SessionReading[], o: { streamGapMs: number, maxHeartRate: number, body: Body }): SessionSummary {
  const first = readings[0]
  const last = readings[readings.length - 1]
  if (first === undefined || last === undefined) throw new RangeError('a session has at least one reading')
  let sum = 0
  let min = first.heart_rate
  let max = first.heart_rate
  let creditMs = 0
  let bpmMs = 0
  const zones: [number, number, number, number, number] = [0, 0, 0, 0, 0]
  const rr: number[] = []
  let prev: SessionReading | undefined
  for (const r of readings) {
    sum += r.heart_rate
    min = Math.min(min, r.heart_rate)
    max = Math.max(max, r.heart_rate)
    const credit = prev === undefined ? 0 : streamCredit(r.measured_at - prev.measured_at, o.streamGapMs)
    creditMs += credit
    bpmMs += r.heart_rate * credit
    const z = zoneIndex(r.heart_rate, o.maxHeartRate)
    if (z > 0) zones[z - 1] = (zones[z - 1] ?? 0) + credit
    for (const v of r.rr_intervals_ms ?? []) rr.push(v)
    prev = r
  }
  const h = hrv(rr)
  return {
    id: String(first.measured_at),
    start: first.measured_at,
    end: last.measured_at,
    duration_s: Math.round((last.measured_at - first.measured_at) / 1000),
    readings: readings.length,
    avg: round(sum / readings.length, 1),
    min,
    max,
    kcal: round(kcal(creditMs, bpmMs, o.body), 1),
    zones_s: zones.map(ms => Math.round(ms / 1000)) as [number, number, number, number, number],
    max_heart_rate: o.maxHeartRate,
    rmssd_ms: h.rmssd_ms,
    sdnn_ms: h.sdnn_ms,
    rr_dropped: h.rr_dropped
  }
}
