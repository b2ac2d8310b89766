// Access and refresh tokens. Only SHA-256 digests are stored. Tokens of one
// grant share a family id, so that a replayed refresh token or a reused
// authorization code revokes everything issued from that grant (RFC 9700
// 2.2.2 and 4.14), and an index by (user, client) serves "disconnect app".
// Every deletion of access tokens (revoke, family revocation, disconnect,
// refresh rotation) goes through deleteAll(), which tells onRevoked listeners
// the digests once the batch is stored: open streams close on that event.
import type { BatchOp, Store, Sub } from './db.ts'
import { digest, newId, newToken } from './secrets.ts'
import { KeyedLock } from './lock.ts'

import type { AccessLookup, AccessTokenRecord, IssuedTokens, IssueRequest, RefreshResult, RefreshTokenRecord } from './records.ts'
import type { TokenStore } from './types.ts'
export type { AccessLookup, AccessTokenRecord, IssuedTokens, IssueRequest, RefreshResult, RefreshTokenRecord, TokenFlow } from './records.ts'

/** Access tokens kept in memory after a lookup, so an API call costs no LevelDB read (bounded, oldest out first). */
const CACHE_MAX = 10_000

/** A string that can be a token at all (anything else is not looked up). */
function plausible (token: string): boolean {
  return typeof token === 'string' && token.length > 0 && token.length <= 512
}

function judged (rec: AccessTokenRecord, d: string, now: number): AccessLookup {
  return rec.expires_at <= now ? { ok: false, reason: 'expired' } : { ok: true, token: rec, digest: d }
}

export class Tokens implements TokenStore {
  private readonly cache = new Map<string, AccessTokenRecord>()
  /** Bumped before and after every deleting batch, so a lookup that overlapped one does not cache. */
  private deletions = 0
  private readonly access: Sub<AccessTokenRecord>
  private readonly refresh: Sub<RefreshTokenRecord>
  /** `family!kind!digest` → '' */
  private readonly byFamily: Sub<string>
  /** `profile!client!family` → '' (for disconnect and the member's list of apps) */
  private readonly grants: Sub<string>
  private readonly revokedListeners = new Set<(accessDigests: ReadonlySet<string>) => void>()
  /** Rotation and revocation of one family run one at a time (a revocation cannot miss a pair issued beside it). */
  private readonly lock = new KeyedLock()

  constructor (private readonly store: Store) {
    this.access = store.sub('tokens_access')
    this.refresh = store.sub('tokens_refresh')
    this.byFamily = store.sub('tokens_by_family')
    this.grants = store.sub('grants')
  }

  /** Issues an access token (and a refresh token when refresh_expires_in is given). */
  async issue (req: IssueRequest, now = Date.now()): Promise<IssuedTokens> {
    const ops: BatchOp[] = []
    const issued = this.prepare(req, ops, now)
    await this.store.batch(ops, { sync: true })
    return issued
  }

  /** Adds the writes of a new token pair to `ops` (for callers that change other state in the same batch). */
  prepare (req: IssueRequest, ops: BatchOp[], now = Date.now()): IssuedTokens {
    const family = req.family ?? newId()
    const accessToken = newToken()
    const accessDigest = digest(accessToken)
    ops.push({ type: 'put', sublevel: this.access, key: accessDigest, value: { client_id: req.client_id, profile_id: req.profile_id, scopes: req.scopes, flow: req.flow, family, created_at: now, expires_at: now + req.expires_in * 1000 } satisfies AccessTokenRecord })
    ops.push({ type: 'put', sublevel: this.byFamily, key: `${family}!a!${accessDigest}`, value: '' })
    if (req.profile_id !== null) ops.push({ type: 'put', sublevel: this.grants, key: `${req.profile_id}!${req.client_id}!${family}`, value: '' })
    const issued: IssuedTokens = { access_token: accessToken, expires_in: req.expires_in, scope: req.scopes.join(' '), family }
    if (req.refresh_expires_in !== undefined) {
      const refreshToken = newToken()
      const refreshDigest = digest(refreshToken)
      ops.push({ type: 'put', sublevel: this.refresh, key: refreshDigest, value: { client_id: req.client_id, profile_id: req.profile_id, scopes: req.scopes, family, access_digest: accessDigest, created_at: now, expires_at: now + req.refresh_expires_in * 1000, used_at: null } satisfies RefreshTokenRecord })
      ops.push({ type: 'put', sublevel: this.byFamily, key: `${family}!r!${refreshDigest}`, value: '' })
      issued.refresh_token = refreshToken
    }
    return issued
  }

  async lookup (token: string, now = Date.now()): Promise<AccessLookup> {
    if (!plausible(token)) return { ok: false, reason: 'not_found' }
    const d = digest(token)
    let rec = this.cache.get(d)
    if (rec === undefined) {
      const generation = this.deletions
      rec = await this.access.get(d)
      if (rec === undefined) return { ok: false, reason: 'not_found' }
      // Only tokens that exist are cached, and only if no deletion ran while this read was in
      // flight (the read may predate a revocation); every deletion goes through deleteAll().
      if (generation === this.deletions) this.cache.set(d, rec)
      if (this.cache.size > CACHE_MAX) this.cache.delete(this.cache.keys().next().value as string)
    }
    return judged(rec, d, now)
  }

  /**
   * `lookup` answered from memory only: undefined when the token is not in the cache (then only
   * `lookup` can tell). For a caller that must not wait (the latest-reading route answers from it when it can).
   */
  cachedLookup (token: string, now = Date.now()): AccessLookup | undefined {
    if (!plausible(token)) return undefined
    const d = digest(token)
    const rec = this.cache.get(d)
    return rec === undefined ? undefined : judged(rec, d, now)
  }

  /** True while the access token with this digest exists and has not expired (streams re-check at open). */
  async isLive (accessDigest: string, now = Date.now()): Promise<boolean> {
    const rec = this.cache.get(accessDigest) ?? await this.access.get(accessDigest)
    return rec !== undefined && rec.expires_at > now
  }

  /** Which kind of token this is and the client it was issued to (for RFC 7009's ownership check); undefined when unknown. */
  async owner (token: string): Promise<{ kind: 'access' | 'refresh', client_id: string } | undefined> {
    if (typeof token !== 'string' || token.length === 0 || token.length > 512) return undefined
    const d = digest(token)
    const acc = await this.access.get(d)
    if (acc !== undefined) return { kind: 'access', client_id: acc.client_id }
    const ref = await this.refresh.get(d)
    return ref === undefined ? undefined : { kind: 'refresh', client_id: ref.client_id }
  }

  /** Writes a batch that deletes tokens, dropping the deleted access tokens from the cache first. */
  private async deleteAll (ops: BatchOp[]): Promise<void> {
    this.deletions++
    for (const op of ops) if (op.type === 'del' && op.sublevel === this.access) this.cache.delete(op.key)
    try {
      await this.store.batch(ops, { sync: true })
    } finally {
      this.deletions++
    }
    const revoked = new Set<string>()
    for (const op of ops) if (op.type === 'del' && op.sublevel === this.access) revoked.add(op.key)
    if (revoked.size === 0) return
    for (const fn of [...this.revokedListeners]) {
      try { fn(revoked) } catch { /* a listener's fault must not fail the revocation */ }
    }
  }

  /**
   * Called with the digests of access tokens that stopped working (revoked,
   * rotated, disconnected), after the deletion is stored; returns unsubscribe.
   */
  onRevoked (fn: (accessDigests: ReadonlySet<string>) => void): () => void {
    this.revokedListeners.add(fn)
    return () => { this.revokedListeners.delete(fn) }
  }

  /**
   * Refresh rotation: the old access and refresh tokens stop working and a
   * new pair in the same family is issued. Presenting a rotated refresh token
   * again is a replay and revokes the whole family.
   */
  async rotate (refreshToken: string, clientId: string, expiresIn: number, refreshExpiresIn: number, now = Date.now()): Promise<RefreshResult> {
    if (typeof refreshToken !== 'string' || refreshToken.length > 512) return { ok: false, reason: 'not_found' }
    const family = (await this.refresh.get(digest(refreshToken)))?.family
    if (family === undefined) return { ok: false, reason: 'not_found' }
    return await this.lock.run(family, async () => await this.rotateLocked(refreshToken, clientId, expiresIn, refreshExpiresIn, now))
  }

  private async rotateLocked (refreshToken: string, clientId: string, expiresIn: number, refreshExpiresIn: number, now: number): Promise<RefreshResult> {
    const d = digest(refreshToken)
    const rec = await this.refresh.get(d)
    if (rec === undefined) return { ok: false, reason: 'not_found' }
    if (rec.client_id !== clientId) return { ok: false, reason: 'wrong_client' }
    if (rec.used_at !== null) {
      await this.revokeFamilyLocked(rec.family)
      return { ok: false, reason: 'replayed' }
    }
    if (rec.expires_at <= now) return { ok: false, reason: 'expired' }
    const ops: BatchOp[] = [
      { type: 'put', sublevel: this.refresh, key: d, value: { ...rec, used_at: now } },
      { type: 'del', sublevel: this.access, key: rec.access_digest },
      { type: 'del', sublevel: this.byFamily, key: `${rec.family}!a!${rec.access_digest}` }
    ]
    const issued = this.prepare({ client_id: rec.client_id, profile_id: rec.profile_id, scopes: rec.scopes, flow: 'refresh_token', expires_in: expiresIn, refresh_expires_in: refreshExpiresIn, family: rec.family }, ops, now)
    await this.deleteAll(ops)
    return { ok: true, issued, record: rec }
  }

  /** RFC 7009: revokes an access or refresh token; a refresh token takes its family with it. Unknown tokens are ignored. */
  async revoke (token: string): Promise<boolean> {
    if (typeof token !== 'string' || token.length === 0 || token.length > 512) return false
    const d = digest(token)
    const acc = await this.access.get(d)
    if (acc !== undefined) {
      await this.deleteAll([
        { type: 'del', sublevel: this.access, key: d },
        { type: 'del', sublevel: this.byFamily, key: `${acc.family}!a!${d}` }
      ])
      return true
    }
    const ref = await this.refresh.get(d)
    if (ref !== undefined) { await this.revokeFamily(ref.family); return true }
    return false
  }

  /** Deletes every access and refresh token of a family. */
  async revokeFamily (family: string): Promise<number> {
    return await this.lock.run(family, async () => await this.revokeFamilyLocked(family))
  }

  private async revokeFamilyLocked (family: string): Promise<number> {
    const ops: BatchOp[] = []
    let profile: string | null = null
    let client: string | null = null
    for await (const key of this.byFamily.keys({ gt: `${family}!`, lt: `${family}!\xff` })) {
      const [, kind, d] = key.split('!') as [string, string, string]
      const sub = kind === 'a' ? this.access : this.refresh
      if (profile === null) {
        const rec = await sub.get(d)
        if (rec !== undefined) { profile = rec.profile_id; client = rec.client_id }
      }
      ops.push({ type: 'del', sublevel: sub, key: d }, { type: 'del', sublevel: this.byFamily, key })
    }
    if (profile !== null && client !== null) ops.push({ type: 'del', sublevel: this.grants, key: `${profile}!${client}!${family}` })
    await this.deleteAll(ops)
    return ops.length
  }

  /** "Disconnect app": every token of this user for this client stops working. */
  async revokeGrant (profileId: string, clientId: string): Promise<number> {
    const families: string[] = []
    const prefix = `${profileId}!${clientId}!`
    for await (const key of this.grants.keys({ gt: prefix, lt: `${prefix}\xff` })) families.push(key.slice(prefix.length))
    let n = 0
    for (const f of families) n += await this.revokeFamily(f)
    const leftovers: BatchOp[] = families.map(f => ({ type: 'del', sublevel: this.grants, key: `${prefix}${f}` }))
    await this.store.batch(leftovers, { sync: true })
    return n
  }

  /**
   * Every token of this member ends (their erasure): each family of theirs is revoked, so open streams close, and
   * their grants go. Returns how many access and refresh tokens were deleted.
   */
  async revokeAllOf (profileId: string): Promise<number> {
    const families = new Set<string>()
    let tokens = 0
    for await (const rec of this.access.values()) if (rec.profile_id === profileId) { families.add(rec.family); tokens++ }
    for await (const rec of this.refresh.values()) if (rec.profile_id === profileId) { families.add(rec.family); tokens++ }
    for (const f of families) await this.revokeFamily(f)
    const grants: BatchOp[] = []
    const prefix = `${profileId}!`
    for await (const key of this.grants.keys({ gt: prefix, lt: `${prefix}\xff` })) grants.push({ type: 'del', sublevel: this.grants, key })
    await this.store.batch(grants, { sync: true })
    return tokens
  }

  /** Client ids this user has granted access to (with at least one live token family). */
  async grantedClients (profileId: string): Promise<string[]> {
    const out = new Set<string>()
    const prefix = `${profileId}!`
    for await (const key of this.grants.keys({ gt: prefix, lt: `${prefix}\xff` })) {
      const client = key.slice(prefix.length).split('!')[0]
      if (client !== undefined) out.add(client)
    }
    return [...out]
  }

  /**
   * What each app the user granted access to holds now: the scopes of its live access tokens and when the newest
   * of them was issued (token use is not recorded). For the member's data export.
   */
  async grantsOf (profileId: string, now = Date.now()): Promise<Array<{ client_id: string, scopes: string[], last_issued_at: number | null }>> {
    const byClient = new Map<string, { scopes: Set<string>, last: number | null }>()
    const prefix = `${profileId}!`
    for await (const key of this.grants.keys({ gt: prefix, lt: `${prefix}\xff` })) {
      const [client, family] = key.slice(prefix.length).split('!')
      if (client === undefined || family === undefined) continue
      const entry = byClient.get(client) ?? { scopes: new Set<string>(), last: null }
      byClient.set(client, entry)
      for await (const k of this.byFamily.keys({ gt: `${family}!a!`, lt: `${family}!a!\xff` })) {
        const rec = await this.access.get(k.slice(`${family}!a!`.length))
        if (rec === undefined || rec.expires_at <= now) continue
        for (const s of rec.scopes) entry.scopes.add(s)
        entry.last = Math.max(entry.last ?? 0, rec.created_at)
      }
    }
    return [...byClient].map(([client_id, e]) => ({ client_id, scopes: [...e.scopes].sort(), last_issued_at: e.last }))
  }
}
