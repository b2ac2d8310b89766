// Retention: deletes raw readings older than rawDays and rollups older than
// rollupDays, profile by profile, in bounded batches, and drops a cached
// rollup (readings-cache.ts) that a batch deleted.
import type { BatchOp, Sub } from './sublevel.ts'
import type { AtomicBatch } from './types.ts'
import type { ReadingCaches } from './readings-cache.ts'
import type { Rollup } from './rollups.ts'
import { hourOf, minuteOf, padTs, profileLow } from '../pipeline/codec.ts'

const DAY_MS = 86_400_000

/** What pruning uses of the readings store (readings.ts). */
export interface PruneContext {
  readonly store: AtomicBatch
  readonly raw: Sub<Uint8Array>
  readonly minutes: Sub<Rollup>
  readonly hours: Sub<Rollup>
  readonly caches: ReadingCaches
  /** Profiles that have ever had a reading. */
  profiles (): AsyncIterable<string>
}

/**
 * Deletes raw readings older than rawDays and rollups older than rollupDays,
 * at most `limit` raw readings and minute rollups per call. Returns how many
 * of those were deleted (call again while it returns `limit`). An hour's
 * rollup goes in the same batch as the last of its minutes (an hour that
 * starts before the cut but ends after it is kept) and is not counted.
 */
export async function pruneReadings (ctx: PruneContext, now: number, retention: { rawDays: number, rollupDays: number }, limit: number): Promise<number> {
  const rawCut = now - retention.rawDays * DAY_MS
  const rollupCut = minuteOf(now - retention.rollupDays * DAY_MS)
  let deleted = 0
  for await (const profileId of ctx.profiles()) {
    for (const [sub, cut] of [[ctx.raw, rawCut], [ctx.minutes, rollupCut]] as const) {
      if (deleted >= limit) return deleted
      const ops: BatchOp[] = []
      const budget = limit - deleted
      for await (const k of (sub as Sub<unknown>).keys({ gte: profileLow(profileId), lt: `${profileId}!${padTs(Math.max(0, cut))}`, limit: budget })) {
        ops.push({ type: 'del', sublevel: sub as Sub<unknown>, key: k })
      }
      const counted = ops.length
      if (sub === ctx.minutes && counted < budget) {
        // Every minute before the cut is in this batch: the whole hours before it go too.
        for await (const k of ctx.hours.keys({ gte: profileLow(profileId), lt: `${profileId}!${padTs(Math.max(0, hourOf(cut)))}`, limit })) {
          ops.push({ type: 'del', sublevel: ctx.hours, key: k })
        }
      }
      if (ops.length > 0) {
        await ctx.store.batch(ops)
        deleted += counted
        if (sub === ctx.minutes) {
          for (const [cache, cachedSub] of [[ctx.caches.minute, ctx.minutes], [ctx.caches.hour, ctx.hours]] as const) {
            const cached = cache.get(profileId)
            if (cached !== undefined && ops.some(o => o.key === cached.key && o.sublevel === cachedSub)) cache.delete(profileId)
          }
        }
      }
    }
  }
  return deleted
}
