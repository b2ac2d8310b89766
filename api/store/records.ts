// The shapes of what the stores keep and answer: records, inputs and lookup
// results, shared by the storage interfaces (types.ts) and their LevelDB
// implementations (users.ts, devices.ts, clients.ts, tokens.ts, readings.ts),
// which re-export them. Data only: no code, no imports of a backend.
import type { DeviceSighting, StoredReading } from '../pipeline/reading.ts'
import type { RawValue } from '../pipeline/codec.ts'

// Users (users.ts).
export type PremiumPlan = 'none' | 'trial' | 'subscription' | 'lifetime'
export type Sex = 'male' | 'female'
export interface UserRecord {
  profile_id: string
  username: string
  password_hash: string
  channel: string
  mobile_login: boolean
  display_name?: string
  age?: number
  weight_kg?: number
  sex?: Sex
  max_heart_rate?: number
  premium: { plan: PremiumPlan, expires_at: number | null }
  /** Features granted individually (spec 2.7). */
  features: string[]
  created_at: number
  /** The member hides from room displays (docs/operator.md "Pages the box serves"): until that time (ms), or until turned off (null). */
  room_hidden?: RoomHidden
  /** Opted in to Home Assistant MQTT discovery (relay/integrations/home-assistant.ts); absent = off. */
  home_assistant?: boolean
  /** The member paused ingestion (docs/api.md "Ingestion pause"): readings are acknowledged, not stored; until that time (ms), or until turned off (null). */
  ingestion_paused?: RoomHidden
  /** Every consent to the privacy notice the member gave, oldest first (docs/operator.md "Privacy and security for gyms"). */
  consents?: ConsentRecord[]
  /** The member's latest invitation link (api/store/user-records.ts): only the SHA-256 digest of its secret is kept. */
  invitation?: InvitationRecord
}

/** An invitation to set one's own password: single use, expiring; the link's secret is kept only as its digest. */
export interface InvitationRecord { digest: string, created_at: number, expires_at: number, used_at?: number }

/** How a consent was given: by the member on /me, or recorded by an operator from a paper form. */
export type ConsentHow = 'member' | 'operator'

/** One consent: the notice version, when and how it was given, and when it was withdrawn (if it was). */
export interface ConsentRecord { version: string, given_at: number, how: ConsentHow, withdrawn_at?: number }

/** A pause since a time (ms), until a time or until turned off (null): room_hidden and ingestion_paused. */
export interface RoomHidden { since: number, until: number | null }

export interface NewUser {
  username: string
  password: string
  channel?: string
  display_name?: string
  age?: number
  weight_kg?: number
  sex?: Sex
  max_heart_rate?: number
  premium?: PremiumPlan
  /** For trial and subscription: when the plan ends (ms). Default: 14 days for a trial, 30 for a subscription. */
  premium_expires_at?: number | null
}

// Devices (devices.ts).
export type DeviceKind = 'ble' | 'serial' | 'mqtt' | 'ant' | 'any'
export interface DeviceRecord {
  device_id: string
  profile_id: string
  kind: DeviceKind
  name?: string
  /** Present for kinds 'mqtt' and 'any'. */
  mqtt_username?: string
  mqtt_password_hash?: string
  created_at: number
}

export interface NewDevice { device_id: string, profile_id: string, kind?: DeviceKind, name?: string }

/** What `add` returns: the record and, once, the clear-text MQTT password. */
export interface AddedDevice { device: DeviceRecord, mqtt_password: string | null }

/** Live state of a device the relay has seen (paired or not); kept in memory only. */
export interface DeviceState extends Sighting {
  last_reading?: { heart_rate: number, measured_at: number }
}

/** A source saw a device (the type every source reports). */
export type Sighting = DeviceSighting

// OAuth clients (clients.ts).
export interface ClientRecord {
  client_id: string
  name: string
  /** null for a public client (no secret; PKCE required). */
  secret_hash: string | null
  redirect_uris: string[]
  owner: string | null
  created_at: number
}

export interface NewClient {
  name: string
  redirect_uris: string[]
  owner?: string | null
  public?: boolean
}

// Access and refresh tokens (tokens.ts).
export type TokenFlow = 'implicit' | 'authorization_code' | 'refresh_token' | 'client_credentials' | 'device_code' | 'manual' | 'admin'

export interface AccessTokenRecord {
  client_id: string
  /** null for client-credentials tokens (spec 5.7). */
  profile_id: string | null
  scopes: string[]
  flow: TokenFlow
  family: string
  created_at: number
  expires_at: number
}

export interface RefreshTokenRecord {
  client_id: string
  profile_id: string | null
  scopes: string[]
  family: string
  access_digest: string
  created_at: number
  expires_at: number
  /** Set when rotated; a later use of this token is a replay. */
  used_at: number | null
}

export interface IssueRequest {
  client_id: string
  profile_id: string | null
  scopes: string[]
  flow: TokenFlow
  expires_in: number
  refresh_expires_in?: number
  family?: string
}

export interface IssuedTokens {
  access_token: string
  refresh_token?: string
  expires_in: number
  scope: string
  family: string
}

export type AccessLookup =
  | { ok: true, token: AccessTokenRecord, digest: string }
  | { ok: false, reason: 'not_found' | 'expired' }

export type RefreshResult =
  | { ok: true, issued: IssuedTokens, record: RefreshTokenRecord }
  | { ok: false, reason: 'not_found' | 'expired' | 'wrong_client' | 'replayed' }

// Heart-rate readings (readings.ts).
/** The latest reading of a profile. */
export interface LatestRecord { measured_at: number, heart_rate: number, source: StoredReading['source'], device_id?: string }
/** A stored reading as read back: its time and the raw value (bpm, RR, energy, contact). */
export interface RawReading extends RawValue { measured_at: number }
