// The maximum heart rate that learns (pure, no I/O).
//
// A run is a series of consecutive readings (time order) that are all above
// the member's maximum, each measured at most `gapMs` (the stream gap) after
// the one before. Every reading r of a run opens a 30-second window
// [r.t, r.t + 30 s); the window counts when the run goes on to a reading at
// r.t + 30 s or later, so that the readings held above the maximum for 30 s
// (readings 29 s apart are not enough). A window's average is the mean of the
// bpm of the run's readings inside it. The new maximum is the highest window
// average, rounded to a whole bpm, when that is above the old maximum.
import type { HrSample } from './effort.ts'

export const HOLD_MS = 30_000

/** The learned maximum of a member's class readings (time order), or null when they did not hold above `max` for 30 s. */
export function learnedMax (samples: readonly HrSample[], max: number, o: { gapMs: number, holdMs?: number }): number | null {
  const hold = o.holdMs ?? HOLD_MS
  let best = -Infinity
  let runStart = 0
  for (let i = 0; i <= samples.length; i++) {
    const s = samples[i]
    const prev = samples[i - 1]
    const continues = s !== undefined && s.bpm > max && (i === runStart || (prev !== undefined && s.t - prev.t <= o.gapMs))
    if (continues) continue
    // samples[runStart..i) is a run (possibly empty).
    best = Math.max(best, bestWindow(samples, runStart, i, hold))
    runStart = s !== undefined && s.bpm > max ? i : i + 1
  }
  if (!Number.isFinite(best)) return null
  const rounded = Math.round(best)
  return rounded > max ? rounded : null
}

/** The highest average of the counted 30-second windows of the run samples[from..to). */
function bestWindow (samples: readonly HrSample[], from: number, to: number, hold: number): number {
  const last = samples[to - 1]
  if (last === undefined || to - from < 2) return -Infinity
  let best = -Infinity
  let end = from
  let sum = 0
  for (let i = from; i < to; i++) {
    const s = samples[i]!
    if (last.t - s.t < hold) break
    while (end < to && samples[end]!.t < s.t + hold) { sum += samples[end]!.bpm; end++ }
    best = Math.max(best, sum / (end - i))
    sum -= s.bpm
  }
  return best
}
