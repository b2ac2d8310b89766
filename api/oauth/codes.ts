// Authorization codes (spec 3.2) and device authorization sessions (spec 3.1,
// RFC 8628), behind one interface (OAuthCodeStore) that the routes use: the
// box's LevelDB one here (OAuthState), the hub's PostgreSQL one in
// hub/store/pg-oauth.ts. Only SHA-256 digests of codes, device codes and user
// codes are stored. State changes are written with sync: true, and every change
// of one code or session runs under an in-process lock for that key, so two
// concurrent exchanges of one code cannot both succeed; a store shared by
// several processes also makes redeemCode and updateDevice conditional.
import { randomInt } from 'node:crypto'
import type { Logger } from 'pino'
import type { BatchOp, Store, Sub } from '../store/db.ts'
import type { WriteOp } from '../store/types.ts'
import { digest, newId, newSecret } from '../store/secrets.ts'
import { KeyedLock } from '../store/lock.ts'
export { KeyedLock }

export interface CodeRecord {
  client_id: string
  redirect_uri: string
  profile_id: string
  scopes: string[]
  /** S256 code challenge (RFC 7636), null when PKCE was not used. */
  code_challenge: string | null
  /** Token family the exchange issues into; a reuse revokes it. */
  family: string
  created_at: number
  expires_at: number
  used_at: number | null
}

export type DeviceStatus = 'pending' | 'approved' | 'denied' | 'issued'

export interface DeviceRecord {
  client_id: string
  scopes: string[]
  user_code_digest: string
  status: DeviceStatus
  profile_id: string | null
  created_at: number
  expires_at: number
  /** Seconds; grows by 5 on every slow_down (RFC 8628 3.5). */
  interval: number
  last_poll_at: number | null
}

/** RFC 8628 6.1: base-20 consonant alphabet, no vowels (no words), no look-alikes. */
export const USER_CODE_ALPHABET = 'BCDFGHJKLMNPQRSTVWXZ'
export const USER_CODE_LENGTH = 8

export function newUserCode (): string {
  let s = ''
  for (let i = 0; i < USER_CODE_LENGTH; i++) s += USER_CODE_ALPHABET[randomInt(USER_CODE_ALPHABET.length)]
  return s
}

/** XXXX-XXXX for display. */
export function formatUserCode (code: string): string {
  return `${code.slice(0, 4)}-${code.slice(4)}`
}

/** Uppercases and drops separators; null unless 8 letters of the alphabet remain. */
export function normalizeUserCode (input: string): string | null {
  if (typeof input !== 'string' || input.length > 32) return null
  const s = input.toUpperCase().replace(/[\s-]/g, '')
  if (s.length !== USER_CODE_LENGTH) return null
  for (const ch of s) if (!USER_CODE_ALPHABET.includes(ch)) return null
  return s
}

/** Serialises tasks of one key within this process (KeyedLock). */
export interface Locks { run: <T>(key: string, task: () => Promise<T>) => Promise<T> }

/** What the OAuth routes use of the store of codes and device sessions. */
export interface OAuthCodeStore {
  /** Changes of one code or session (key `code:<digest>`, `device:<digest>`) run one after another in this process. */
  readonly lock: Locks
  /** Stores a new authorization code and returns it (the only time it exists in clear). */
  createCode: (input: Omit<CodeRecord, 'family' | 'created_at' | 'expires_at' | 'used_at'>, ttlSeconds: number, now?: number) => Promise<string>
  getCode: (codeDigest: string) => Promise<CodeRecord | undefined>
  /**
   * Marks the code (as read, unused) used and writes `ops` (the token pair it issues) atomically with it. False,
   * and nothing written, when the code was used meanwhile (by another process sharing the store).
   */
  redeemCode: (codeDigest: string, rec: CodeRecord, ops: WriteOp[], now: number) => Promise<boolean>
  createDevice: (input: { client_id: string, scopes: string[] }, ttlSeconds: number, interval: number, now?: number) => Promise<{ device_code: string, user_code: string }>
  getDevice: (deviceDigest: string) => Promise<DeviceRecord | undefined>
  /** The device session a (normalized) user code belongs to, while the code works at /device. */
  deviceByUserCode: (userCode: string) => Promise<{ key: string, rec: DeviceRecord } | undefined>
  /**
   * Replaces the session `from` (as read) by `to`, writing `ops` atomically with it; `release` stops its user code
   * working at /device. False, and nothing written, when its status is no longer `from.status`.
   */
  updateDevice: (deviceDigest: string, from: DeviceRecord, to: DeviceRecord, o?: DeviceUpdate) => Promise<boolean>
}

export interface DeviceUpdate {
  ops?: WriteOp[]
  release?: boolean
  /** Durable before it resolves (default true; a poll's timestamp need not be). */
  sync?: boolean
}

export class OAuthState implements OAuthCodeStore {
  readonly codes: Sub<CodeRecord>
  readonly devices: Sub<DeviceRecord>
  /** digest(user code) → digest(device code) */
  readonly userCodes: Sub<string>
  readonly lock = new KeyedLock()
  private lastPrune = 0

  /** `log` receives a warning when a background prune fails (nothing else is logged here). */
  constructor (readonly store: Store, private readonly log?: Logger) {
    this.codes = store.sub<CodeRecord>('oauth_codes')
    this.devices = store.sub<DeviceRecord>('device_sessions')
    this.userCodes = store.sub<string>('device_user_codes')
  }

  /**
   * Deletes codes and device sessions that ended more than `graceMs` ago
   * (used codes are kept that long so a late reuse still revokes its tokens).
   */
  async prune (now = Date.now(), graceMs = 86_400_000): Promise<number> {
    const ops: BatchOp[] = []
    for await (const [k, v] of this.codes.iterator()) if (v.expires_at + graceMs < now) ops.push({ type: 'del', sublevel: this.codes, key: k })
    for await (const [k, v] of this.devices.iterator()) {
      if (v.expires_at + graceMs >= now) continue
      ops.push({ type: 'del', sublevel: this.devices, key: k })
      // The user code may belong to a newer session by now; only drop the index entry if it is this one's.
      if (await this.userCodes.get(v.user_code_digest) === k) ops.push({ type: 'del', sublevel: this.userCodes, key: v.user_code_digest })
    }
    await this.store.batch(ops, { sync: true })
    return ops.length
  }

  /** Runs prune() at most once an hour, in the background. */
  private maybePrune (now: number): void {
    if (now - this.lastPrune < 3_600_000) return
    this.lastPrune = now
    this.prune(now).catch((err: unknown) => { this.log?.warn({ err }, 'pruning expired OAuth codes and device sessions failed; retried in an hour') })
  }

  /** Stores a new authorization code and returns it (the only time it exists in clear). */
  async createCode (input: Omit<CodeRecord, 'family' | 'created_at' | 'expires_at' | 'used_at'>, ttlSeconds: number, now = Date.now()): Promise<string> {
    this.maybePrune(now)
    const code = newSecret(32)
    const rec: CodeRecord = { ...input, family: newId(), created_at: now, expires_at: now + Math.min(ttlSeconds, 600) * 1000, used_at: null }
    await this.store.batch([{ type: 'put', sublevel: this.codes, key: digest(code), value: rec }], { sync: true })
    return code
  }

  async getCode (codeDigest: string): Promise<CodeRecord | undefined> {
    return await this.codes.get(codeDigest)
  }

  /** Under `lock` (this store has one process), the code read unused is still unused. */
  async redeemCode (codeDigest: string, rec: CodeRecord, ops: WriteOp[], now: number): Promise<boolean> {
    await this.store.batch([this.consumeOp(codeDigest, rec, now), ...ops as BatchOp[]], { sync: true })
    return true
  }

  /** Under `lock` (this store has one process), the session read is still as read. */
  async updateDevice (deviceDigest: string, from: DeviceRecord, to: DeviceRecord, o: DeviceUpdate = {}): Promise<boolean> {
    const ops: BatchOp[] = [this.putDeviceOp(deviceDigest, to), ...(o.ops ?? []) as BatchOp[]]
    if (o.release === true) ops.push(this.releaseUserCodeOp(from))
    await this.store.batch(ops, { sync: o.sync !== false })
    return true
  }

  /** The batch op that marks a code used (joined with the token writes). */
  consumeOp (codeDigest: string, rec: CodeRecord, now = Date.now()): BatchOp {
    return { type: 'put', sublevel: this.codes, key: codeDigest, value: { ...rec, used_at: now } }
  }

  async createDevice (input: { client_id: string, scopes: string[] }, ttlSeconds: number, interval: number, now = Date.now()): Promise<{ device_code: string, user_code: string }> {
    this.maybePrune(now)
    const deviceCode = newSecret(32)
    let userCode = newUserCode()
    // 20^8 codes; a collision with a live session is rare, but never hand out one twice.
    for (let i = 0; i < 5 && await this.userCodes.get(digest(userCode)) !== undefined; i++) userCode = newUserCode()
    const rec: DeviceRecord = { client_id: input.client_id, scopes: input.scopes, user_code_digest: digest(userCode), status: 'pending', profile_id: null, created_at: now, expires_at: now + ttlSeconds * 1000, interval, last_poll_at: null }
    const d = digest(deviceCode)
    await this.store.batch([
      { type: 'put', sublevel: this.devices, key: d, value: rec },
      { type: 'put', sublevel: this.userCodes, key: rec.user_code_digest, value: d }
    ], { sync: true })
    return { device_code: deviceCode, user_code: userCode }
  }

  async getDevice (deviceDigest: string): Promise<DeviceRecord | undefined> {
    return await this.devices.get(deviceDigest)
  }

  /** The device session a (normalized) user code belongs to. */
  async deviceByUserCode (userCode: string): Promise<{ key: string, rec: DeviceRecord } | undefined> {
    const key = await this.userCodes.get(digest(userCode))
    if (key === undefined) return undefined
    const rec = await this.devices.get(key)
    return rec === undefined ? undefined : { key, rec }
  }

  putDeviceOp (deviceDigest: string, rec: DeviceRecord): BatchOp {
    return { type: 'put', sublevel: this.devices, key: deviceDigest, value: rec }
  }

  /** Once decided, the user code stops working at /device. */
  releaseUserCodeOp (rec: DeviceRecord): BatchOp {
    return { type: 'del', sublevel: this.userCodes, key: rec.user_code_digest }
  }
}
