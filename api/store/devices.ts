// The device registry: which user a device (BLE strap address, serial device
// id, MQTT device id) belongs to, the MQTT credentials the operator issued for
// it (scrypt hash only), and the live state of devices: every paired device's,
// and a bounded list of unpaired devices seen in range.
// `load()` reads the pairings into memory once so that `ownerOf` (the
// pipeline's owner resolution, on the hot path) does no I/O.
import type { Store, Sub } from './db.ts'
import { KeyedLock } from './lock.ts'
import { byDeviceId, checkedDeviceId, DeviceExistsError, MqttPasswords, newPairing, normalizeDeviceId, pairingOwner } from './device-pairing.ts'
import { DeviceSightingsMemory } from './device-sightings.ts'
import type { ReadingSource } from '../pipeline/reading.ts'
import type { AddedDevice, DeviceKind, DeviceRecord, DeviceState, NewDevice, Sighting } from './records.ts'
import type { DeviceStore } from './types.ts'
export type { AddedDevice, DeviceKind, DeviceRecord, DeviceState, NewDevice, Sighting } from './records.ts'
export { DeviceExistsError, InvalidAntDeviceIdError, InvalidDeviceIdError, normalizeDeviceId } from './device-pairing.ts'
export { MAX_SIGHTINGS } from './device-sightings.ts'

export const DEVICE_KINDS: readonly DeviceKind[] = ['ble', 'serial', 'mqtt', 'ant', 'any']

export class Devices implements DeviceStore {
  private readonly sub: Sub<DeviceRecord>
  private readonly byId = new Map<string, DeviceRecord>()
  private readonly byMqttUser = new Map<string, DeviceRecord>()
  /** Live state of devices, paired or not. */
  private readonly sightings = new DeviceSightingsMemory(id => this.byId.has(id))
  private readonly removedListeners = new Set<(device: DeviceRecord) => void>()
  private loaded = false
  /** MQTT credentials; a scrypt digest is remembered while the pairing of its username holds it. */
  private readonly passwords = new MqttPasswords(record => this.byMqttUser.get(record.mqtt_username ?? ''))
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
    this.sightings.paired(record.device_id)
  }

  private ensureLoaded (): void {
    if (!this.loaded) throw new Error('Devices.load() must be called first')
  }

  /** Pairs a device with a user. MQTT credentials are issued for kinds 'mqtt' and 'any'. */
  async add (input: NewDevice, now = Date.now()): Promise<AddedDevice> {
    return await this.lock.run(normalizeDeviceId(input.device_id), async () => {
      this.ensureLoaded()
      const added = newPairing(input, now)
      const record = added.device
      const id = record.device_id
      if (this.byId.has(id)) throw new DeviceExistsError(id)
      this.index(record)
      try {
        await this.store.batch([{ type: 'put', sublevel: this.sub, key: id, value: record }], { sync: true })
      } catch (err) {
        this.byId.delete(id)
        if (record.mqtt_username !== undefined) this.byMqttUser.delete(record.mqtt_username)
        this.sightings.unpairedNow(id)
        throw err
      }
      return added
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
      const id = checkedDeviceId(input.device_id, input.kind)
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
      this.passwords.forget(current?.mqtt_password_hash)
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
      this.passwords.forget(record.mqtt_password_hash)
      this.sightings.unpairedNow(id)
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
    return [...this.byId.values()].sort(byDeviceId)
  }

  get (deviceId: string): DeviceRecord | undefined {
    return this.byId.get(normalizeDeviceId(deviceId))
  }

  /**
   * The owner of a device, from memory (no I/O). With `source`, a pairing of
   * another kind does not match (a 'ble' pairing does not own MQTT readings).
   */
  ownerOf (deviceId: string, source?: ReadingSource): string | undefined {
    return pairingOwner(this.byId.get(normalizeDeviceId(deviceId)), source)
  }

  /**
   * Checks MQTT credentials in constant time (MqttPasswords); a scrypt digest (a device paired at the chain's hub,
   * putChainDevice) costs scrypt until its password verified once.
   */
  async verifyMqtt (username: string, password: string): Promise<DeviceRecord | undefined> {
    return await this.passwords.verify(this.byMqttUser.get(username), password)
  }

  /** A source saw a device (fed by `SourceSink.device` and by the broker). */
  sighting (s: Sighting): void { this.sightings.sighting(s) }

  /** A device sent a reading (stored or not): remembered as its last reading. */
  readingSeen (deviceId: string, source: ReadingSource, reading: { heart_rate: number, measured_at: number, battery_percent?: number }, now = Date.now()): void {
    this.sightings.readingSeen(deviceId, source, reading, now)
  }

  stateOf (deviceId: string): DeviceState | undefined { return this.sightings.stateOf(deviceId) }

  /** Devices seen but not paired, most recently seen first. */
  unpaired (): DeviceState[] { return this.sightings.unpaired() }
}
