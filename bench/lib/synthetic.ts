// The synthetic heart-rate series the store scenarios load. Pure.
import type { StoredReading } from '../../api/pipeline/reading.ts'

/** Deterministic 1 Hz series: bpm wanders about 23..183; each hour ends with a 10 s gap (no readings). */
export function syntheticReading (profileId: string, start: number, i: number): StoredReading | undefined {
  if (i % 3600 >= 3590) return undefined
  const heart = 55 + ((i * 7919) % 97) + Math.round(32 * Math.sin(i / 900))
  return { profile_id: profileId, measured_at: start + i * 1000, heart_rate: heart, source: 'sim' }
}
