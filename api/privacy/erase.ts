// A member's erasure (GDPR Article 17): every trace of them goes, then their
// bytes. The admin API (DELETE /admin/users/:username), the CLI and /me call it.
// In this order:
// 1. Access ends. Every token and grant of theirs is revoked: the token store's
//    revocation event closes the real-time and room streams and the MQTT app
//    connections opened with them (1008). Their sign-in sessions end, their
//    widgets go (a widget stream closes), their devices are unpaired (the
//    broker disconnects a device), and they leave every room
//    (room_member_removed: a display drops the tile).
// 2. In the pipeline's exclusive section (no group being written, and a reading
//    of theirs still on its way is refused, never written), their readings,
//    rollups, latest record, game-mod and rich-presence settings, class
//    summaries and learned maxima (and their profile id in the coach's hidden
//    lists of classes) and OAuth codes are deleted in one batch, the account with its username and consents
//    goes, and the readings caches are reset.
// 3. The hooks run (the relay's upstream queue: its entries for the member go
//    and an erasure notice is queued), then the store is rewritten
//    (api/store/rewrite.ts): after that no file under the data directory holds
//    their profile id or username.
import type { BatchOp, Sub } from '../store/db.ts'
import { profileHigh, profileLow } from '../pipeline/codec.ts'
import { HOUR_SUBLEVEL } from '../store/hour-rollups.ts'
import { markRewritePending, rewriteStore } from '../store/rewrite.ts'
import { sharedSessions } from '../oauth/session.ts'
import { auditLogOf } from '../audit/log.ts'
import type { UserRecord } from '../store/users.ts'
import type { Services } from '../services.ts'
import type { ErasureCounts, ErasureHook } from './types.ts'
import { ClassStore } from '../store/classes.ts'

export type { ErasureCounts, ErasureHook }
export { markRewritePending }

export type EraseUses = Pick<Services, 'store' | 'users' | 'tokens' | 'devices' | 'readings' | 'pipeline' | 'widgets' | 'rooms' | 'config' | 'erasureHooks'>

/** Erasures and rewrites run one at a time, per store: each erasure ends with a rewrite of the whole store. */
const queues = new WeakMap<object, Promise<unknown>>()

function serialized<T> (store: object, fn: () => Promise<T>): Promise<T> {
  const run = (queues.get(store) ?? Promise.resolve()).then(fn)
  queues.set(store, run.catch(() => undefined))
  return run
}

/** Erases the member and returns what went. */
export async function eraseMember (uses: EraseUses, user: UserRecord, hooks: readonly ErasureHook[] = uses.erasureHooks ?? []): Promise<ErasureCounts> {
  return await serialized(uses.store, async () => await eraseNow(uses, user, hooks))
}

/** Rewrites the store after an erasure notice left the upstream queue, so that its bytes go too. */
export async function rewriteAfterNotice (store: EraseUses['store']): Promise<void> {
  await serialized(store, async () => { await rewriteStore(store) })
}

async function eraseNow (uses: EraseUses, user: UserRecord, hooks: readonly ErasureHook[]): Promise<ErasureCounts> {
  const pid = user.profile_id
  const counts: ErasureCounts = {
    account: 0, readings: 0, minute_rollups: 0, hour_rollups: 0, latest: 0, consents: user.consents?.length ?? 0, widgets: 0,
    game_mod: 0, rich_presence: 0, devices: 0, rooms: 0, tokens: 0, oauth_codes: 0, sign_in_sessions: 0, upstream_queue: 0,
    class_summaries: 0, learned_maxima: 0
  }
  // A stop or crash before the rewrite below completes: the next start runs it (api/store/rewrite.ts).
  await markRewritePending(uses.store.db.location)
  // 1. Access ends.
  if (user.home_assistant === true) await uses.users.setHomeAssistant(pid, false)
  counts.tokens = await uses.tokens.revokeAllOf(pid)
  const sessions = sharedSessions(uses.config)
  counts.sign_in_sessions = sessions.endAllFor(pid)
  await sessions.flushed()
  for (const w of await uses.widgets.list(pid)) if (await uses.widgets.delete(pid, w.id)) counts.widgets++
  for (const d of uses.devices.list()) if (d.profile_id === pid && await uses.devices.remove(d.device_id) !== undefined) counts.devices++
  for (const roomId of [...uses.rooms.roomsOf(pid)]) if (await uses.rooms.removeMember(roomId, pid)) counts.rooms++

  // 2. The records, while no group of readings is being written.
  await uses.pipeline.eraseProfile(pid, async () => {
    const ops: BatchOp[] = []
    const range = async (name: string, kind: 'readings' | 'minute_rollups' | 'hour_rollups'): Promise<void> => {
      const sub = uses.store.sub<unknown>(name, name === 'hr_raw' ? 'view' : 'json')
      for await (const key of sub.keys({ gte: profileLow(pid), lt: profileHigh(pid) })) { ops.push({ type: 'del', sublevel: sub, key }); counts[kind]++ }
    }
    await range('hr_raw', 'readings')
    await range('hr_minute', 'minute_rollups')
    await range(HOUR_SUBLEVEL, 'hour_rollups')
    const single = async (name: string, kind: 'latest' | 'game_mod' | 'rich_presence'): Promise<void> => {
      const sub = uses.store.sub<unknown>(name)
      if (await sub.get(pid) !== undefined) { ops.push({ type: 'del', sublevel: sub, key: pid }); counts[kind]++ }
    }
    await single('hr_latest', 'latest')
    await single('game_mod', 'game_mod')
    await single('rich_presence', 'rich_presence')
    await oauthCodes(uses, pid, ops, counts)
    const classes = await new ClassStore(uses.store).erasureOps(pid)
    for (const op of classes.ops) ops.push(op)
    counts.class_summaries = classes.summaries
    counts.learned_maxima = classes.learned
    await uses.store.batch(ops, { sync: true })
    uses.readings.resetCaches()
    if (await uses.users.remove(pid) !== undefined) counts.account = 1
  })

  // 3. The audit log's entries name the member by a digest from now on; the hooks; then the bytes.
  await auditLogOf(uses.store).redactSubject({ username: user.username, profile_id: pid })
  for (const hook of hooks) {
    const more = await hook({ username: user.username, profile_id: pid })
    if (more !== undefined) for (const [k, v] of Object.entries(more)) counts[k as keyof ErasureCounts] += v ?? 0
  }
  await rewriteStore(uses.store)
  return counts
}

/** Authorization codes and device-flow sessions issued to the member (and the user-code index of those sessions). */
async function oauthCodes (uses: EraseUses, pid: string, ops: BatchOp[], counts: ErasureCounts): Promise<void> {
  const codes = uses.store.sub<{ profile_id: string | null }>('oauth_codes')
  for await (const [key, rec] of codes.iterator()) if (rec.profile_id === pid) { ops.push({ type: 'del', sublevel: codes, key }); counts.oauth_codes++ }
  const sessions = uses.store.sub<{ profile_id: string | null, user_code_digest: string }>('device_sessions')
  const userCodes: Sub<string> = uses.store.sub<string>('device_user_codes')
  for await (const [key, rec] of sessions.iterator()) {
    if (rec.profile_id !== pid) continue
    ops.push({ type: 'del', sublevel: sessions, key })
    if (await userCodes.get(rec.user_code_digest) === key) ops.push({ type: 'del', sublevel: userCodes, key: rec.user_code_digest })
    counts.oauth_codes++
  }
}
