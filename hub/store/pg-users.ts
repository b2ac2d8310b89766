// Users in PostgreSQL: the UserStore of api/store/users.ts, for hub instances that share one database. A member's
// switches (room hidden, ingestion paused, consent in force) are asked synchronously for every reading, so every
// instance keeps them in memory: a trigger (hub/migrations/003-store-accounts.sql) notifies `hr_users` with the
// profile id in the transaction of any change of a user row, and each instance reloads that user (RowMirror).
import type pg from 'pg'
import type { Logger } from 'pino'
import { activeConsent, roomHiddenNow, UserExistsError } from '../../api/store/users.ts'
import { dummyVerify, hashSecret, newId, verifySecret } from '../../api/store/secrets.ts'
import type { ConsentHow, NewUser, RoomHidden, UserRecord, UserStore } from '../../api/store/types.ts'
import type { PgEvents } from './pg-events.ts'
import { inTransaction } from './pg-op.ts'

const DAY = 86_400_000
/** PostgreSQL's unique_violation. */
const UNIQUE_VIOLATION = '23505'

/** What an instance keeps in memory of a table, and how it reads it back. */
export interface MirrorSource<R> {
  /** The current rows of these keys; a key missing from the answer has no row. */
  some (keys: string[]): Promise<Map<string, R>>
  /** Every row memory holds something of; a key held in memory and missing from the answer has none. */
  all (): Promise<Map<string, R>>
  /** The keys memory holds something of. */
  held (): Iterable<string>
  /** Makes memory hold the row of `key` (undefined: none). */
  apply (key: string, row: R | undefined): void
  /** True once the store is closed (its pool ended): a failed reload is not retried. */
  closed (): boolean
}

/**
 * Keeps an instance's memory of a table right while other instances write it. A notification on `channel` names a
 * changed key ('' for all); keys heard while a reload runs are reloaded together by the next one, and reloads run
 * one at a time. A reload that failed is retried; a reconnection of the notification connection reloads all.
 *
 * A reload may read a row before a write of this instance commits and answer after it: each application carries
 * a ticket, taken when its read starts (a reload) or once its write committed (`local`), and a row never replaces
 * the one applied with a later ticket.
 */
export class RowMirror<R> {
  private tickets = 0
  /** The ticket of what was last applied per key; cleared when no reload is in flight (then nothing can be stale). */
  private readonly appliedAt = new Map<string, number>()
  private queued = new Set<string>()
  private queuedAll = false
  private work: Promise<void> = Promise.resolve()
  private retry: NodeJS.Timeout | null = null
  private readonly cleanups: Array<() => void> = []
  private started = false

  constructor (private readonly source: MirrorSource<R>, private readonly events: PgEvents, private readonly channel: string, private readonly log?: Logger) {}

  /** Listens for changes, then reads every row (rejects when the read fails). */
  async start (): Promise<void> {
    if (!this.started) {
      this.started = true
      this.cleanups.push(await this.events.listen(this.channel, key => { this.changed(key) }))
      this.cleanups.push(this.events.onReconnect(() => { this.changed('') }))
    }
    // In the queue, as every reload: two reloads at once could apply each other's stale rows.
    const run = this.work.then(async () => { await this.reload(true, []) })
    this.work = run.catch(() => {})
    await run
  }

  stop (): void {
    this.started = false
    for (const off of this.cleanups.splice(0)) off()
    if (this.retry !== null) clearTimeout(this.retry)
    this.retry = null
  }

  /** A write of this instance committed: memory holds its row from now on. */
  local (key: string, row: R | undefined): void {
    this.put(key, row, ++this.tickets)
  }

  /** Resolves once every change heard so far is in memory. */
  async settled (): Promise<void> {
    let current: Promise<void>
    do { current = this.work; await current } while (current !== this.work)
  }

  private changed (key: string): void {
    if (key === '') this.queuedAll = true
    else this.queued.add(key)
    this.schedule()
  }

  private schedule (): void {
    if (!this.started) return
    this.work = this.work.then(async () => { await this.drain() })
  }

  private async drain (): Promise<void> {
    const all = this.queuedAll
    const keys = [...this.queued]
    if (!this.started || (!all && keys.length === 0)) return
    this.queuedAll = false
    this.queued = new Set()
    try {
      await this.reload(all, keys)
    } catch (err) {
      if (this.source.closed()) { this.stop(); return }
      this.log?.warn({ err: (err as Error).message, channel: this.channel }, 'reloading changed rows failed; retrying')
      this.queuedAll ||= all
      for (const k of keys) this.queued.add(k)
      this.retry ??= setTimeout(() => { this.retry = null; this.schedule() }, 1000)
      this.retry.unref()
    }
  }

  private async reload (all: boolean, keys: string[]): Promise<void> {
    const ticket = ++this.tickets
    this.appliedAt.clear()
    try {
      const rows = all ? await this.source.all() : await this.source.some(keys)
      const gone = new Set(all ? this.source.held() : keys)
      for (const [key, row] of rows) { gone.delete(key); this.put(key, row, ticket) }
      for (const key of gone) this.put(key, undefined, ticket)
    } finally {
      this.appliedAt.clear()
    }
  }

  private put (key: string, row: R | undefined, ticket: number): void {
    if ((this.appliedAt.get(key) ?? 0) > ticket) return
    this.appliedAt.set(key, ticket)
    this.source.apply(key, row)
  }
}

export interface PgUsersOptions { events: PgEvents, log?: Logger }

export class PgUsers implements UserStore {
  /** room_hidden, ingestion_paused and the consent in force of every member that has one (see Users). */
  private readonly hidden = new Map<string, RoomHidden>()
  private readonly paused = new Map<string, RoomHidden>()
  private readonly consented = new Map<string, string>()
  /** Members opted in to Home Assistant: listeners hear each change of it as memory takes it, whichever instance made it. */
  private readonly homeAssistant = new Set<string>()
  private readonly homeAssistantListeners = new Set<(user: UserRecord) => void>()
  private readonly mirror: RowMirror<UserRecord>

  constructor (private readonly pool: pg.Pool, options: PgUsersOptions) {
    this.mirror = new RowMirror<UserRecord>({
      some: async keys => await this.records('SELECT record FROM users WHERE profile_id = ANY($1)', [keys]),
      // Only members with a switch, a consent or a Home Assistant choice: memory holds nothing of the others.
      all: async () => await this.records("SELECT record FROM users WHERE record ?| ARRAY['room_hidden', 'ingestion_paused', 'consents', 'home_assistant']", []),
      held: () => new Set([...this.hidden.keys(), ...this.paused.keys(), ...this.consented.keys(), ...this.homeAssistant]),
      apply: (key, row) => { this.index(key, row) },
      closed: () => pool.ending
    }, options.events, 'hr_users', options.log)
  }

  /** The same key as Users' index of usernames (api/store/users.ts): NFC, lower case. */
  private static nameKey (username: string): string {
    return username.normalize('NFC').toLowerCase()
  }

  /** Listens for changes of users made by any instance and loads every member's switches; call once before use. */
  async load (): Promise<void> { await this.mirror.start() }

  async loadRoomHidden (): Promise<void> { await this.mirror.start() }

  /** Stops following other instances' changes. */
  stop (): void { this.mirror.stop() }

  /** Resolves once every change heard from other instances so far is in memory. */
  async settled (): Promise<void> { await this.mirror.settled() }

  private async records (sql: string, params: unknown[]): Promise<Map<string, UserRecord>> {
    const { rows } = await this.pool.query<{ record: UserRecord }>(sql, params)
    return new Map(rows.map(r => [r.record.profile_id, r.record]))
  }

  private index (profileId: string, u: UserRecord | undefined): void {
    if (u?.room_hidden === undefined) this.hidden.delete(profileId)
    else this.hidden.set(profileId, u.room_hidden)
    if (u?.ingestion_paused === undefined) this.paused.delete(profileId)
    else this.paused.set(profileId, u.ingestion_paused)
    const consent = u === undefined ? undefined : activeConsent(u)
    if (consent === undefined) this.consented.delete(profileId)
    else this.consented.set(profileId, consent.version)
    const was = this.homeAssistant.has(profileId)
    if (u?.home_assistant === true) this.homeAssistant.add(profileId)
    else this.homeAssistant.delete(profileId)
    // Once per change: this instance's own write may reach memory through a reload before it returns.
    if (u !== undefined && was !== (u.home_assistant === true)) {
      for (const fn of [...this.homeAssistantListeners]) fn(u)
    }
  }

  async create (input: NewUser, now = Date.now()): Promise<UserRecord> {
    const key = PgUsers.nameKey(input.username)
    if (await this.byUsername(input.username) !== undefined) throw new UserExistsError(input.username)
    const plan = input.premium ?? 'none'
    const expires = input.premium_expires_at !== undefined
      ? input.premium_expires_at
      : plan === 'trial' ? now + 14 * DAY : plan === 'subscription' ? now + 30 * DAY : null
    const user: UserRecord = {
      profile_id: newId(),
      username: input.username,
      password_hash: await hashSecret(input.password),
      channel: input.channel ?? input.username,
      mobile_login: false,
      premium: { plan, expires_at: expires },
      features: [],
      created_at: now
    }
    for (const k of ['display_name', 'age', 'weight_kg', 'sex', 'max_heart_rate'] as const) {
      if (input[k] !== undefined) (user as any)[k] = input[k]
    }
    // The unique username_key decides between two instances creating the same username at once.
    const { rowCount } = await this.pool.query(
      'INSERT INTO users (profile_id, username, username_key, record, created_at) VALUES ($1, $2, $3, $4, $5) ON CONFLICT (username_key) DO NOTHING',
      [user.profile_id, user.username, key, JSON.stringify(user), now])
    if (rowCount !== 1) throw new UserExistsError(input.username)
    this.mirror.local(user.profile_id, user)
    return user
  }

  /** Deletes the member's row (their erasure); the username can be taken again, by a new profile. */
  async remove (profileId: string): Promise<UserRecord | undefined> {
    const { rows } = await this.pool.query<{ record: UserRecord }>('DELETE FROM users WHERE profile_id = $1 RETURNING record', [profileId])
    const user = rows[0]?.record
    if (user !== undefined) this.mirror.local(profileId, undefined)
    return user
  }

  consentVersion (profileId: string): string | undefined {
    return this.consented.get(profileId)
  }

  async giveConsent (profileId: string, version: string, how: ConsentHow, now = Date.now()): Promise<UserRecord | undefined> {
    return await this.update(profileId, u => {
      const active = activeConsent(u)
      if (active?.version === version) return u
      if (active !== undefined) active.withdrawn_at = now
      u.consents = [...(u.consents ?? []), { version, given_at: now, how }]
      return u
    })
  }

  async withdrawConsent (profileId: string, now = Date.now()): Promise<UserRecord | undefined> {
    return await this.update(profileId, u => {
      const active = activeConsent(u)
      if (active !== undefined) active.withdrawn_at = now
      return u
    })
  }

  roomHidden (profileId: string, now = Date.now()): boolean {
    return roomHiddenNow(this.hidden.get(profileId), now) || this.ingestionPaused(profileId, now)
  }

  roomVisibleSince (profileId: string, now = Date.now()): number {
    const h = this.hidden.get(profileId)
    return h === undefined || h.until === null || h.until > now ? 0 : h.until
  }

  roomPausedUntil (profileId: string, now = Date.now()): number | null {
    const active = [this.hidden.get(profileId), this.paused.get(profileId)].filter(h => roomHiddenNow(h, now))
    if (active.length === 0 || active.some(h => h?.until == null)) return null
    return Math.max(...active.map(h => h?.until ?? 0))
  }

  ingestionPaused (profileId: string, now = Date.now()): boolean {
    return roomHiddenNow(this.paused.get(profileId), now)
  }

  ingestionPause (profileId: string, now = Date.now()): { paused: boolean, until: number | null } {
    const p = this.paused.get(profileId)
    return roomHiddenNow(p, now) ? { paused: true, until: p?.until ?? null } : { paused: false, until: null }
  }

  async get (profileId: string): Promise<UserRecord | undefined> {
    const { rows } = await this.pool.query<{ record: UserRecord }>('SELECT record FROM users WHERE profile_id = $1', [profileId])
    return rows[0]?.record
  }

  async byUsername (username: string): Promise<UserRecord | undefined> {
    const { rows } = await this.pool.query<{ record: UserRecord }>('SELECT record FROM users WHERE username_key = $1', [PgUsers.nameKey(username)])
    return rows[0]?.record
  }

  async authenticate (username: string, password: string): Promise<UserRecord | undefined> {
    const user = await this.byUsername(username)
    if (user === undefined) { await dummyVerify(password); return undefined }
    return (await verifySecret(password, user.password_hash)) ? user : undefined
  }

  /** Read, change, write under the row's lock, so that two instances' updates of one member never undo each other. */
  async update (profileId: string, change: (u: UserRecord) => UserRecord): Promise<UserRecord | undefined> {
    const next = await inTransaction(this.pool, async client => {
      const { rows } = await client.query<{ record: UserRecord }>('SELECT record FROM users WHERE profile_id = $1 FOR UPDATE', [profileId])
      const user = rows[0]?.record
      if (user === undefined) return undefined
      const changed = change(user)
      try {
        await client.query('UPDATE users SET username = $2, username_key = $3, record = $4 WHERE profile_id = $1',
          [profileId, changed.username, PgUsers.nameKey(changed.username), JSON.stringify(changed)])
      } catch (err) {
        if ((err as { code?: string }).code === UNIQUE_VIOLATION) throw new UserExistsError(changed.username)
        throw err
      }
      return changed
    })
    if (next !== undefined) this.mirror.local(profileId, next)
    return next
  }

  async grantFeature (profileId: string, feature: string): Promise<UserRecord | undefined> {
    return await this.update(profileId, u => {
      if (!u.features.includes(feature)) u.features.push(feature)
      return u
    })
  }

  /** Sets a member's Home Assistant opt-in; listeners hear the updated record when it changed (on every instance). */
  async setHomeAssistant (profileId: string, enabled: boolean): Promise<UserRecord | undefined> {
    return await this.update(profileId, u => { u.home_assistant = enabled; return u })
  }

  onHomeAssistantChanged (fn: (user: UserRecord) => void): () => void {
    this.homeAssistantListeners.add(fn)
    return () => { this.homeAssistantListeners.delete(fn) }
  }

  async list (): Promise<UserRecord[]> {
    const { rows } = await this.pool.query<{ record: UserRecord }>('SELECT record FROM users')
    return rows.map(r => r.record).sort((a, b) => a.username.localeCompare(b.username))
  }
}
