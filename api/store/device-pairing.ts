// What every device store (api/store/devices.ts on LevelDB, hub/store/pg-devices.ts on PostgreSQL) decides the
// same way: which device ids are accepted and how they compare, the record and MQTT credentials of a new pairing,
// whose readings a pairing owns, and the constant-time check of MQTT credentials.
import { timingSafeEqual } from 'node:crypto'
import { digest, newSecret, verifySecret } from './secrets.ts'
import { apiErrorMessage } from '../error-codes.ts'
import { parseAntDeviceId } from '../../firmware-protocol/ant.ts'
import type { ReadingSource } from '../pipeline/reading.ts'
import type { AddedDevice, DeviceKind, DeviceRecord, NewDevice } from './records.ts'

export class DeviceExistsError extends Error {
  readonly code = 'HR_DEVICE_EXISTS'
  constructor (id: string) { super(apiErrorMessage('HR_DEVICE_EXISTS', { id })); this.name = 'DeviceExistsError' }
}

export class InvalidDeviceIdError extends Error {
  readonly code = 'HR_DEVICE_ID_INVALID'
  constructor (id: string) { super(apiErrorMessage('HR_DEVICE_ID_INVALID', { id: JSON.stringify(id) })); this.name = 'InvalidDeviceIdError' }
}

/** An ANT+ strap's id is not `ant:` and its device number (firmware-protocol/ant.ts). */
export class InvalidAntDeviceIdError extends Error {
  readonly code = 'HR_ANT_DEVICE_ID_INVALID'
  constructor (id: string) { super(apiErrorMessage('HR_ANT_DEVICE_ID_INVALID', { id: JSON.stringify(id) })); this.name = 'InvalidAntDeviceIdError' }
}

const DEVICE_ID_RE = /^[A-Za-z0-9:_.-]{1,64}$/
const MAC_RE = /^([0-9A-Fa-f]{2}:){5}[0-9A-Fa-f]{2}$/
/** Compared against when the username is unknown, so the answer takes the same time. */
const UNKNOWN_DEVICE = Buffer.alloc(32)

/** BLE addresses compare case-insensitively (BlueZ reports them upper case); other ids are exact. */
export function normalizeDeviceId (id: string): string {
  return MAC_RE.test(id) ? id.toUpperCase() : id
}

/**
 * The id a device of `kind` is paired under (normalized); throws InvalidDeviceIdError, or InvalidAntDeviceIdError:
 * an ANT+ strap is known only by `ant:<device number>`, and an id in that namespace is one, whatever its kind.
 */
export function checkedDeviceId (id: string, kind: DeviceKind): string {
  if (!DEVICE_ID_RE.test(id)) throw new InvalidDeviceIdError(id)
  if ((kind === 'ant' || id.startsWith('ant:')) && parseAntDeviceId(id) === undefined) throw new InvalidAntDeviceIdError(id)
  return normalizeDeviceId(id)
}

/** A new pairing of `input` (its id checked, checkedDeviceId); MQTT credentials are issued for kinds 'mqtt' and 'any'. */
export function newPairing (input: NewDevice, now: number): AddedDevice {
  const kind = input.kind ?? 'any'
  const id = checkedDeviceId(input.device_id, kind)
  const record: DeviceRecord = { device_id: id, profile_id: input.profile_id, kind, created_at: now }
  if (input.name !== undefined) record.name = input.name
  let password: string | null = null
  if (kind === 'mqtt' || kind === 'any') {
    password = newSecret(24)
    record.mqtt_username = id
    // 192 random bits, generated here: like access tokens, a SHA-256 digest is enough at rest, and a
    // reconnect storm of a whole gym costs no scrypt (16 MiB and tens of ms each on a Pi).
    record.mqtt_password_hash = `sha256$${digest(password)}`
  }
  return { device: record, mqtt_password: password }
}

/** The owner of a pairing's readings; with `source`, a pairing of another kind does not match. */
export function pairingOwner (record: DeviceRecord | undefined, source?: ReadingSource): string | undefined {
  if (record === undefined) return undefined
  if (source !== undefined && record.kind !== 'any' && record.kind !== source) return undefined
  return record.profile_id
}

/** Pairings in the order stores list them: by device id. */
export function byDeviceId (a: DeviceRecord, b: DeviceRecord): number {
  return a.device_id < b.device_id ? -1 : a.device_id > b.device_id ? 1 : 0
}

/**
 * Checks MQTT credentials in constant time; an unknown username costs the same as a known one with a `sha256$`
 * digest. A scrypt digest (a device paired elsewhere in the chain) costs scrypt until its password verified once;
 * then the SHA-256 of that password, kept in memory, answers the device's reconnections.
 */
export class MqttPasswords {
  /** Per scrypt MQTT digest whose password verified: the SHA-256 of that password. */
  private readonly scryptVerified = new Map<string, Buffer>()

  /** `current` answers the pairing the store holds now for a record: a digest is remembered only while it holds it. */
  constructor (private readonly current: (record: DeviceRecord) => DeviceRecord | undefined) {}

  /** The pairing `record` (the one of the username given; undefined when unknown) when `password` is its own. */
  async verify (record: DeviceRecord | undefined, password: string): Promise<DeviceRecord | undefined> {
    const stored = record?.mqtt_password_hash
    if (record !== undefined && stored?.startsWith('scrypt$') === true) return await this.verifyScrypt(record, stored, password)
    const expected = stored?.startsWith('sha256$') === true ? Buffer.from(stored.slice(7), 'hex') : UNKNOWN_DEVICE
    const matches = timingSafeEqual(Buffer.from(digest(password), 'hex'), expected)
    return matches && expected !== UNKNOWN_DEVICE ? record : undefined
  }

  /** A pairing with this digest ended or changed its credentials. */
  forget (stored: string | undefined): void {
    if (stored !== undefined) this.scryptVerified.delete(stored)
  }

  private async verifyScrypt (record: DeviceRecord, stored: string, password: string): Promise<DeviceRecord | undefined> {
    const given = Buffer.from(digest(password), 'hex')
    const known = this.scryptVerified.get(stored)
    if (known !== undefined && timingSafeEqual(given, known)) return record
    if (!await verifySecret(password, stored)) return undefined
    if (this.current(record)?.mqtt_password_hash === stored) this.scryptVerified.set(stored, given)
    return record
  }
}
