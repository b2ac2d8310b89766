// Users: the people who stream heart rate. profile_id is the public id.
import type { BatchOp, Store, Sub } from './db.ts'
import { dummyVerify, verifySecret } from './secrets.ts'
import { KeyedLock } from './lock.ts'
import { apiErrorMessage } from '../error-codes.ts'
import { MemberSwitches } from './member-switches.ts'
import { newUserRecord, usernameKey, withConsent, withFeature, withoutConsent } from './user-records.ts'

import type { ConsentHow, InvitationRecord, NewUser, PremiumPlan, Sex, UserRecord } from './records.ts'
import type { UserStore } from './types.ts'
export { activeConsent, roomHiddenNow } from './member-switches.ts'
export type { ConsentHow, ConsentRecord, NewUser, PremiumPlan, RoomHidden, Sex, UserRecord } from './records.ts'

export const PREMIUM_PLANS: readonly PremiumPlan[] = ['none', 'trial', 'subscription', 'lifetime']

export class UserExistsError extends Error {
  readonly code = 'HR_USER_EXISTS'
  constructor (username: string) { super(apiErrorMessage('HR_USER_EXISTS', { username })); this.name = 'UserExistsError' }
}

/**
 * A member's account as another store made it (the chain's hub, relay/chain-members.ts): its own profile id and
 * password digest (api/store/secrets.ts), and the profile fields.
 */
export interface ImportedUser {
  profile_id: string
  username: string
  password_hash: string
  created_at: number
  display_name?: string
  age?: number
  weight_kg?: number
  sex?: Sex
  max_heart_rate?: number
}

/** The profile fields an import sets, or clears when it leaves them out. */
const PROFILE_FIELDS = ['display_name', 'age', 'weight_kg', 'sex', 'max_heart_rate'] as const

export function premiumActive (user: UserRecord, now = Date.now()): boolean {
  const { plan, expires_at: exp } = user.premium
  if (plan === 'none') return false
  if (plan === 'lifetime') return true
  return exp !== null && exp > now
}

/** The record without its secrets: no password digest, and of an invitation only its times. */
export function publicUser (u: UserRecord): Omit<UserRecord, 'password_hash' | 'invitation'> & { invitation?: Omit<InvitationRecord, 'digest'> } {
  const { password_hash: _hidden, invitation, ...rest } = u
  if (invitation === undefined) return rest
  const { digest: _secret, ...times } = invitation
  return { ...rest, invitation: times }
}

/** Whether the member's username or display name contains `q` (case-insensitive); an empty `q` matches everyone. */
export function memberMatches (u: UserRecord, q: string): boolean {
  const needle = q.trim().toLowerCase()
  return needle === '' || u.username.toLowerCase().includes(needle) || (u.display_name ?? '').toLowerCase().includes(needle)
}

export class Users implements UserStore {
  private readonly byId: Sub<UserRecord>
  private readonly byName: Sub<string>
  /** Per username (create) and per profile (update): read, decide, write, one at a time. */
  private readonly lock = new KeyedLock()
  /** room_hidden, ingestion_paused and the consent in force of every member, in memory: asked for each reading. */
  private readonly switches = new MemberSwitches()

  constructor (private readonly store: Store) {
    this.byId = store.sub<UserRecord>('users')
    this.byName = store.sub<string>('usernames')
  }

  async create (input: NewUser, now = Date.now()): Promise<UserRecord> {
    return await this.lock.run(`name:${usernameKey(input.username)}`, async () => {
      if (await this.byName.get(usernameKey(input.username)) !== undefined) throw new UserExistsError(input.username)
      const user = await newUserRecord(input, now)
      // Re-check right before the atomic write: scrypt above yields the event loop.
      if (await this.byName.get(usernameKey(input.username)) !== undefined) throw new UserExistsError(input.username)
      await this.store.batch([
        { type: 'put', sublevel: this.byId, key: user.profile_id, value: user },
        { type: 'put', sublevel: this.byName, key: usernameKey(user.username), value: user.profile_id }
      ], { sync: true })
      return user
    })
  }

  /**
   * Creates the member `input` describes with its profile id and password digest (no password is chosen here), or,
   * when that profile exists, sets its username, password digest and profile fields to those given (a profile field
   * left out is cleared) and keeps what the box holds beside them: switches, consents, premium, features, channel.
   * Throws UserExistsError when the username (case-insensitive) is another profile's.
   */
  async putChainMember (input: ImportedUser): Promise<{ user: UserRecord, created: boolean }> {
    return await this.lock.run(`user:${input.profile_id}`, async () => {
      const name = usernameKey(input.username)
      return await this.lock.run(`name:${name}`, async () => {
        const holder = await this.byName.get(name)
        if (holder !== undefined && holder !== input.profile_id) throw new UserExistsError(input.username)
        const current = await this.byId.get(input.profile_id)
        const next: UserRecord = current === undefined
          ? { profile_id: input.profile_id, username: input.username, password_hash: input.password_hash, channel: input.username, mobile_login: false, premium: { plan: 'none', expires_at: null }, features: [], created_at: input.created_at }
          : { ...structuredClone(current), username: input.username, password_hash: input.password_hash, created_at: input.created_at }
        // A channel that followed the username follows a rename too.
        if (current !== undefined && current.channel === current.username) next.channel = input.username
        for (const k of PROFILE_FIELDS) {
          if (input[k] === undefined) delete next[k]
          else (next as any)[k] = input[k]
        }
        const ops: BatchOp[] = [
          { type: 'put', sublevel: this.byId, key: next.profile_id, value: next },
          { type: 'put', sublevel: this.byName, key: name, value: next.profile_id }
        ]
        const oldName = current === undefined ? undefined : usernameKey(current.username)
        if (oldName !== undefined && oldName !== name && await this.byName.get(oldName) === next.profile_id) ops.push({ type: 'del', sublevel: this.byName, key: oldName })
        await this.store.batch(ops, { sync: true })
        this.index(next)
        return { user: next, created: current === undefined }
      })
    })
  }

  /**
   * Deletes the member's record and username (a member's erasure, api/privacy/erase.ts) and forgets their switches;
   * the username can be taken again, by a new profile. Returns the record deleted, or undefined.
   */
  async remove (profileId: string): Promise<UserRecord | undefined> {
    return await this.lock.run(`user:${profileId}`, async () => {
      const user = await this.byId.get(profileId)
      if (user === undefined) return undefined
      return await this.lock.run(`name:${usernameKey(user.username)}`, async () => {
        await this.store.batch([
          { type: 'del', sublevel: this.byId, key: profileId },
          { type: 'del', sublevel: this.byName, key: usernameKey(user.username) }
        ], { sync: true })
        this.switches.index(profileId, undefined)
        return user
      })
    })
  }

  /** Loads the in-memory room_hidden and ingestion_paused indexes (once at start, before readings and room streams flow). */
  async loadRoomHidden (): Promise<void> {
    this.switches.clear()
    for await (const u of this.byId.values()) this.index(u)
  }

  private index (u: UserRecord): void {
    this.switches.index(u.profile_id, u)
  }

  /** The notice version the member consented to and has not withdrawn (synchronous; see loadRoomHidden). */
  consentVersion (profileId: string): string | undefined {
    return this.switches.consentVersion(profileId)
  }

  /**
   * Records the member's consent to notice `version`, given `how`. A consent already in force for the same version
   * is kept as it was; one in force for another version is replaced (it ends when the new one starts).
   */
  async giveConsent (profileId: string, version: string, how: ConsentHow, now = Date.now()): Promise<UserRecord | undefined> {
    return await this.update(profileId, u => withConsent(u, version, how, now))
  }

  /** Withdraws the consent in force, if any (nothing is deleted: erasure is separate). */
  async withdrawConsent (profileId: string, now = Date.now()): Promise<UserRecord | undefined> {
    return await this.update(profileId, u => withoutConsent(u, now))
  }

  /**
   * Whether room displays show the member as paused now (synchronous; see loadRoomHidden): the member hides
   * from room displays, or paused ingestion (no readings flow, so displays say "paused" rather than go stale).
   */
  roomHidden (profileId: string, now = Date.now()): boolean {
    return this.switches.roomHidden(profileId, now)
  }

  /**
   * Since when room displays may show the member's readings: the end of their last hidden period (shown again, or
   * a timed hide that ran out), 0 when they never hid. A reading measured before it is never shown on a display,
   * so showing oneself again does not reveal the bpm, trend or calories of the hidden time.
   */
  roomVisibleSince (profileId: string, now = Date.now()): number {
    return this.switches.roomVisibleSince(profileId, now)
  }

  /** Until when displays show the member as paused: null for "until turned off" (or not paused). */
  roomPausedUntil (profileId: string, now = Date.now()): number | null {
    return this.switches.roomPausedUntil(profileId, now)
  }

  /** Whether the member's ingestion is paused now (synchronous; the ingest pipeline asks for every reading). */
  ingestionPaused (profileId: string, now = Date.now()): boolean {
    return this.switches.ingestionPaused(profileId, now)
  }

  /** The member's ingestion pause as the API shows it. */
  ingestionPause (profileId: string, now = Date.now()): { paused: boolean, until: number | null } {
    return this.switches.ingestionPause(profileId, now)
  }

  async get (profileId: string): Promise<UserRecord | undefined> {
    return await this.byId.get(profileId)
  }

  async byUsername (username: string): Promise<UserRecord | undefined> {
    const id = await this.byName.get(usernameKey(username))
    return id === undefined ? undefined : await this.byId.get(id)
  }

  /** Checks a password in constant time; an unknown user costs the same as a wrong password. */
  async authenticate (username: string, password: string): Promise<UserRecord | undefined> {
    const user = await this.byUsername(username)
    if (user === undefined) { await dummyVerify(password); return undefined }
    return (await verifySecret(password, user.password_hash)) ? user : undefined
  }

  async update (profileId: string, change: (u: UserRecord) => UserRecord): Promise<UserRecord | undefined> {
    return await this.lock.run(`user:${profileId}`, async () => {
      const user = await this.byId.get(profileId)
      if (user === undefined) return undefined
      const next = change(structuredClone(user))
      await this.store.batch([{ type: 'put', sublevel: this.byId, key: profileId, value: next }], { sync: true })
      this.index(next)
      return next
    })
  }

  async grantFeature (profileId: string, feature: string): Promise<UserRecord | undefined> {
    return await this.update(profileId, u => withFeature(u, feature))
  }

  private readonly homeAssistantListeners = new Set<(user: UserRecord) => void>()

  /** Sets a member's Home Assistant opt-in; listeners hear the updated record. */
  async setHomeAssistant (profileId: string, enabled: boolean): Promise<UserRecord | undefined> {
    const updated = await this.update(profileId, u => { u.home_assistant = enabled; return u })
    if (updated !== undefined) for (const fn of this.homeAssistantListeners) fn(updated)
    return updated
  }

  /** Called after each change of a Home Assistant opt-in; returns the unsubscribe function. */
  onHomeAssistantChanged (fn: (user: UserRecord) => void): () => void {
    this.homeAssistantListeners.add(fn)
    return () => { this.homeAssistantListeners.delete(fn) }
  }

  async list (): Promise<UserRecord[]> {
    const out: UserRecord[] = []
    for await (const v of this.byId.values()) out.push(v)
    return out.sort((a, b) => a.username.localeCompare(b.username))
  }
}
