// Retention of the PostgreSQL readings store (pg-readings.ts): raw readings older than rawDays, minute rollups
// older than rollupDays and the hour rollups whose minutes are all gone, in bounded steps. Each step walks the
// members (reading_latest, one row per member ever written) and each member's oldest rows by primary key, so
// that no step scans a whole table. The latest record is never pruned.
import type pg from 'pg'
import { hourOf, minuteOf } from '../../api/pipeline/codec.ts'

const DAY_MS = 86_400_000

/** Deletes at most $2 raw readings older than $1 (ms). */
const PRUNE_RAW = `WITH k AS (
  SELECT l.profile_id, x.measured_at FROM reading_latest l
   CROSS JOIN LATERAL (SELECT measured_at FROM readings r WHERE r.profile_id = l.profile_id AND r.measured_at < $1 ORDER BY r.measured_at LIMIT $2) x
   LIMIT $2)
DELETE FROM readings r USING k WHERE r.profile_id = k.profile_id AND r.measured_at = k.measured_at`

/** Deletes at most $3 rollups of span $2 that start before $1 (ms); without a limit when $3 is NULL. */
const PRUNE_ROLLUPS = `WITH k AS (
  SELECT l.profile_id, x.start FROM reading_latest l
   CROSS JOIN LATERAL (SELECT start FROM reading_rollups r WHERE r.profile_id = l.profile_id AND r.span = $2 AND r.start < $1 ORDER BY r.start LIMIT $3) x
   LIMIT $3)
DELETE FROM reading_rollups r USING k WHERE r.profile_id = k.profile_id AND r.span = $2 AND r.start = k.start`

/**
 * Deletes raw readings older than rawDays and minute rollups older than rollupDays, at most `limit` of both
 * together; returns how many (call again while it returns `limit`). Once a call finds fewer than `limit`, every
 * minute before the cut is gone, and it deletes the hour rollups that end before it too (not counted); an hour
 * that starts before the cut and ends after it is kept.
 *
 * Pruning takes no member's lock: it deletes only what is older than retention, which a writer touches only for
 * a reading that old (a box that was offline that long), and then at worst writes that rollup again for a later
 * call to delete.
 */
export async function pruneReadings (pool: pg.Pool, now: number, retention: { rawDays: number, rollupDays: number }, limit: number): Promise<number> {
  const rawCut = now - retention.rawDays * DAY_MS
  const rollupCut = minuteOf(now - retention.rollupDays * DAY_MS)
  let deleted = (await pool.query(PRUNE_RAW, [rawCut, limit])).rowCount ?? 0
  if (deleted >= limit) return deleted
  deleted += (await pool.query(PRUNE_ROLLUPS, [rollupCut, 60_000, limit - deleted])).rowCount ?? 0
  if (deleted >= limit) return deleted
  await pool.query(PRUNE_ROLLUPS, [hourOf(rollupCut), 3_600_000, null])
  return deleted
}
