// What every user store (api/store/users.ts on LevelDB, hub/store/pg-users.ts on PostgreSQL) decides the same way:
// the key a username is unique under, the record of a new user, and the changes of a record that give or withdraw
// consent or grant a feature.
import { timingSafeEqual } from 'node:crypto'
import { digest, hashSecret, newId, newSecret } from './secrets.ts'
import { activeConsent } from './member-switches.ts'
import type { ConsentHow, NewUser, UserRecord } from './records.ts'

const DAY = 86_400_000

/** The key usernames are unique under: NFC, lower case. */
export function usernameKey (username: string): string {
  return username.normalize('NFC').toLowerCase()
}

/** A new user's record: a new profile id, the password's digest, and the defaults (a trial runs 14 days, a subscription 30). */
export async function newUserRecord (input: NewUser, now: number): Promise<UserRecord> {
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
  return user
}

/**
 * `u` with the member's consent to notice `version`, given `how`. A consent already in force for the same version
 * is kept as it was; one in force for another version is replaced (it ends when the new one starts).
 */
export function withConsent (u: UserRecord, version: string, how: ConsentHow, now: number): UserRecord {
  const active = activeConsent(u)
  if (active?.version === version) return u
  if (active !== undefined) active.withdrawn_at = now
  u.consents = [...(u.consents ?? []), { version, given_at: now, how }]
  return u
}

/** `u` with the consent in force, if any, withdrawn (nothing is deleted: erasure is separate). */
export function withoutConsent (u: UserRecord, now: number): UserRecord {
  const active = activeConsent(u)
  if (active !== undefined) active.withdrawn_at = now
  return u
}

/** `u` with `feature` granted. */
export function withFeature (u: UserRecord, feature: string): UserRecord {
  if (!u.features.includes(feature)) u.features.push(feature)
  return u
}

/** The profile fields an operator edits (and clears with null). */
export const PROFILE_FIELDS = ['display_name', 'age', 'weight_kg', 'sex', 'max_heart_rate'] as const

/** A change of profile fields: a value sets the field, null clears it, a field left out stays as it is. */
export type ProfilePatch = { [K in typeof PROFILE_FIELDS[number]]?: UserRecord[K] | null }

/** `u` with `patch` applied. */
export function withProfile (u: UserRecord, patch: ProfilePatch): UserRecord {
  for (const k of PROFILE_FIELDS) {
    const v = patch[k]
    if (v === null) delete u[k]
    else if (v !== undefined) (u as any)[k] = v
  }
  return u
}

/** How long an invitation link works. */
export const INVITATION_TTL_MS = 7 * DAY

/**
 * A new invitation on `u` (replacing the one before, whose link stops working): the token of the link is
 * `<profile_id>.<secret>`, and only the SHA-256 digest of the secret is kept (the secret is 256 random bits, so a
 * fast digest is as safe as scrypt and can be compared in constant time).
 */
export function withInvitation (u: UserRecord, now: number): { user: UserRecord, token: string } {
  const secret = newSecret(32)
  u.invitation = { digest: digest(secret), created_at: now, expires_at: now + INVITATION_TTL_MS }
  return { user: u, token: `${u.profile_id}.${secret}` }
}

/** The profile id and secret of an invitation token, or undefined when it has not the shape of one. */
export function parseInvitationToken (token: string): { profileId: string, secret: string } | undefined {
  const m = /^([A-Za-z0-9-]{1,64})\.([A-Za-z0-9_-]{43})$/.exec(token)
  return m === null || m[1] === undefined || m[2] === undefined ? undefined : { profileId: m[1], secret: m[2] }
}

/** What an invitation link is worth now: usable, unknown (never issued, or replaced by a newer one), used, or expired. */
export type InvitationState = 'valid' | 'unknown' | 'used' | 'expired'

export function invitationState (u: UserRecord | undefined, secret: string, now: number): InvitationState {
  const inv = u?.invitation
  if (inv === undefined) return 'unknown'
  const given = Buffer.from(digest(secret), 'hex')
  const kept = Buffer.from(inv.digest, 'hex')
  if (given.length !== kept.length || !timingSafeEqual(given, kept)) return 'unknown'
  if (inv.used_at !== undefined) return 'used'
  return now >= inv.expires_at ? 'expired' : 'valid'
}
