// Users in PostgreSQL: the UserStore of api/store/users.ts, for hub instances that share one database. A member's
// switches (room hidden, ingestion paused, consent in force) are asked synchronously for every reading, so every
// instance keeps them in memory: a trigger (hub/migrations/003-store-accounts.sql) notifies `hr_users` with the
// profile id in the transaction of any change of a user row, and each instance reloads that user (RowMirror, pg-mirror.ts).
import type pg from 'pg'
import type { Logger } from 'pino'
import { UserExistsError } from '../../api/store/users.ts'
import { MemberSwitches } from '../../api/store/member-switches.ts'
import { newUserRecord, usernameKey, withConsent, withFeature, withoutConsent } from '../../api/store/user-records.ts'
import { dummyVerify, verifySecret } from '../../api/store/secrets.ts'
import type { ConsentHow, NewUser, UserRecord, UserStore } from '../../api/store/types.ts'
import type { PgEvents } from './pg-events.ts'
import { RowMirror } from './pg-mirror.ts'
import { inTransaction } from './pg-op.ts'

/** PostgreSQL's unique_violation. */
const UNIQUE_VIOLATION = '23505'

export interface PgUsersOptions { events: PgEvents, log?: Logger }

export class PgUsers implements UserStore {
  /** room_hidden, ingestion_paused and the consent in force of every member that has one. */
  private readonly switches = new MemberSwitches()
  /** Members opted in to Home Assistant: listeners hear each change of it as memory takes it, whichever instance made it. */
  private readonly homeAssistant = new Set<string>()
  private readonly homeAssistantListeners = new Set<(user: UserRecord) => void>()
  private readonly mirror: RowMirror<UserRecord>

  constructor (private readonly pool: pg.Pool, options: PgUsersOptions) {
    this.mirror = new RowMirror<UserRecord>({
      some: async keys => await this.records('SELECT record FROM users WHERE profile_id = ANY($1)', [keys]),
      // Only members with a switch, a consent or a Home Assistant choice: memory holds nothing of the others.
      all: async () => await this.records("SELECT record FROM users WHERE record ?| ARRAY['room_hidden', 'ingestion_paused', 'consents', 'home_assistant']", []),
      held: () => new Set([...this.switches.held(), ...this.homeAssistant]),
      apply: (key, row) => { this.index(key, row) },
      closed: () => pool.ending
    }, options.events, 'hr_users', options.log)
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
    this.switches.index(profileId, u)
    const was = this.homeAssistant.has(profileId)
    if (u?.home_assistant === true) this.homeAssistant.add(profileId)
    else this.homeAssistant.delete(profileId)
    // Once per change: this instance's own write may reach memory through a reload before it returns.
    if (u !== undefined && was !== (u.home_assistant === true)) {
      for (const fn of [...this.homeAssistantListeners]) fn(u)
    }
  }

  async create (input: NewUser, now = Date.now()): Promise<UserRecord> {
    const key = usernameKey(input.username)
    if (await this.byUsername(input.username) !== undefined) throw new UserExistsError(input.username)
    const user = await newUserRecord(input, now)
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
    return this.switches.consentVersion(profileId)
  }

  async giveConsent (profileId: string, version: string, how: ConsentHow, now = Date.now()): Promise<UserRecord | undefined> {
    return await this.update(profileId, u => withConsent(u, version, how, now))
  }

  async withdrawConsent (profileId: string, now = Date.now()): Promise<UserRecord | undefined> {
    return await this.update(profileId, u => withoutConsent(u, now))
  }

  roomHidden (profileId: string, now = Date.now()): boolean {
    return this.switches.roomHidden(profileId, now)
  }

  roomVisibleSince (profileId: string, now = Date.now()): number {
    return this.switches.roomVisibleSince(profileId, now)
  }

  roomPausedUntil (profileId: string, now = Date.now()): number | null {
    return this.switches.roomPausedUntil(profileId, now)
  }

  ingestionPaused (profileId: string, now = Date.now()): boolean {
    return this.switches.ingestionPaused(profileId, now)
  }

  ingestionPause (profileId: string, now = Date.now()): { paused: boolean, until: number | null } {
    return this.switches.ingestionPause(profileId, now)
  }

  async get (profileId: string): Promise<UserRecord | undefined> {
    const { rows } = await this.pool.query<{ record: UserRecord }>('SELECT record FROM users WHERE profile_id = $1', [profileId])
    return rows[0]?.record
  }

  async byUsername (username: string): Promise<UserRecord | undefined> {
    const { rows } = await this.pool.query<{ record: UserRecord }>('SELECT record FROM users WHERE username_key = $1', [usernameKey(username)])
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
          [profileId, changed.username, usernameKey(changed.username), JSON.stringify(changed)])
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
    return await this.update(profileId, u => withFeature(u, feature))
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
