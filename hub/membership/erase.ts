// A chain member's erasure at the hub (`hr-relay hub admin user delete`). In this order:
// 1. Access ends: every token and grant of theirs is revoked (the token store's trigger tells every instance,
//    whose streams opened with them close), their authorization codes, device authorization sessions and sign-in
//    sessions are deleted (005-oauth.sql; the sessions' trigger tells every instance to forget them), and their
//    straps are unpaired.
// 2. What the hub holds of their readings goes (raw readings, rollups, latest record: 001-readings.sql and
//    002-store-readings.sql), under the member's readings lock, in one transaction with a tombstone per box (the
//    erasures table) for every registered box and every box their readings came from: a reading of theirs still
//    queued at a box, or redelivered by the broker, is then not stored again.
// 3. The account goes, last, so that a command interrupted before is run again by name. The revision's trigger
//    (004-chain.sql) bumps the chain's revision with it: the next membership omits them, and every box erases them
//    on receiving it, also a box that was offline, once it reconnects (the message is retained).
import type { UserRecord } from '../../api/store/records.ts'
import type { PgStores } from '../store/pg-stores.ts'
import { inTransaction } from '../store/pg-op.ts'
import { LOCK_PROFILES_SQL } from '../store/pg-readings-write.ts'

export interface HubErasureCounts {
  account: number
  readings: number
  devices: number
  tokens: number
  /** Authorization codes and device authorization sessions issued to them. */
  oauth_codes: number
  sign_in_sessions: number
  /** Tombstones written: one per box that will refuse a late reading of theirs. */
  tombstones: number
}

/** The hub's tables of a member's readings, by profile_id: the raw readings first (their count is answered). */
const READING_TABLES = ['readings', 'reading_rollups', 'reading_latest'] as const

export async function eraseChainMember (stores: PgStores, user: UserRecord, now = Date.now()): Promise<HubErasureCounts> {
  const pid = user.profile_id
  const counts: HubErasureCounts = { account: 0, readings: 0, devices: 0, tokens: 0, oauth_codes: 0, sign_in_sessions: 0, tombstones: 0 }
  counts.tokens = await stores.tokens.revokeAllOf(pid)
  await inTransaction(stores.pool, async client => {
    const codes = await client.query('DELETE FROM oauth_codes WHERE profile_id = $1', [pid])
    const devices = await client.query('DELETE FROM device_sessions WHERE profile_id = $1', [pid])
    counts.oauth_codes = (codes.rowCount ?? 0) + (devices.rowCount ?? 0)
    counts.sign_in_sessions = (await client.query('DELETE FROM sign_in_sessions WHERE profile_id = $1', [pid])).rowCount ?? 0
  })
  for (const d of stores.devices.list()) {
    if (d.profile_id === pid && await stores.devices.remove(d.device_id) !== undefined) counts.devices++
  }
  await inTransaction(stores.pool, async client => {
    // The lock every write of the member's readings takes first (hr_lock_profiles): no group of theirs is half written.
    await client.query(LOCK_PROFILES_SQL, [[pid]])
    const tombstones = await client.query(`INSERT INTO erasures (box_id, profile_digest, erased_at)
      SELECT box_id, sha256(convert_to($1, 'UTF8')), $2 FROM (SELECT box_id FROM boxes UNION SELECT box_id FROM readings WHERE profile_id = $1 AND box_id IS NOT NULL) AS b
      ON CONFLICT (box_id, profile_digest) DO UPDATE SET erased_at = GREATEST(erasures.erased_at, EXCLUDED.erased_at)`, [pid, now])
    counts.tombstones = tombstones.rowCount ?? 0
    for (const table of READING_TABLES) {
      const deleted = await client.query(`DELETE FROM ${table} WHERE profile_id = $1`, [pid])
      if (table === 'readings') counts.readings = deleted.rowCount ?? 0
    }
  })
  stores.readings.resetCaches()
  if (await stores.users.remove(pid) !== undefined) counts.account = 1
  return counts
}
