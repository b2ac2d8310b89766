// Device pairings in PostgreSQL: the DeviceStore of api/store/devices.ts, for hub instances that share one
// database. The pipeline resolves each reading's owner synchronously, so every instance keeps the pairings in
// memory: a trigger (hub/migrations/003-store-accounts.sql) notifies `hr_devices` with the device id in the
// transaction of any change of a pairing, and each instance reloads that pairing (RowMirror, pg-users.ts). An
// unpairing or a change of a pairing's kind or credentials, made by any instance, is told to this instance's
// onRemoved listeners once. Live state of devices (sightings) is the instance's own, in memory only.
import { timingSafeEqual } from 'node:crypto'
import type pg from 'pg'
import type { Logger } from 'pino'
import { DeviceExistsError, InvalidAntDeviceIdError, InvalidDeviceIdError, MAX_SIGHTINGS, normalizeDeviceId } from '../../api/store/devices.ts'
import { digest, newSecret, verifySecret } from '../../api/store/secrets.ts'
import type { ReadingSource } from '../../api/pipeline/reading.ts'
import type { AddedDevice, DeviceRecord, DeviceState, DeviceStore, NewDevice, Sighting } from '../../api/store/types.ts'
import { parseAntDeviceId } from '../../firmware-protocol/ant.ts'
import type { PgEvents } from './pg-events.ts'
import { RowMirror } from './pg-users.ts'

/** The ids Devices accepts (api/store/devices.ts, not exported there). */
const DEVICE_ID_RE = /^[A-Za-z0-9:_.-]{1,64}$/
/** Compared against when the username is unknown, so the answer takes the same time. */
const UNKNOWN_DEVICE = Buffer.alloc(32)

export interface PgDevicesOptions { events: PgEvents, log?: Logger }

/** Whether a device's pairing is the same one (a new name is not a new pairing; new credentials are). */
function samePairing (a: DeviceRecord, b: DeviceRecord): boolean {
  return a.profile_id === b.profile_id && a.kind === b.kind && a.created_at === b.created_at &&
    a.mqtt_username === b.mqtt_username && a.mqtt_password_hash === b.mqtt_password_hash
}

export class PgDevices implements DeviceStore {
  private readonly byId = new Map<string, DeviceRecord>()
  /** Live state of paired devices, one per pairing, updated in place. */
  private readonly live = new Map<string, DeviceState>()
  /** Live state of unpaired devices, least recently seen first, at most MAX_SIGHTINGS. */
  private readonly strangers = new Map<string, DeviceState>()
  private readonly removedListeners = new Set<(device: DeviceRecord) => void>()
  /** Per scrypt MQTT digest whose password verified: the SHA-256 of that password (as Devices.verifyMqtt). */
  private readonly scryptVerified = new Map<string, Buffer>()
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
      if (old.mqtt_password_hash !== undefined) this.scryptVerified.delete(old.mqtt_password_hash)
      const seen = this.live.get(id)
      if (seen !== undefined) { this.live.delete(id); this.seenStranger(id, seen) }
    }
    if (row !== undefined) {
      this.byId.set(id, row)
      // A device seen before it was paired keeps what was seen of it.
      const seen = this.strangers.get(id)
      if (seen !== undefined) { this.strangers.delete(id); this.live.set(id, seen) }
    }
    if (old !== undefined) for (const fn of [...this.removedListeners]) fn(old)
  }

  /** Pairs a device with a user. MQTT credentials are issued for kinds 'mqtt' and 'any'. */
  async add (input: NewDevice, now = Date.now()): Promise<AddedDevice> {
    this.ensureLoaded()
    if (!DEVICE_ID_RE.test(input.device_id)) throw new InvalidDeviceIdError(input.device_id)
    const kind = input.kind ?? 'any'
    // An ANT+ strap is known only by `ant:<device number>`; an id in that namespace is one, whatever its kind.
    if ((kind === 'ant' || input.device_id.startsWith('ant:')) && parseAntDeviceId(input.device_id) === undefined) throw new InvalidAntDeviceIdError(input.device_id)
    const id = normalizeDeviceId(input.device_id)
    const record: DeviceRecord = { device_id: id, profile_id: input.profile_id, kind, created_at: now }
    if (input.name !== undefined) record.name = input.name
    let password: string | null = null
    if (kind === 'mqtt' || kind === 'any') {
      password = newSecret(24)
      record.mqtt_username = id
      // As Devices.add: 192 random bits, so a SHA-256 digest is enough at rest.
      record.mqtt_password_hash = `sha256$${digest(password)}`
    }
    // The primary key and the unique MQTT username decide between two instances pairing one device at once.
    const { rowCount } = await this.pool.query(
      'INSERT INTO devices (device_id, profile_id, kind, mqtt_username, record, created_at) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING',
      [id, record.profile_id, kind, record.mqtt_username ?? null, JSON.stringify(record), now])
    if (rowCount !== 1) throw new DeviceExistsError(id)
    this.mirror.local(id, record)
    return { device: record, mqtt_password: password }
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
    return [...this.byId.values()].sort((a, b) => a.device_id < b.device_id ? -1 : a.device_id > b.device_id ? 1 : 0)
  }

  get (deviceId: string): DeviceRecord | undefined {
    return this.byId.get(normalizeDeviceId(deviceId))
  }

  ownerOf (deviceId: string, source?: ReadingSource): string | undefined {
    const record = this.byId.get(normalizeDeviceId(deviceId))
    if (record === undefined) return undefined
    if (source !== undefined && record.kind !== 'any' && record.kind !== source) return undefined
    return record.profile_id
  }

  /**
   * Checks MQTT credentials in constant time against the stored pairing (not memory: credentials revoked on another
   * instance end here at once); an unknown username costs the same as a known one with a `sha256$` digest.
   */
  async verifyMqtt (username: string, password: string): Promise<DeviceRecord | undefined> {
    const { rows } = await this.pool.query<{ record: DeviceRecord }>('SELECT record FROM devices WHERE mqtt_username = $1', [username])
    const record = rows[0]?.record
    const stored = record?.mqtt_password_hash
    if (record !== undefined && stored?.startsWith('scrypt$') === true) return await this.verifyScrypt(record, stored, password)
    const expected = stored?.startsWith('sha256$') === true ? Buffer.from(stored.slice(7), 'hex') : UNKNOWN_DEVICE
    const matches = timingSafeEqual(Buffer.from(digest(password), 'hex'), expected)
    return matches && expected !== UNKNOWN_DEVICE ? record : undefined
  }

  /** A scrypt digest (a pairing made elsewhere in the chain) costs scrypt until its password verified once. */
  private async verifyScrypt (record: DeviceRecord, stored: string, password: string): Promise<DeviceRecord | undefined> {
    const given = Buffer.from(digest(password), 'hex')
    const known = this.scryptVerified.get(stored)
    if (known !== undefined && timingSafeEqual(given, known)) return record
    if (!await verifySecret(password, stored)) return undefined
    // Only while the pairing in memory holds this digest (apply forgets it when the pairing ends).
    if (this.byId.get(record.device_id)?.mqtt_password_hash === stored) this.scryptVerified.set(stored, given)
    return record
  }

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

  /** A device sent a reading: remembered as its last reading, in place for a paired device (as Devices.readingSeen). */
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

  unpaired (): DeviceState[] {
    return [...this.strangers.values()].sort((a, b) => b.seen_at - a.seen_at)
  }
}

function dropUndefined<T extends object> (o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T
}
