// Access and refresh tokens in PostgreSQL: the TokenStore of api/store/tokens.ts, for hub instances that share one
// database. Only SHA-256 digests are stored; tokens of one grant share a family (token_families), whose row every
// write of its tokens locks first, so that a rotation, a replay's revocation of the family and an issue in it run
// one after the other whichever instances run them.
//
// A deletion of access tokens, by any instance, is told to every instance: a trigger
// (hub/migrations/003-store-accounts.sql) notifies `hr_tokens_revoked` with the digests in the transaction of the
// deletion, and each instance tells its onRevoked listeners (open streams close). The instance that deleted them
// tells its listeners once the commit returns, and skips its own notification. Notifications missed while the
// listening connection was down are read back from the tombstones the trigger leaves.
//
// Nothing is cached: a token revoked on another instance fails here at once (cachedLookup answers undefined).
import type pg from 'pg'
import type { Logger } from 'pino'
import { digest, newId, newToken } from '../../api/store/secrets.ts'
import type {
  AccessLookup, AccessTokenRecord, IssuedTokens, IssueRequest, RefreshResult, RefreshTokenRecord, TokenFlow, TokenStore, WriteOp
} from '../../api/store/types.ts'
import type { PgEvents } from './pg-events.ts'
import { inTransaction, pgOp, runOps, type PgOp } from './pg-op.ts'

export interface PgTokensOptions { events: PgEvents, log?: Logger }

/** Digests remembered as told to listeners (oldest forgotten first): enough for the notifications in flight. */
const ANNOUNCED_MAX = 20_000
/** Tombstones are deleted after a day, at most once an hour per instance. */
const PRUNE_EVERY_MS = 3_600_000

interface AccessRow { digest: string, family: string, client_id: string, profile_id: string | null, scopes: string[], flow: TokenFlow, created_at: string, expires_at: string }
interface RefreshRow { digest: string, family: string, client_id: string, profile_id: string | null, scopes: string[], access_digest: string, created_at: string, expires_at: string, used_at: string | null }

/** A string that can be a token at all (anything else is not looked up), as Tokens. */
function plausible (token: string): boolean {
  return typeof token === 'string' && token.length > 0 && token.length <= 512
}

function accessRecord (r: AccessRow): AccessTokenRecord {
  return { client_id: r.client_id, profile_id: r.profile_id, scopes: r.scopes, flow: r.flow, family: r.family, created_at: Number(r.created_at), expires_at: Number(r.expires_at) }
}

function refreshRecord (r: RefreshRow): RefreshTokenRecord {
  return {
    client_id: r.client_id, profile_id: r.profile_id, scopes: r.scopes, family: r.family, access_digest: r.access_digest,
    created_at: Number(r.created_at), expires_at: Number(r.expires_at), used_at: r.used_at === null ? null : Number(r.used_at)
  }
}

/** What a deleting transaction answers, and the access tokens it deleted. */
interface Deleted<T> { result: T, revoked: string[] }

export class PgTokens implements TokenStore {
  private readonly revokedListeners = new Set<(accessDigests: ReadonlySet<string>) => void>()
  /** Digests told to listeners, or to be told by this instance once its deleting transaction commits; oldest first. */
  private readonly announced = new Set<string>()
  /** The database's clock when this instance last knew it heard every notification (tombstones are read from it). */
  private since: Date | null = null
  private lastPrune = 0
  private retry: NodeJS.Timeout | null = null
  private readonly cleanups: Array<() => void> = []

  constructor (private readonly pool: pg.Pool, private readonly options: PgTokensOptions) {}

  /** Listens for revocations made by any instance; call once before use. */
  async load (): Promise<void> {
    if (this.cleanups.length === 0) {
      this.cleanups.push(await this.options.events.listen('hr_tokens_revoked', payload => { this.heardPayload(payload) }))
      this.cleanups.push(this.options.events.onReconnect(() => { this.catchUpSoon(0) }))
    }
    this.since = await this.clock()
    await this.prune()
  }

  /** Stops following other instances' revocations. */
  stop (): void {
    for (const off of this.cleanups.splice(0)) off()
    if (this.retry !== null) clearTimeout(this.retry)
    this.retry = null
  }

  async issue (req: IssueRequest, now = Date.now()): Promise<IssuedTokens> {
    const ops: PgOp[] = []
    const issued = this.prepare(req, ops, now)
    await runOps(this.pool, ops)
    return issued
  }

  /**
   * Adds the writes of a new token pair to `ops`. The first locks the family's row (creating it for a new family),
   * so that a revocation of the family running meanwhile either sees the pair or runs before it.
   */
  prepare (req: IssueRequest, ops: WriteOp[], now = Date.now()): IssuedTokens {
    const family = req.family ?? newId()
    const accessToken = newToken()
    const accessDigest = digest(accessToken)
    // DO UPDATE … WHERE false writes nothing but locks the existing row; one deleted meanwhile is inserted again.
    ops.push(pgOp('put', `family:${family}`,
      'INSERT INTO token_families (family, client_id, profile_id, created_at) VALUES ($1, $2, $3, $4) ON CONFLICT (family) DO UPDATE SET family = EXCLUDED.family WHERE false',
      [family, req.client_id, req.profile_id, now]))
    ops.push(pgOp('put', `access:${accessDigest}`,
      'INSERT INTO access_tokens (digest, family, client_id, profile_id, scopes, flow, created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)',
      [accessDigest, family, req.client_id, req.profile_id, req.scopes, req.flow, now, now + req.expires_in * 1000]))
    const issued: IssuedTokens = { access_token: accessToken, expires_in: req.expires_in, scope: req.scopes.join(' '), family }
    if (req.refresh_expires_in !== undefined) {
      const refreshToken = newToken()
      const refreshDigest = digest(refreshToken)
      ops.push(pgOp('put', `refresh:${refreshDigest}`,
        'INSERT INTO refresh_tokens (digest, family, client_id, profile_id, scopes, access_digest, created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)',
        [refreshDigest, family, req.client_id, req.profile_id, req.scopes, accessDigest, now, now + req.refresh_expires_in * 1000]))
      issued.refresh_token = refreshToken
    }
    return issued
  }

  async lookup (token: string, now = Date.now()): Promise<AccessLookup> {
    if (!plausible(token)) return { ok: false, reason: 'not_found' }
    const d = digest(token)
    const { rows } = await this.pool.query<AccessRow>('SELECT * FROM access_tokens WHERE digest = $1', [d])
    const row = rows[0]
    if (row === undefined) return { ok: false, reason: 'not_found' }
    const rec = accessRecord(row)
    return rec.expires_at <= now ? { ok: false, reason: 'expired' } : { ok: true, token: rec, digest: d }
  }

  /** Always undefined: this store caches no token, so that one revoked on another instance is never answered ok. */
  cachedLookup (_token: string, _now?: number): AccessLookup | undefined {
    return undefined
  }

  async isLive (accessDigest: string, now = Date.now()): Promise<boolean> {
    const { rows } = await this.pool.query<{ expires_at: string }>('SELECT expires_at FROM access_tokens WHERE digest = $1', [accessDigest])
    const row = rows[0]
    return row !== undefined && Number(row.expires_at) > now
  }

  async owner (token: string): Promise<{ kind: 'access' | 'refresh', client_id: string } | undefined> {
    if (!plausible(token)) return undefined
    const { rows } = await this.pool.query<{ kind: 'access' | 'refresh', client_id: string }>(
      "SELECT 'access' AS kind, client_id FROM access_tokens WHERE digest = $1 UNION ALL SELECT 'refresh', client_id FROM refresh_tokens WHERE digest = $1 ORDER BY kind LIMIT 1",
      [digest(token)])
    return rows[0]
  }

  /** Called with the digests of access tokens that stopped working, on any instance, after the deletion committed. */
  onRevoked (fn: (accessDigests: ReadonlySet<string>) => void): () => void {
    this.revokedListeners.add(fn)
    return () => { this.revokedListeners.delete(fn) }
  }

  /**
   * Refresh rotation: the old access token stops working, the refresh token is marked used and a new pair in the
   * same family is issued. Presenting a used refresh token again is a replay and revokes the whole family.
   */
  async rotate (refreshToken: string, clientId: string, expiresIn: number, refreshExpiresIn: number, now = Date.now()): Promise<RefreshResult> {
    if (typeof refreshToken !== 'string' || refreshToken.length > 512) return { ok: false, reason: 'not_found' }
    const d = digest(refreshToken)
    return await this.deleting<RefreshResult>(async client => {
      // The family's lock first; the token is read after it, as the last writer of the family left it.
      const locked = await client.query('SELECT family FROM token_families WHERE family = (SELECT family FROM refresh_tokens WHERE digest = $1) FOR UPDATE', [d])
      if (locked.rowCount === 0) return { result: { ok: false, reason: 'not_found' }, revoked: [] }
      const row = (await client.query<RefreshRow>('SELECT * FROM refresh_tokens WHERE digest = $1', [d])).rows[0]
      if (row === undefined) return { result: { ok: false, reason: 'not_found' }, revoked: [] }
      const rec = refreshRecord(row)
      if (rec.client_id !== clientId) return { result: { ok: false, reason: 'wrong_client' }, revoked: [] }
      if (rec.used_at !== null) {
        const gone = await deleteFamilies(client, [rec.family])
        return { result: { ok: false, reason: 'replayed' }, revoked: gone.access }
      }
      if (rec.expires_at <= now) return { result: { ok: false, reason: 'expired' }, revoked: [] }
      await client.query('UPDATE refresh_tokens SET used_at = $2 WHERE digest = $1', [d, now])
      const gone = await client.query<{ digest: string }>('DELETE FROM access_tokens WHERE digest = $1 RETURNING digest', [rec.access_digest])
      const ops: PgOp[] = []
      const issued = this.prepare({ client_id: rec.client_id, profile_id: rec.profile_id, scopes: rec.scopes, flow: 'refresh_token', expires_in: expiresIn, refresh_expires_in: refreshExpiresIn, family: rec.family }, ops, now)
      await run(client, ops)
      return { result: { ok: true, issued, record: rec }, revoked: gone.rows.map(r => r.digest) }
    })
  }

  /** RFC 7009: revokes an access or refresh token; a refresh token takes its family with it. Unknown tokens are ignored. */
  async revoke (token: string): Promise<boolean> {
    if (!plausible(token)) return false
    const d = digest(token)
    const deleted = await this.deleting(async client => {
      const gone = await client.query<{ digest: string }>('DELETE FROM access_tokens WHERE digest = $1 RETURNING digest', [d])
      return { result: gone.rowCount ?? 0, revoked: gone.rows.map(r => r.digest) }
    })
    if (deleted > 0) return true
    const family = (await this.pool.query<{ family: string }>('SELECT family FROM refresh_tokens WHERE digest = $1', [d])).rows[0]?.family
    if (family === undefined) return false
    await this.revokeFamily(family)
    return true
  }

  /** Deletes every access and refresh token of a family and its grant; returns how many tokens were deleted. */
  async revokeFamily (family: string): Promise<number> {
    return await this.revokeFamiliesWhere('family = $1', [family])
  }

  /** "Disconnect app": every token of this user for this client stops working; returns how many were deleted. */
  async revokeGrant (profileId: string, clientId: string): Promise<number> {
    return await this.revokeFamiliesWhere('profile_id = $1 AND client_id = $2', [profileId, clientId])
  }

  /** Every token and grant of the member go (their erasure); returns how many tokens were deleted. */
  async revokeAllOf (profileId: string): Promise<number> {
    return await this.deleting(async client => {
      const families = await lockFamilies(client, 'profile_id = $1', [profileId])
      const gone = await deleteFamilies(client, families)
      // A token of the member in a family of another profile (none is issued so): deleted all the same.
      const access = await client.query<{ digest: string }>('DELETE FROM access_tokens WHERE profile_id = $1 RETURNING digest', [profileId])
      const refresh = await client.query('DELETE FROM refresh_tokens WHERE profile_id = $1', [profileId])
      return { result: gone.count + (access.rowCount ?? 0) + (refresh.rowCount ?? 0), revoked: [...gone.access, ...access.rows.map(r => r.digest)] }
    })
  }

  private async revokeFamiliesWhere (where: string, params: unknown[]): Promise<number> {
    return await this.deleting(async client => {
      const gone = await deleteFamilies(client, await lockFamilies(client, where, params))
      return { result: gone.count, revoked: gone.access }
    })
  }

  /** Client ids this user has granted access to (a family not revoked), in order. */
  async grantedClients (profileId: string): Promise<string[]> {
    const { rows } = await this.pool.query<{ client_id: string }>('SELECT DISTINCT client_id FROM token_families WHERE profile_id = $1 ORDER BY client_id', [profileId])
    return rows.map(r => r.client_id)
  }

  /** What each app the user granted access to holds now: the scopes of its live access tokens and the newest one's issue time. */
  async grantsOf (profileId: string, now = Date.now()): Promise<Array<{ client_id: string, scopes: string[], last_issued_at: number | null }>> {
    const { rows } = await this.pool.query<{ client_id: string, scopes: string[] | null, created_at: string | null }>(
      'SELECT f.client_id, a.scopes, a.created_at FROM token_families f LEFT JOIN access_tokens a ON a.family = f.family AND a.expires_at > $2 WHERE f.profile_id = $1 ORDER BY f.client_id',
      [profileId, now])
    const byClient = new Map<string, { scopes: Set<string>, last: number | null }>()
    for (const r of rows) {
      const entry = byClient.get(r.client_id) ?? { scopes: new Set<string>(), last: null }
      byClient.set(r.client_id, entry)
      if (r.scopes === null || r.created_at === null) continue
      for (const s of r.scopes) entry.scopes.add(s)
      entry.last = Math.max(entry.last ?? 0, Number(r.created_at))
    }
    return [...byClient].map(([client_id, e]) => ({ client_id, scopes: [...e.scopes].sort(), last_issued_at: e.last }))
  }

  /**
   * Runs a transaction that deletes access tokens (`fn` answers the digests it deleted) and then tells this
   * instance's listeners. The digests are marked as told before the commit: the notification of the commit may be
   * heard before the commit's answer, and must not be told twice.
   */
  private async deleting<T> (fn: (client: pg.PoolClient) => Promise<Deleted<T>>): Promise<T> {
    let marked: string[] = []
    let done: Deleted<T>
    try {
      done = await inTransaction(this.pool, async client => {
        const out = await fn(client)
        marked = out.revoked.filter(d => !this.announced.has(d))
        for (const d of marked) this.remember(d)
        return out
      })
    } catch (err) {
      for (const d of marked) this.announced.delete(d)
      throw err
    }
    this.tell(new Set(marked))
    if (Date.now() - this.lastPrune > PRUNE_EVERY_MS) {
      this.prune().catch((err: Error) => { this.options.log?.warn({ err: err.message }, 'pruning token tombstones failed') })
    }
    return done.result
  }

  private remember (d: string): void {
    this.announced.add(d)
    if (this.announced.size > ANNOUNCED_MAX) {
      const oldest = this.announced.values().next().value
      if (oldest !== undefined) this.announced.delete(oldest)
    }
  }

  private tell (digests: ReadonlySet<string>): void {
    if (digests.size === 0) return
    for (const fn of [...this.revokedListeners]) {
      try { fn(digests) } catch (err) { this.options.log?.error({ err }, 'token revocation listener failed') }
    }
  }

  private heardPayload (payload: string): void {
    let list: unknown
    try { list = JSON.parse(payload) } catch { return }
    if (Array.isArray(list)) this.heard(list.filter((d): d is string => typeof d === 'string'))
  }

  /** Digests another instance deleted (or this one, if told already: skipped). */
  private heard (digests: readonly string[]): void {
    const fresh = new Set<string>()
    for (const d of digests) {
      if (this.announced.has(d)) continue
      this.remember(d)
      fresh.add(d)
    }
    this.tell(fresh)
  }

  /** After a reconnection: what was deleted while notifications could be missed, from a minute before. */
  private async catchUp (): Promise<void> {
    if (this.since === null) return
    const now = await this.clock()
    const { rows } = await this.pool.query<{ digest: string }>("SELECT digest FROM revoked_access_tokens WHERE revoked_at > $1::timestamptz - interval '1 minute'", [this.since])
    this.since = now
    this.heard(rows.map(r => r.digest))
    await this.prune()
  }

  private catchUpSoon (delay: number): void {
    if (this.retry !== null || this.cleanups.length === 0) return
    this.retry = setTimeout(() => {
      this.retry = null
      this.catchUp().catch((err: Error) => {
        if (this.pool.ending) return
        this.options.log?.warn({ err: err.message }, 'reading token revocations missed while reconnecting failed; retrying')
        this.catchUpSoon(1000)
      })
    }, delay)
    this.retry.unref()
  }

  private async clock (): Promise<Date> {
    const { rows } = await this.pool.query<{ now: Date }>('SELECT clock_timestamp() AS now')
    const now = rows[0]?.now
    if (now === undefined) throw new Error('SELECT clock_timestamp() answered no row')
    return now
  }

  private async prune (): Promise<void> {
    this.lastPrune = Date.now()
    await this.pool.query("DELETE FROM revoked_access_tokens WHERE revoked_at < clock_timestamp() - interval '1 day'")
  }
}

async function run (client: pg.PoolClient, ops: readonly PgOp[]): Promise<void> {
  for (const op of ops) await client.query(op.sql, [...op.params])
}

/** Locks the rows of the families that match, in one order (two revocations never wait for each other in a cycle). */
async function lockFamilies (client: pg.PoolClient, where: string, params: unknown[]): Promise<string[]> {
  const { rows } = await client.query<{ family: string }>(`SELECT family FROM token_families WHERE ${where} ORDER BY family FOR UPDATE`, params)
  return rows.map(r => r.family)
}

/** Deletes the tokens and rows of families locked by this transaction; answers the access digests and the token count. */
async function deleteFamilies (client: pg.PoolClient, families: string[]): Promise<{ access: string[], count: number }> {
  if (families.length === 0) return { access: [], count: 0 }
  const access = await client.query<{ digest: string }>('DELETE FROM access_tokens WHERE family = ANY($1) RETURNING digest', [families])
  const refresh = await client.query('DELETE FROM refresh_tokens WHERE family = ANY($1)', [families])
  await client.query('DELETE FROM token_families WHERE family = ANY($1)', [families])
  return { access: access.rows.map(r => r.digest), count: (access.rowCount ?? 0) + (refresh.rowCount ?? 0) }
}
