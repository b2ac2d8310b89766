// What every user store (api/store/users.ts on LevelDB, hub/store/pg-users.ts on PostgreSQL) decides the same way:
// the key a username is unique under, the record of a new user, and the changes of a record that give or withdraw
// consent or grant a feature.
import { hashSecret, newId } from './secrets.ts'
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
