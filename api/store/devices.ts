// The device registry: which user a device (BLE strap address, serial device
// id, MQTT device id) belongs to, the MQTT credentials the operator issued for
// it (scrypt hash only), and the live state of devices: every paired device's,
// and a bounded list of unpaired devices seen in range.
// `load()` reads the pairings into memory once so that `ownerOf` (the
// pipeline's owner resolution, on the hot path) does no I/O.
import type { Store, Sub } from './db.ts'
import { timingSafeEqual } from 'node:crypto'
import { digest, newSecret, verifySecret } from './secrets.ts'
import { KeyedLock } from './lock.ts'

/** Compared against when the username is unknown, so the answer takes the same time. */
const UNKNOWN_DEVICE = Buffer.alloc(32)
import type { ReadingSource } from '../pipeline/reading.ts'
import type { AddedDevice, DeviceKind, DeviceRecord, DeviceState, NewDevice, Sighting } from './records.ts'
import type { DeviceStore } from './types.ts'
export type { AddedDevice, DeviceKind, DeviceRecord, DeviceState, NewDevice, Sighting } from './records.ts'
import { apiErrorMessage } from '../error-codes.ts'
import { parseAntDeviceId } from '../../firmware-protocol/ant.ts'

export const DEVICE_KINDS: readonly DeviceKind[] = ['ble', 'serial', 'mqtt', 'ant', 'any']

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
/** Sightings of unpaired devices kept at most (the least recently seen are forgotten first); paired devices' states are always kept. */
export const MAX_SIGHTINGS = 512

/** BLE addresses compare case-insensitively (BlueZ reports them upper case); other ids are exact. */
export function normalizeDeviceId (id: string): string {
  return MAC_RE.test(id) ? id.toUpperCase() : id
}

export class Devices implements DeviceStore {
  private readonly sub: Sub<DeviceRecord>
  private readonly byId = new Map<string, DeviceRecord>()
  private readonly byMqttUser = new Map<string, DeviceRecord>()
  /** Live state of paired devices, one per pairing, updated in place (a reading of each device every second). */
  private readonly live = new Map<string, DeviceState>()
  /** Live state of unpaired devices, least recently seen first, at most MAX_SIGHTINGS. */
  private readonly strangers = new Map<string, DeviceState>()
  private readonly removedListeners = new Set<(device: DeviceRecord) => void>()
  private loaded = false
  /** Per scrypt MQTT digest whose password verified: the SHA-256 of that password (verifyMqtt). */
  private readonly scryptVerified = new Map<string, Buffer>()
  /** Pairing and unpairing of one device id run one at a time. */
  private readonly lock = new KeyedLock()

  constructor (private readonly store: Store) {
    this.sub = store.sub('devices')
  }

  /** Reads every pairing into memory; call once before use. */
  async load (): Promise<void> {
    this.byId.clear()
    this.byMqttUser.clear()
    for await (const [, record] of this.sub.iterator()) this.index(record)
    this.loaded = true
  }

  private index (record: DeviceRecord): void {
    this.byId.set(record.device_id, record)
    if (record.mqtt_username !== undefined) this.byMqttUser.set(record.mqtt_username, record)
    // A device seen before it was paired keeps what was seen of it.
    const seen = this.strangers.get(record.device_id)
    if (seen !== undefined) { this.strangers.delete(record.device_id); this.live.set(record.device_id, seen) }
  }

  private ensureLoaded (): void {
    if (!this.loaded) throw new Error('Devices.load() must be called first')
  }

  /** Pairs a device with a user. MQTT credentials are issued for kinds 'mqtt' and 'any'. */
  async add (input: NewDevice, now = Date.now()): Promise<AddedDevice> {
    return await this.lock.run(normalizeDeviceId(input.device_id), async () => {
      this.ensureLoaded()
      if (!DEVICE_ID_RE.test(input.device_id)) throw new InvalidDeviceIdError(input.device_id)
      const kind = input.kind ?? 'any'
      // An ANT+ strap is known only by `ant:<device number>`; an id in that namespace is one, whatever its kind.
      if ((kind === 'ant' || input.device_id.startsWith('ant:')) && parseAntDeviceId(input.device_id) === undefined) throw new InvalidAntDeviceIdError(input.device_id)
      const id = normalizeDeviceId(input.device_id)
      if (this.byId.has(id)) throw new DeviceExistsError(id)
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
      // Checked again after the await: two concurrent adds of one id must not both win.
      if (this.byId.has(id)) throw new DeviceExistsError(id)
      this.index(record)
      try {
        await this.store.batch([{ type: 'put', sublevel: this.sub, key: id, value: record }], { sync: true })
      } catch (err) {
        this.byId.delete(id)
        if (record.mqtt_username !== undefined) this.byMqttUser.delete(record.mqtt_username)
        const seen = this.live.get(id)
        if (seen !== undefined) { this.live.delete(id); this.seenStranger(id, seen) }
        throw err
      }
      return { device: record, mqtt_password: password }
    })
  }

  /**
   * Pairs a device as another store made it (the chain's hub, relay/chain-members.ts): its MQTT username and
   * password digest as given (`sha256$…` as `add` makes them, or a scrypt digest of api/store/secrets.ts), no
   * password issued here. A device paired to the same member is replaced; when its kind or MQTT credentials change,
   * listeners hear the old pairing as removed (the broker ends its connections). Throws InvalidDeviceIdError,
   * InvalidAntDeviceIdError, or DeviceExistsError when the device is another member's or its MQTT username another
   * device's.
   */
  async putChainDevice (input: DeviceRecord): Promise<DeviceRecord> {
    return await this.lock.run(normalizeDeviceId(input.device_id), async () => {
      this.ensureLoaded()
      if (!DEVICE_ID_RE.test(input.device_id)) throw new InvalidDeviceIdError(input.device_id)
      if ((input.kind === 'ant' || input.device_id.startsWith('ant:')) && parseAntDeviceId(input.device_id) === undefined) throw new InvalidAntDeviceIdError(input.device_id)
      const id = normalizeDeviceId(input.device_id)
      const current = this.byId.get(id)
      if (current !== undefined && current.profile_id !== input.profile_id) throw new DeviceExistsError(id)
      const login = input.mqtt_username === undefined ? undefined : this.byMqttUser.get(input.mqtt_username)
      if (login !== undefined && login.device_id !== id) throw new DeviceExistsError(input.mqtt_username ?? id)
      const record: DeviceRecord = { device_id: id, profile_id: input.profile_id, kind: input.kind, created_at: input.created_at }
      if (input.name !== undefined) record.name = input.name
      if (input.mqtt_username !== undefined) record.mqtt_username = input.mqtt_username
      if (input.mqtt_password_hash !== undefined) record.mqtt_password_hash = input.mqtt_password_hash
      if (current !== undefined && JSON.stringify(current) === JSON.stringify(record)) return current
      await this.store.batch([{ type: 'put', sublevel: this.sub, key: id, value: record }], { sync: true })
      if (current?.mqtt_username !== undefined) this.byMqttUser.delete(current.mqtt_username)
      if (current?.mqtt_password_hash !== undefined) this.scryptVerified.delete(current.mqtt_password_hash)
      this.index(record)
      const relogin = current !== undefined && (current.kind !== record.kind || current.mqtt_username !== record.mqtt_username || current.mqtt_password_hash !== record.mqtt_password_hash)
      if (relogin) for (const fn of this.removedListeners) fn(current)
      return record
    })
  }

  /** Unpairs a device; returns the removed record or undefined. Listeners hear about it (the broker disconnects it). */
  async remove (deviceId: string): Promise<DeviceRecord | undefined> {
    return await this.lock.run(normalizeDeviceId(deviceId), async () => {
      this.ensureLoaded()
      const id = normalizeDeviceId(deviceId)
      const record = this.byId.get(id)
      if (record === undefined) return undefined
      await this.store.batch([{ type: 'del', sublevel: this.sub, key: id }], { sync: true })
      this.byId.delete(id)
      if (record.mqtt_username !== undefined) this.byMqttUser.delete(record.mqtt_username)
      if (record.mqtt_password_hash !== undefined) this.scryptVerified.delete(record.mqtt_password_hash)
      const seen = this.live.get(id)
      if (seen !== undefined) { this.live.delete(id); this.seenStranger(id, seen) }
      for (const fn of this.removedListeners) fn(record)
      return record
    })
  }

  /** Called with each removed pairing; returns the unsubscribe function. */
  onRemoved (fn: (device: DeviceRecord) => void): () => void {
    this.removedListeners.add(fn)
    return () => { this.removedListeners.delete(fn) }
  }

  list (): DeviceRecord[] {
    this.ensureLoaded()
    return [...this.byId.values()].sort((a, b) => a.device_id < b.device_id ? -1 : a.device_id > b.device_id ? 1 : 0)
  }

  get (deviceId: string): DeviceRecord | undefined {
    return this.byId.get(normalizeDeviceId(deviceId))
  }

  /**
   * The owner of a device, from memory (no I/O). With `source`, a pairing of
   * another kind does not match (a 'ble' pairing does not own MQTT readings).
   */
  ownerOf (deviceId: string, source?: ReadingSource): string | undefined {
    const record = this.byId.get(normalizeDeviceId(deviceId))
    if (record === undefined) return undefined
    if (source !== undefined && record.kind !== 'any' && record.kind !== source) return undefined
    return record.profile_id
  }

  /**
   * Checks MQTT credentials in constant time; an unknown username costs the same as a known one with a `sha256$`
   * digest. A scrypt digest (a device paired at the chain's hub, putChainDevice) costs scrypt until its password
   * verified once; then the SHA-256 of that password, kept in memory, answers the device's reconnections.
   */
  async verifyMqtt (username: string, password: string): Promise<DeviceRecord | undefined> {
    const record = this.byMqttUser.get(username)
    const stored = record?.mqtt_password_hash
    if (record !== undefined && stored?.startsWith('scrypt$') === true) return await this.verifyScrypt(record, stored, password)
    const expected = stored?.startsWith('sha256$') === true ? Buffer.from(stored.slice(7), 'hex') : UNKNOWN_DEVICE
    const matches = timingSafeEqual(Buffer.from(digest(password), 'hex'), expected)
    return matches && expected !== UNKNOWN_DEVICE ? record : undefined
  }

  private async verifyScrypt (record: DeviceRecord, stored: string, password: string): Promise<DeviceRecord | undefined> {
    const given = Buffer.from(digest(password), 'hex')
    const known = this.scryptVerified.get(stored)
    if (known !== undefined && timingSafeEqual(given, known)) return record
    if (!await verifySecret(password, stored)) return undefined
    // Only while the pairing holds this digest (remove and putChainDevice forget it).
    if (this.byMqttUser.get(record.mqtt_username ?? '')?.mqtt_password_hash === stored) this.scryptVerified.set(stored, given)
    return record
  }

  /** A source saw a device (fed by `SourceSink.device` and by the broker). */
  sighting (s: Sighting): void {
    const id = normalizeDeviceId(s.device_id)
    if (this.byId.has(id)) {
      this.live.set(id, { ...this.live.get(id), ...dropUndefined(s), device_id: id })
      return
    }
    this.seenStranger(id, { ...this.strangers.get(id), ...dropUndefined(s), device_id: id })
  }

  /** An unpaired device's state, moved to the newest end; the least recently seen beyond MAX_SIGHTINGS are forgotten. */
  private seenStranger (id: string, state: DeviceState): void {
    this.strangers.delete(id)
    this.strangers.set(id, state)
    while (this.strangers.size > MAX_SIGHTINGS) {
      const oldest = this.strangers.keys().next().value
      if (oldest === undefined) break
      this.strangers.delete(oldest)
    }
  }

  /**
   * A device sent a reading (stored or not): remembered as its last reading. This runs for every reading, so a
   * paired device's state is updated in place: no new object and no reordering of the map (which made V8 rebuild
   * a 2,000-entry table every few dozen readings at 2,000 devices).
   */
  readingSeen (deviceId: string, source: ReadingSource, reading: { heart_rate: number, measured_at: number, battery_percent?: number }, now = Date.now()): void {
    const id = normalizeDeviceId(deviceId)
    const paired = this.byId.has(id)
    const state = paired ? this.live.get(id) : this.strangers.get(id)
    if (state === undefined) {
      this.sighting({ device_id: id, source, connected: true, seen_at: now, ...(reading.battery_percent === undefined ? {} : { battery_percent: reading.battery_percent }) })
    } else {
      if (!paired) this.seenStranger(id, state)
      state.source = source
      state.seen_at = now
      if (reading.battery_percent !== undefined) state.battery_percent = reading.battery_percent
    }
    const current = this.stateOf(id)
    if (current === undefined) return
    const last = current.last_reading
    if (last === undefined) current.last_reading = { heart_rate: reading.heart_rate, measured_at: reading.measured_at }
    else { last.heart_rate = reading.heart_rate; last.measured_at = reading.measured_at }
  }

  stateOf (deviceId: string): DeviceState | undefined {
    const id = normalizeDeviceId(deviceId)
    return this.live.get(id) ?? this.strangers.get(id)
  }

  /** Devices seen but not paired, most recently seen first. */
  unpaired (): DeviceState[] {
    return [...this.strangers.values()].sort((a, b) => b.seen_at - a.seen_at)
  }
}

function dropUndefined<T extends object> (o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T
}
