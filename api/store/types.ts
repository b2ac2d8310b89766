// The storage seams of api/: what the HTTP layer, OAuth, the ingest pipeline
// and the relay use of the store, as interfaces. The LevelDB classes (users.ts,
// devices.ts, clients.ts, tokens.ts, readings.ts) implement them, and
// test/conformance/store.ts states their contract: a second backend implements
// these interfaces and passes that suite. Each interface has exactly the
// methods the rest of the code calls; the records they take and answer are in
// records.ts.
import type { ReadingSource, StoredReading } from '../pipeline/reading.ts'
import type { Rollup } from './rollups.ts'
import type {
  AccessLookup, AddedDevice, ClientRecord, DeviceRecord, DeviceState, IssuedTokens, IssueRequest, LatestRecord, NewClient,
  ConsentHow, NewDevice, NewUser, RawReading, RefreshResult, Sighting, UserRecord
} from './records.ts'

export type * from './records.ts'

/**
 * One write of a batch, made by the store that writes it (a plan's ops, a
 * token pair's ops): callers pass ops along, they never build them for
 * another store. LevelDB's BatchOp (sublevel.ts) is one.
 */
export interface WriteOp { readonly type: 'put' | 'del', readonly key: string }

/**
 * Writes several ops atomically. `sync` makes the batch durable before it resolves (one fsync). Groups of readings
 * are written through a ReadingLog (reading-log.ts) instead.
 */
export interface AtomicBatch {
  batch (ops: WriteOp[], options?: { sync?: boolean }): Promise<void>
}

/**
 * An append-only, durable log of groups of readings (the LevelDB one: reading-log.ts).
 *
 * - `append(ops)` writes the ops of one group atomically: after any crash, either every op of the group is in the
 *   store or none is. It resolves once the group is durable (it survives a power cut), and only then.
 * - A rejected append stored nothing of its group.
 * - Appends take effect in the order they were called, also when they are called without waiting for each other
 *   (a later append of the same key wins); each resolves or rejects on its own.
 * - Once the backend is closed, an append rejects (nothing is stored).
 */
export interface ReadingLog {
  append (ops: readonly WriteOp[]): Promise<void>
}

/** The batch of a group of readings: readings, minute and hour rollups and latest records, written as one. */
export interface ReadingPlan {
  readonly ops: WriteOp[]
  readonly stored: StoredReading[]
  /** Readings already stored (same profile and measured_at), or repeated within the group: not written. */
  readonly duplicates: StoredReading[]
  /** Applies the plan to the store's in-memory state; call only after its ops were written. */
  commit (): void
  /** Takes in a plan made on top of this one (`plan(more, this)`), so both are written as one batch. */
  absorb (more: ReadingPlan): void
}

/** Raw readings of a profile, keyed by measured_at (ms); one reading per (profile, measured_at). */
export interface ReadingHistory {
  /** The last reading strictly before t. */
  before (profileId: string, t: number): Promise<RawReading | undefined>
  /** Readings with from <= measured_at <= to, oldest first, at most `limit` (-1: all). */
  range (profileId: string, from: number, to: number, limit?: number): AsyncIterable<RawReading>
  /** At most `limit` readings with from <= measured_at < to, oldest first (newest first with `reverse`). */
  page (profileId: string, from: number, to: number, limit: number, reverse?: boolean): Promise<RawReading[]>
}

/** Per-minute and per-hour summaries of the raw readings (rollups.ts), keyed by the bucket's start (ms). */
export interface RollupStore {
  /** Rollups of the minutes starting in [fromMinute, toMinute), oldest first. */
  rollups (profileId: string, fromMinute: number, toMinute: number): AsyncIterable<[number, Rollup]>
  /** Rollups of the hours starting in [fromHour, toHour), oldest first; each is the merge of its minutes. */
  hourRollups (profileId: string, fromHour: number, toHour: number): AsyncIterable<[number, Rollup]>
}

/** The newest reading per profile. */
export interface LatestStore {
  latest (profileId: string): Promise<LatestRecord | undefined>
  /** `latest` from memory only: null when the profile has no reading, undefined when only `latest` can tell. */
  cachedLatest (profileId: string): LatestRecord | null | undefined
}

/** Writing and pruning readings (the ingest pipeline's side). */
export interface ReadingWriter {
  /** The stream gap (ms) rollups credit streamed time with (config data.stream_gap_seconds). */
  readonly gapMs: number
  /** Plans the batch for a group of validated, owned readings. */
  plan (group: StoredReading[]): Promise<ReadingPlan>
  /** Plans on top of a plan not written yet, without store reads: undefined when a store read is needed (plan again after base). */
  plan (group: StoredReading[], base: ReadingPlan): Promise<ReadingPlan | undefined>
  /** Forgets in-memory state, after a failed batch (the pipeline) so that the next plan reads the store. */
  resetCaches (): void
  /**
   * Deletes raw readings older than rawDays and minute and hour rollups older than rollupDays,
   * at most `limit` readings and minute rollups per call; returns how many (call again while it returns `limit`).
   */
  prune (now: number, retention: { rawDays: number, rollupDays: number }, limit?: number): Promise<number>
}

/** Everything api/ does with heart-rate readings. */
export interface ReadingStore extends ReadingHistory, RollupStore, LatestStore, ReadingWriter {}

/** Users, their credentials (hashed) and the per-member switches read on the hot path. */
export interface UserStore {
  /** Throws UserExistsError when the username (case-insensitive) is taken. */
  create (input: NewUser, now?: number): Promise<UserRecord>
  /** Loads the in-memory room_hidden and ingestion_paused indexes (once at start). */
  loadRoomHidden (): Promise<void>
  roomHidden (profileId: string, now?: number): boolean
  roomPausedUntil (profileId: string, now?: number): number | null
  /** Since when displays may show the member's readings: the end of their last hidden period, 0 if they never hid. */
  roomVisibleSince (profileId: string, now?: number): number
  ingestionPaused (profileId: string, now?: number): boolean
  ingestionPause (profileId: string, now?: number): { paused: boolean, until: number | null }
  /** The notice version of the member's consent in force (synchronous), undefined when none. */
  consentVersion (profileId: string): string | undefined
  giveConsent (profileId: string, version: string, how: ConsentHow, now?: number): Promise<UserRecord | undefined>
  withdrawConsent (profileId: string, now?: number): Promise<UserRecord | undefined>
  get (profileId: string): Promise<UserRecord | undefined>
  byUsername (username: string): Promise<UserRecord | undefined>
  /** Checks a password in constant time; an unknown user costs the same as a wrong password. */
  authenticate (username: string, password: string): Promise<UserRecord | undefined>
  update (profileId: string, change: (u: UserRecord) => UserRecord): Promise<UserRecord | undefined>
  grantFeature (profileId: string, feature: string): Promise<UserRecord | undefined>
  setHomeAssistant (profileId: string, enabled: boolean): Promise<UserRecord | undefined>
  onHomeAssistantChanged (fn: (user: UserRecord) => void): () => void
  list (): Promise<UserRecord[]>
  /** Deletes the member's record and username (their erasure); the username can be created again as a new profile. */
  remove (profileId: string): Promise<UserRecord | undefined>
}

/** Devices seen in range (memory only, bounded). */
export interface DeviceSightings {
  sighting (s: Sighting): void
  readingSeen (deviceId: string, source: ReadingSource, reading: { heart_rate: number, measured_at: number, battery_percent?: number }, now?: number): void
  stateOf (deviceId: string): DeviceState | undefined
  unpaired (): DeviceState[]
}

/** Device pairings (device → user) and the MQTT credentials issued for them (hashed). */
export interface DeviceStore extends DeviceSightings {
  /** Reads the pairings into memory; call once before use. */
  load (): Promise<void>
  /** Throws InvalidDeviceIdError or DeviceExistsError; the clear-text MQTT password is answered once. */
  add (input: NewDevice, now?: number): Promise<AddedDevice>
  remove (deviceId: string): Promise<DeviceRecord | undefined>
  onRemoved (fn: (device: DeviceRecord) => void): () => void
  list (): DeviceRecord[]
  get (deviceId: string): DeviceRecord | undefined
  /** The owner of a device, from memory; with `source`, a pairing of another kind does not match. */
  ownerOf (deviceId: string, source?: ReadingSource): string | undefined
  /** Checks MQTT credentials in constant time. */
  verifyMqtt (username: string, password: string): Promise<DeviceRecord | undefined>
}

/** OAuth clients (secrets hashed, shown once). */
export interface ClientStore {
  create (input: NewClient, now?: number): Promise<{ client: ClientRecord, client_secret: string | null }>
  get (clientId: string): Promise<ClientRecord | undefined>
  /** Authenticates a confidential client in constant time. */
  authenticate (clientId: string, secret: string): Promise<ClientRecord | undefined>
  list (): Promise<ClientRecord[]>
}

/** Access and refresh tokens (digests only), grouped in grant families. */
export interface TokenStore {
  issue (req: IssueRequest, now?: number): Promise<IssuedTokens>
  /** Adds the writes of a new token pair to `ops`, for a caller that writes them with other state in one batch. */
  prepare (req: IssueRequest, ops: WriteOp[], now?: number): IssuedTokens
  lookup (token: string, now?: number): Promise<AccessLookup>
  /** `lookup` from memory only: undefined when the token is not cached (then only `lookup` can tell). */
  cachedLookup (token: string, now?: number): AccessLookup | undefined
  isLive (accessDigest: string, now?: number): Promise<boolean>
  owner (token: string): Promise<{ kind: 'access' | 'refresh', client_id: string } | undefined>
  /** Called with the digests of access tokens that stopped working, after the deletion is stored. */
  onRevoked (fn: (accessDigests: ReadonlySet<string>) => void): () => void
  rotate (refreshToken: string, clientId: string, expiresIn: number, refreshExpiresIn: number, now?: number): Promise<RefreshResult>
  revoke (token: string): Promise<boolean>
  revokeFamily (family: string): Promise<number>
  revokeGrant (profileId: string, clientId: string): Promise<number>
  grantedClients (profileId: string): Promise<string[]>
  /** Revokes every token and grant of the member (their erasure); returns how many tokens were deleted. */
  revokeAllOf (profileId: string): Promise<number>
  grantsOf (profileId: string, now?: number): Promise<Array<{ client_id: string, scopes: string[], last_issued_at: number | null }>>
}

/**
 * One backend's stores, opened together; `batch` writes the ops of any of them atomically, and `readingLog` writes
 * the ingest pipeline's groups of readings (the plans of `readings`) durably.
 */
export interface Stores extends AtomicBatch {
  readingLog: ReadingLog
  readings: ReadingStore
  users: UserStore
  devices: DeviceStore
  clients: ClientStore
  tokens: TokenStore
  close (): Promise<void>
}
