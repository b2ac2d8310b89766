// Hourly heart-rate rollups built from the minute rollups: the migration to
// schema version 2, run by Store.open (db.ts). The hourly sublevel is read and
// written by readings.ts.
import type { BatchOp, SublevelStore } from './sublevel.ts'
import { hourOf, readingKey, splitKey } from '../pipeline/codec.ts'
import { emptyRollup, isRollup, mergeRollup, type Rollup } from './rollups.ts'

/** The sublevel of the hourly rollups (schema version 2). */
export const HOUR_SUBLEVEL = 'hr_hour'

/**
 * Migration to schema version 2: builds every hour rollup from the stored
 * minute rollups (merged in key order), written in bounded batches.
 */
export async function buildHourRollups (store: SublevelStore, batchSize = 1000): Promise<number> {
  const minutes = store.sub<Rollup>('hr_minute')
  const hours = store.sub<Rollup>(HOUR_SUBLEVEL)
  let ops: BatchOp[] = []
  let written = 0
  let current: { key: string, rollup: Rollup } | undefined
  const emit = async (force: boolean): Promise<void> => {
    if (ops.length >= batchSize || (force && ops.length > 0)) {
      await store.batch(ops, { sync: true })
      written += ops.length
      ops = []
    }
  }
  for await (const [k, v] of minutes.iterator()) {
    const split = splitKey(k)
    if (split === undefined || !isRollup(v)) continue
    const key = readingKey(split.profile_id, hourOf(split.t))
    if (current?.key !== key) {
      if (current !== undefined) ops.push({ type: 'put', sublevel: hours, key: current.key, value: current.rollup })
      await emit(false)
      current = { key, rollup: emptyRollup() }
    }
    mergeRollup(current.rollup, v)
  }
  if (current !== undefined) ops.push({ type: 'put', sublevel: hours, key: current.key, value: current.rollup })
  await emit(true)
  return written
}
