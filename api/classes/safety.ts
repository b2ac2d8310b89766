// The safety alert of a class (pure, no I/O): a member whose readings were at
// or above 95 % of their maximum for the last 60 s. The run is the newest
// readings that are all at or above that threshold, each measured at most
// `gapMs` (the stream gap) after the one before; the alert is on while the
// run spans 60 s or more (first to last reading) and its last reading is at
// most `gapMs` old. A reading below the threshold or a strap that stops
// sending ends it.
import type { HrSample } from './effort.ts'

export const ALERT_PERCENT = 95
export const ALERT_HOLD_MS = 60_000

/** Whether bpm is at or above 95 % of max (integer arithmetic: no rounding at the edge). */
export function atAlertLevel (bpm: number, max: number): boolean {
  return bpm * 100 >= ALERT_PERCENT * max
}

/** The alert of a member from their recent readings (time order) at `now`. */
export function alertOf (samples: readonly HrSample[], max: number, now: number, o: { gapMs: number, holdMs?: number }): boolean {
  const hold = o.holdMs ?? ALERT_HOLD_MS
  let i = samples.length - 1
  const last = samples[i]
  if (last === undefined || now - last.t > o.gapMs || !atAlertLevel(last.bpm, max)) return false
  let first = last
  for (i--; i >= 0; i--) {
    const s = samples[i]!
    if (!atAlertLevel(s.bpm, max) || first.t - s.t > o.gapMs) break
    first = s
  }
  return last.t - first.t >= hold
}
