// Rollups: pure arithmetic, no I/O. One rollup per (profile, minute) and one
// per (profile, hour) hold what statistics need; an hour's rollup is exactly
// the merge of its minutes' rollups (same fields, `f` the hour's earliest
// reading), so a 30-day answer reads about 720 hour rows plus the minutes of
// the two partial edge hours.
//
// Streamed time: every reading is credited with the time since its predecessor
// (the previous reading of the same profile, whatever minute it is in) when
// that is at most the gap (config data.stream_gap_seconds, default 5 s), else
// with 0. The credit goes to the minute of the later reading. An out-of-order
// reading changes the credit of its successor too, so a write may touch two
// rollups; both are in the same atomic batch. A duplicate (same profile and
// measured_at) is dropped before it reaches a rollup, so nothing counts twice.

export interface Rollup {
  /** readings */
  c: number
  /** sum of bpm */
  s: number
  mn: number
  mx: number
  /** credited streamed milliseconds */
  st: number
  /** sum of bpm × credited ms (for the calorie equation, which is linear in bpm) */
  sh: number
  /** earliest reading of the minute: time, its credit (ms) and bpm (to clip at a range start) */
  f: number
  fc: number
  fh: number
}

export function streamCredit (dtMs: number, gapMs: number): number {
  return dtMs > 0 && dtMs <= gapMs ? dtMs : 0
}

export function emptyRollup (): Rollup {
  return { c: 0, s: 0, mn: 0, mx: 0, st: 0, sh: 0, f: Number.MAX_SAFE_INTEGER, fc: 0, fh: 0 }
}

/** Sets every field of `into` to that of `from`. */
export function copyRollup (into: Rollup, from: Rollup): void {
  into.c = from.c; into.s = from.s; into.mn = from.mn; into.mx = from.mx
  into.st = from.st; into.sh = from.sh; into.f = from.f; into.fc = from.fc; into.fh = from.fh
}

/** Adds a new reading at t with its credit. */
export function addReading (r: Rollup, t: number, bpm: number, credit: number): void {
  r.mn = r.c === 0 ? bpm : Math.min(r.mn, bpm)
  r.mx = r.c === 0 ? bpm : Math.max(r.mx, bpm)
  r.c += 1
  r.s += bpm
  r.st += credit
  r.sh += bpm * credit
  if (t < r.f) { r.f = t; r.fc = credit; r.fh = bpm }
}

/** The credit of an existing reading at t changed from `before` to `after`. */
export function changeCredit (r: Rollup, t: number, bpm: number, before: number, after: number): void {
  r.st += after - before
  r.sh += bpm * (after - before)
  if (t === r.f) r.fc = after
}

/** Adds the rollup `m` of a later or earlier bucket into `into` (hour from its minutes). */
export function mergeRollup (into: Rollup, m: Rollup): void {
  if (m.c === 0) return
  into.mn = into.c === 0 ? m.mn : Math.min(into.mn, m.mn)
  into.mx = into.c === 0 ? m.mx : Math.max(into.mx, m.mx)
  into.c += m.c
  into.s += m.s
  into.st += m.st
  into.sh += m.sh
  if (m.f < into.f) { into.f = m.f; into.fc = m.fc; into.fh = m.fh }
}

export function isRollup (v: unknown): v is Rollup {
  if (typeof v !== 'object' || v === null) return false
  const o = v as Record<string, unknown>
  return ['c', 's', 'mn', 'mx', 'st', 'sh', 'f', 'fc', 'fh'].every(k => typeof o[k] === 'number')
}
