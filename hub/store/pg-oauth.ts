// The OAuth flows' state in PostgreSQL (hub/migrations/005-oauth.sql), shared by the hub's instances: authorization
// codes and device authorization sessions (the OAuthCodeStore of api/oauth/codes.ts) and sign-in sessions (a
// SessionPersistence of api/oauth/session.ts). As on the box, only digests of codes, device codes, user codes and
// session ids are stored.
//
// The routes hold the per-process lock of a code or session; across instances, the writes are conditional: a code
// is redeemed by `UPDATE … WHERE used_at IS NULL` in the transaction that writes its tokens, so of two exchanges of
// one code on two instances exactly one writes tokens, and the other, once the first committed, finds it used (a
// reuse: the route revokes the tokens). A device session changes only from the status it was read in.
import type pg from 'pg'
import type { Logger } from 'pino'
import { KeyedLock, newUserCode, type CodeRecord, type DeviceRecord, type DeviceUpdate, type OAuthCodeStore } from '../../api/oauth/codes.ts'
import type { Session, SessionPersistence } from '../../api/oauth/session.ts'
import { digest, newId, newSecret } from '../../api/store/secrets.ts'
import type { WriteOp } from '../../api/store/types.ts'
import type { PgEvents } from './pg-events.ts'
import { inTransaction, isPgOp } from './pg-op.ts'

/** Expired codes, device sessions and sign-in sessions are deleted at most once an hour per instance. */
const PRUNE_EVERY_MS = 3_600_000
/** Used codes are kept a day after they expire, so that a late reuse still revokes its tokens (as the box). */
const GRACE_MS = 86_400_000

/** The channel the trigger of sign_in_sessions notifies with the digest of every session deleted. */
export const SESSIONS_CHANNEL = 'hr_sessions'

async function runIn (client: pg.PoolClient, ops: readonly WriteOp[]): Promise<void> {
  for (const op of ops) {
    if (!isPgOp(op)) throw new TypeError('the PostgreSQL store takes only ops made by its own stores')
    await client.query(op.sql, op.params as unknown[])
  }
}

interface CodeRow { record: Omit<CodeRecord, 'used_at'>, used_at: string | null }
interface DeviceRow { digest: string, record: DeviceRecord, status: DeviceRecord['status'], profile_id: string | null }

function deviceOf (r: DeviceRow): DeviceRecord {
  return { ...r.record, status: r.status, profile_id: r.profile_id }
}

export class PgOAuthCodes implements OAuthCodeStore {
  readonly lock = new KeyedLock()
  private lastPrune = 0

  /** `log` receives a warning when a background prune fails. */
  constructor (private readonly pool: pg.Pool, private readonly log?: Logger) {}

  /** Deletes codes and device sessions that ended more than `graceMs` ago; returns how many. */
  async prune (now = Date.now(), graceMs = GRACE_MS): Promise<number> {
    const codes = await this.pool.query('DELETE FROM oauth_codes WHERE expires_at < $1', [now - graceMs])
    const devices = await this.pool.query('DELETE FROM device_sessions WHERE expires_at < $1', [now - graceMs])
    return (codes.rowCount ?? 0) + (devices.rowCount ?? 0)
  }

  private maybePrune (now: number): void {
    if (now - this.lastPrune < PRUNE_EVERY_MS) return
    this.lastPrune = now
    this.prune(now).catch((err: unknown) => { this.log?.warn({ err }, 'pruning expired OAuth codes and device sessions failed; retried in an hour') })
  }

  async createCode (input: Omit<CodeRecord, 'family' | 'created_at' | 'expires_at' | 'used_at'>, ttlSeconds: number, now = Date.now()): Promise<string> {
    this.maybePrune(now)
    const code = newSecret(32)
    const rec: Omit<CodeRecord, 'used_at'> = { ...input, family: newId(), created_at: now, expires_at: now + Math.min(ttlSeconds, 600) * 1000 }
    await this.pool.query('INSERT INTO oauth_codes (digest, profile_id, record, used_at, expires_at) VALUES ($1, $2, $3, NULL, $4)',
      [digest(code), rec.profile_id, JSON.stringify(rec), rec.expires_at])
    return code
  }

  async getCode (codeDigest: string): Promise<CodeRecord | undefined> {
    const { rows } = await this.pool.query<CodeRow>('SELECT record, used_at FROM oauth_codes WHERE digest = $1', [codeDigest])
    const r = rows[0]
    return r === undefined ? undefined : { ...r.record, used_at: r.used_at === null ? null : Number(r.used_at) }
  }

  async redeemCode (codeDigest: string, _rec: CodeRecord, ops: WriteOp[], now: number): Promise<boolean> {
    return await inTransaction(this.pool, async client => {
      // A concurrent redemption holds the row until it commits; then this one finds used_at set and writes nothing.
      const used = await client.query('UPDATE oauth_codes SET used_at = $2 WHERE digest = $1 AND used_at IS NULL', [codeDigest, now])
      if (used.rowCount !== 1) return false
      await runIn(client, ops)
      return true
    })
  }

  async createDevice (input: { client_id: string, scopes: string[] }, ttlSeconds: number, interval: number, now = Date.now()): Promise<{ device_code: string, user_code: string }> {
    this.maybePrune(now)
    const deviceCode = newSecret(32)
    let userCode = newUserCode()
    // 20^8 codes; a collision with a live session is rare, but never hand out one twice.
    for (let i = 0; i < 5 && (await this.pool.query('SELECT 1 FROM device_sessions WHERE user_code = $1', [digest(userCode)])).rowCount !== 0; i++) userCode = newUserCode()
    const rec: DeviceRecord = { client_id: input.client_id, scopes: input.scopes, user_code_digest: digest(userCode), status: 'pending', profile_id: null, created_at: now, expires_at: now + ttlSeconds * 1000, interval, last_poll_at: null }
    await inTransaction(this.pool, async client => {
      // As the box's index: the user code now names this session, whichever (ended) one it named before.
      await client.query('UPDATE device_sessions SET user_code = NULL WHERE user_code = $1', [rec.user_code_digest])
      await client.query('INSERT INTO device_sessions (digest, user_code, status, profile_id, record, expires_at) VALUES ($1, $2, $3, $4, $5, $6)',
        [digest(deviceCode), rec.user_code_digest, rec.status, rec.profile_id, JSON.stringify(rec), rec.expires_at])
    })
    return { device_code: deviceCode, user_code: userCode }
  }

  async getDevice (deviceDigest: string): Promise<DeviceRecord | undefined> {
    const { rows } = await this.pool.query<DeviceRow>('SELECT digest, record, status, profile_id FROM device_sessions WHERE digest = $1', [deviceDigest])
    const r = rows[0]
    return r === undefined ? undefined : deviceOf(r)
  }

  async deviceByUserCode (userCode: string): Promise<{ key: string, rec: DeviceRecord } | undefined> {
    const { rows } = await this.pool.query<DeviceRow>('SELECT digest, record, status, profile_id FROM device_sessions WHERE user_code = $1', [digest(userCode)])
    const r = rows[0]
    return r === undefined ? undefined : { key: r.digest, rec: deviceOf(r) }
  }

  async updateDevice (deviceDigest: string, from: DeviceRecord, to: DeviceRecord, o: DeviceUpdate = {}): Promise<boolean> {
    return await inTransaction(this.pool, async client => {
      const changed = await client.query(`UPDATE device_sessions SET status = $2, profile_id = $3, record = $4, user_code = CASE WHEN $5::boolean THEN NULL ELSE user_code END
        WHERE digest = $1 AND status = $6`, [deviceDigest, to.status, to.profile_id, JSON.stringify(to), o.release === true, from.status])
      if (changed.rowCount !== 1) return false
      await runIn(client, o.ops ?? [])
      return true
    })
  }
}

/**
 * Sign-in sessions in PostgreSQL, anonymous ones too (a sign-in form rendered by one instance is posted to
 * another). Each instance keeps the sessions it used in memory (api/oauth/session.ts) and reads a missing one here;
 * a deletion, by any instance or by an erasure, is notified on `hr_sessions` and every instance forgets it.
 */
export class PgSignInSessions implements SessionPersistence {
  readonly anonymous = true
  private readonly ended = new Set<(key: string) => void>()
  private cleanups: Array<() => void> = []
  private lastPrune = 0

  constructor (private readonly pool: pg.Pool, private readonly events: PgEvents, private readonly log?: Logger) {}

  /** Listens for sessions ended by any instance; call once before use. */
  async start (): Promise<void> {
    if (this.cleanups.length > 0) return
    this.cleanups.push(await this.events.listen(SESSIONS_CHANNEL, key => { for (const fn of this.ended) fn(key) }))
    // Deletions missed while the listening connection was down: every session may have ended.
    this.cleanups.push(this.events.onReconnect(() => { for (const fn of this.ended) fn('') }))
  }

  stop (): void {
    for (const off of this.cleanups.splice(0)) off()
  }

  onEnded (fn: (key: string) => void): () => void {
    this.ended.add(fn)
    return () => { this.ended.delete(fn) }
  }

  async get (key: string): Promise<Session | undefined> {
    const { rows } = await this.pool.query<{ record: Session }>('SELECT record FROM sign_in_sessions WHERE digest = $1 AND expires_at > $2', [key, Date.now()])
    return rows[0]?.record
  }

  async put (s: Session): Promise<void> {
    this.maybePrune()
    await this.pool.query(`INSERT INTO sign_in_sessions (digest, profile_id, record, expires_at) VALUES ($1, $2, $3, $4)
      ON CONFLICT (digest) DO UPDATE SET profile_id = EXCLUDED.profile_id, record = EXCLUDED.record, expires_at = EXCLUDED.expires_at`,
    [s.key, s.profile_id, JSON.stringify(s), s.expires_at])
  }

  async del (key: string): Promise<void> {
    await this.pool.query('DELETE FROM sign_in_sessions WHERE digest = $1', [key])
  }

  private maybePrune (now = Date.now()): void {
    if (now - this.lastPrune < PRUNE_EVERY_MS) return
    this.lastPrune = now
    this.pool.query('DELETE FROM sign_in_sessions WHERE expires_at <= $1', [now])
      .catch((err: unknown) => { this.log?.warn({ err }, 'pruning expired sign-in sessions failed; retried in an hour') })
  }
}
