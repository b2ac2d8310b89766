// What the readings store keeps in memory so that an in-order reading costs no
// store read: the latest reading and the newest minute and hour rollup of each
// profile, each map bounded (the profiles first cached are forgotten first).
// Planning reads and fills it (readings-plan.ts), a written plan updates it,
// pruning drops the rollups it deletes (readings-prune.ts).
import type { LatestRecord } from './records.ts'
import type { Rollup } from './rollups.ts'

export interface CachedRollup { key: string, rollup: Rollup }

export class ReadingCaches {
  /** Latest per profile (null: known to have none). */
  readonly latest = new Map<string, LatestRecord | null>()
  /** The newest minute rollup written per profile. */
  readonly minute = new Map<string, CachedRollup>()
  /** The newest hour rollup written per profile. */
  readonly hour = new Map<string, CachedRollup>()

  constructor (readonly max: number) {}

  clear (): void {
    this.latest.clear()
    this.minute.clear()
    this.hour.clear()
  }
}

/**
 * Sets a cache entry, dropping the oldest entries beyond `max`. An entry set again keeps its place (the order is
 * that of first insertion): moving it to the newest end on every reading made V8 rebuild the map's table every
 * few dozen readings at 2,000 profiles, and the bound (100,000 profiles by default) is a safety limit that a relay
 * box does not reach; a profile forgotten early costs one store read.
 */
export function bounded<V> (cache: Map<string, V>, key: string, value: V, max: number): void {
  cache.set(key, value)
  while (cache.size > max) {
    const oldest = cache.keys().next()
    if (oldest.done === true) break
    cache.delete(oldest.value)
  }
}
