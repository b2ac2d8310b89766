// Device pairings in PostgreSQL: the DeviceStore of api/store/devices.ts, for hub instances that share one
// database. The pipeline resolves each reading's owner synchronously, so every instance keeps the pairings in
// memory: a trigger (hub/migrations/003-store-accounts.sql) notifies `hr_devices` with the device id in the
// transaction of any change of a pairing, and each instance reloads that pairing (RowMirror, pg-mirror.ts). An
// unpairing or a change of a pairing's kind or credentials, made by any instance, is told to this instance's
// onRemoved listeners once. Live state of devices (sightings) is the instance's own, in memory only.
import type pg from 'pg'
import type { Logger } from 'pino'
import { byDeviceId, DeviceExistsError, MqttPasswords, newPairing, normalizeDeviceId, pairingOwner } from '../../api/store/device-pairing.ts'
import { DeviceSightingsMemory } from '../../api/store/device-sightings.ts'
import type { ReadingSource } from '../../api/pipeline/reading.ts'
import type { AddedDevice, DeviceRecord, DeviceState, DeviceStore, NewDevice, Sighting } from '../../api/store/types.ts'
import type { PgEvents } from './pg-events.ts'
import { RowMirror } from './pg-mirror.ts'

export interface PgDevicesOptions { events: PgEvents, log?: Logger }

/** Whether a device's pairing is the same one (a new name is not a new pairing; new credentials are). */
function samePairing (a: DeviceRecord, b: DeviceRecord): boolean {
  return a.profile_id === b.profile_id && a.kind === b.kind && a.created_at === b.created_at &&
    a.mqtt_username === b.mqtt_username && a.mqtt_password_hash === b.mqtt_password_hash
}

export class PgDevices implements DeviceStore {
  private readonly byId = new Map<string, DeviceRecord>()
  /** Live state of devices, paired or not (this instance's own). */
  private readonly sightings = new DeviceSightingsMemory(id => this.byId.has(id))
  private readonly removedListeners = new Set<(device: DeviceRecord) => void>()
  /** MQTT credentials; a scrypt digest is remembered while the pairing in memory holds it (apply forgets it when the pairing ends). */
  private readonly passwords = new MqttPasswords(record => this.byId.get(record.device_id))
  private readonly mirror: RowMirror<DeviceRecord>
  private loaded = false

  constructor (private readonly pool: pg.Pool, options: PgDevicesOptions) {
    this.mirror = new RowMirror<DeviceRecord>({
      some: async keys => await this.records('SELECT record FROM devices WHERE device_id = ANY($1)', [keys]),
      all: async () => await this.records('SELECT record FROM devices', []),
      held: () => [...this.byId.keys()],
      apply: (key, row) => { this.apply(key, row) },
      closed: () => pool.ending
    }, options.events, 'hr_devices', options.log)
  }

  /** Listens for changes of pairings made by any instance and reads every pairing; call once before use. */
  async load (): Promise<void> {
    await this.mirror.start()
    this.loaded = true
  }

  /** Stops following other instances' changes. */
  stop (): void { this.mirror.stop() }

  /** Resolves once every change heard from other instances so far is in memory. */
  async settled (): Promise<void> { await this.mirror.settled() }

  private async records (sql: string, params: unknown[]): Promise<Map<string, DeviceRecord>> {
    const { rows } = await this.pool.query<{ record: DeviceRecord }>(sql, params)
    return new Map(rows.map(r => [r.record.device_id, r.record]))
  }

  private ensureLoaded (): void {
    if (!this.loaded) throw new Error('PgDevices.load() must be called first')
  }

  /** Memory holds `row` as the pairing of `id` (undefined: unpaired); an ended pairing is told to listeners. */
  private apply (id: string, row: DeviceRecord | undefined): void {
    const old = this.byId.get(id)
    if (old !== undefined && row !== undefined && samePairing(old, row)) { this.byId.set(id, row); return }
    if (old !== undefined) {
      this.byId.delete(id)
      this.passwords.forget(old.mqtt_password_hash)
      this.sightings.unpairedNow(id)
    }
    if (row !== undefined) {
      this.byId.set(id, row)
      // A device seen before it was paired keeps what was seen of it.
      this.sightings.paired(id)
    }
    if (old !== undefined) for (const fn of [...this.removedListeners]) fn(old)
  }

  /** Pairs a device with a user. MQTT credentials are issued for kinds 'mqtt' and 'any'. */
  async add (input: NewDevice, now = Date.now()): Promise<AddedDevice> {
    this.ensureLoaded()
    const added = newPairing(input, now)
    const { device: record } = added
    const id = record.device_id
    // The primary key and the unique MQTT username decide between two instances pairing one device at once.
    const { rowCount } = await this.pool.query(
      'INSERT INTO devices (device_id, profile_id, kind, mqtt_username, record, created_at) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING',
      [id, record.profile_id, record.kind, record.mqtt_username ?? null, JSON.stringify(record), now])
    if (rowCount !== 1) throw new DeviceExistsError(id)
    this.mirror.local(id, record)
    return added
  }

  /** Unpairs a device; returns the removed record or undefined. Listeners hear about it (the broker disconnects it). */
  async remove (deviceId: string): Promise<DeviceRecord | undefined> {
    this.ensureLoaded()
    const id = normalizeDeviceId(deviceId)
    const { rows } = await this.pool.query<{ record: DeviceRecord }>('DELETE FROM devices WHERE device_id = $1 RETURNING record', [id])
    const record = rows[0]?.record
    if (record !== undefined) this.mirror.local(id, undefined)
    return record
  }

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

  ownerOf (deviceId: string, source?: ReadingSource): string | undefined {
    return pairingOwner(this.byId.get(normalizeDeviceId(deviceId)), source)
  }

  /**
   * Checks MQTT credentials in constant time (MqttPasswords) against the stored pairing (not memory: credentials
   * revoked on another instance end here at once).
   */
  async verifyMqtt (username: string, password: string): Promise<DeviceRecord | undefined> {
    const { rows } = await this.pool.query<{ record: DeviceRecord }>('SELECT record FROM devices WHERE mqtt_username = $1', [username])
    return await this.passwords.verify(rows[0]?.record, password)
  }

  sighting (s: Sighting): void { this.sightings.sighting(s) }

  readingSeen (deviceId: string, source: ReadingSource, reading: { heart_rate: number, measured_at: number, battery_percent?: number }, now = Date.now()): void {
    this.sightings.readingSeen(deviceId, source, reading, now)
  }

  stateOf (deviceId: string): DeviceState | undefined { return this.sightings.stateOf(deviceId) }

  unpaired (): DeviceState[] { return this.sightings.unpaired() }
}
