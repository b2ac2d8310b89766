// One emulated heart-rate strap: org.bluez.Device1 (+ org.bluez.Battery1) at
// /org/bluez/hciN/dev_XX_..., its Heart Rate GATT service while connected, and
// the control surface tests use (notify, dropLink, faults).
import { EventEmitter } from 'node:events'
import * as dbus from 'dbus-next'
import {
  BATTERY_SERVICE_UUID,
  encodeHeartRateMeasurement,
  HEART_RATE_SERVICE_UUID,
  uuid16,
  type HeartRateMeasurementInput
} from '../../firmware-protocol/ble.ts'
import { bluezError, changed, devicePathSegment } from './dbus-util.ts'
import { HeartRateGatt } from './gatt.ts'
import type { ObjectTree } from './object-tree.ts'

const { Interface } = dbus.interface

export interface StrapOptions {
  address: string
  name?: string
  rssi?: number
  /** Battery percentage; absent = the strap has no Battery Service. */
  battery?: number
  /** Body Sensor Location byte (0 Other, 1 Chest, 2 Wrist, ...). Default 1. */
  location?: number
}

export interface StrapFaults {
  /** Connect() answers this BlueZ error while refuseCount is undefined or > 0. */
  refuseConnect?: 'Failed' | 'InProgress' | null
  /** How many Connect() calls to refuse (each refusal decrements it). */
  refuseCount?: number
  /** Connected, but ServicesResolved never becomes true. */
  neverResolveServices?: boolean
}

/** What a strap needs from its emulator. */
export interface StrapHost {
  readonly adapterPath: string
  readonly tree: ObjectTree
  powered (): boolean
}

export class Device1 extends Interface {
  constructor (private readonly strap: EmulatedStrap) { super('org.bluez.Device1') }
  get Address (): string { return this.strap.address }
  get AddressType (): string { return 'random' }
  get Name (): string { return this.strap.name }
  get Alias (): string { return this.strap.name }
  get RSSI (): number { return this.strap.rssi }
  get UUIDs (): string[] { return this.strap.uuids() }
  get Paired (): boolean { return false }
  get Trusted (): boolean { return false }
  get Blocked (): boolean { return false }
  get Connected (): boolean { return this.strap.connected }
  get ServicesResolved (): boolean { return this.strap.servicesResolved }
  get Adapter (): string { return this.strap.host.adapterPath }
  async Connect (): Promise<void> { await this.strap.handleConnect() }
  Disconnect (): void { this.strap.handleDisconnect() }
}
Device1.configureMembers({
  properties: {
    Address: { signature: 's', access: 'read' },
    AddressType: { signature: 's', access: 'read' },
    Name: { signature: 's', access: 'read' },
    Alias: { signature: 's', access: 'read' },
    RSSI: { signature: 'n', access: 'read' },
    UUIDs: { signature: 'as', access: 'read' },
    Paired: { signature: 'b', access: 'read' },
    Trusted: { signature: 'b', access: 'read' },
    Blocked: { signature: 'b', access: 'read' },
    Connected: { signature: 'b', access: 'read' },
    ServicesResolved: { signature: 'b', access: 'read' },
    Adapter: { signature: 'o', access: 'read' }
  },
  methods: {
    Connect: { inSignature: '', outSignature: '' },
    Disconnect: { inSignature: '', outSignature: '' }
  }
})

/** BlueZ < 5.80 claims the Battery Service and shows it here instead of as GATT. */
export class Battery1 extends Interface {
  constructor (private readonly strap: EmulatedStrap) { super('org.bluez.Battery1') }
  get Percentage (): number { return this.strap.battery ?? 0 }
  get Source (): string { return 'org.bluez.Battery1' }
}
Battery1.configureMembers({
  properties: {
    Percentage: { signature: 'y', access: 'read' },
    Source: { signature: 's', access: 'read' }
  }
})

export interface EmulatedStrapEvents {
  subscribed: []
  unsubscribed: []
  connected: []
  disconnected: []
}

export class EmulatedStrap extends EventEmitter<EmulatedStrapEvents> {
  readonly address: string
  readonly path: string
  name: string
  rssi: number
  battery: number | undefined
  location: number
  faults: StrapFaults = {}
  readonly controlPointWrites: Uint8Array[] = []
  /** Connect() calls received, refused or not. */
  connectCalls = 0
  connected = false
  servicesResolved = false
  /** Exported on the bus (discovered). */
  visible = false

  private readonly device1: Device1
  private readonly battery1: Battery1
  private readonly gatt: HeartRateGatt
  private batteryExported = false
  private gattExported = false

  constructor (readonly host: StrapHost, opts: StrapOptions & { address: string }) {
    super()
    this.address = opts.address
    this.path = `${host.adapterPath}/${devicePathSegment(opts.address)}`
    this.name = opts.name ?? `HRM ${opts.address.slice(-5)}`
    this.rssi = opts.rssi ?? -60
    this.battery = opts.battery
    this.location = opts.location ?? 1
    this.device1 = new Device1(this)
    this.battery1 = new Battery1(this)
    this.gatt = new HeartRateGatt(this.path, {
      location: () => this.location,
      controlPointWrite: (value) => { this.controlPointWrites.push(value) },
      notifyChange: (on) => { this.emit(on ? 'subscribed' : 'unsubscribed') }
    })
  }

  get notifying (): boolean { return this.gatt.measurement.isNotifying() }

  uuids (): string[] {
    const list = [uuid16(0x1800), uuid16(0x1801), HEART_RATE_SERVICE_UUID, uuid16(0x180a)]
    if (this.battery !== undefined) list.push(BATTERY_SERVICE_UUID)
    return list
  }

  /** Sends raw Heart Rate Measurement bytes; true when a client was subscribed. */
  notify (bytes: Uint8Array): boolean {
    if (!this.connected) return false
    return this.gatt.measurement.notify(bytes)
  }

  sendHeartRate (m: HeartRateMeasurementInput): boolean {
    return this.notify(encodeHeartRateMeasurement(m))
  }

  setBattery (pct: number): void {
    this.battery = pct
    if (this.batteryExported) changed(this.battery1, { Percentage: pct })
  }

  setRssi (rssi: number): void {
    this.rssi = rssi
    if (this.visible) changed(this.device1, { RSSI: rssi })
  }

  /** The strap goes out of range or resets: the link drops without a Disconnect call. */
  dropLink (): void {
    this.teardownLink()
  }

  // ---- called by the emulator ----

  appear (): void {
    if (this.visible) return
    this.visible = true
    this.host.tree.add(this.path, this.device1)
  }

  vanish (): void {
    if (!this.visible) return
    this.teardownLink()
    this.visible = false
    this.host.tree.remove(this.path)
  }

  // ---- D-Bus method bodies ----

  async handleConnect (): Promise<void> {
    this.connectCalls++
    if (!this.host.powered()) throw bluezError('NotReady', 'Resource Not Ready')
    const { refuseConnect, refuseCount } = this.faults
    if (refuseConnect !== undefined && refuseConnect !== null && (refuseCount === undefined || refuseCount > 0)) {
      if (refuseCount !== undefined) this.faults.refuseCount = refuseCount - 1
      throw refuseConnect === 'Failed'
        ? bluezError('Failed', 'Software caused connection abort')
        : bluezError('InProgress', 'In Progress')
    }
    if (this.connected) throw bluezError('AlreadyConnected', 'Already Connected')
    this.connected = true
    changed(this.device1, { Connected: true })
    this.emit('connected')
    // Service discovery completes after the Connect reply, as on a real link.
    setImmediate(() => { this.resolveServices() })
  }

  handleDisconnect (): void {
    this.teardownLink()
  }

  private resolveServices (): void {
    if (!this.connected || this.faults.neverResolveServices === true) return
    for (const [path, iface] of this.gatt.objects()) this.host.tree.add(path, iface)
    this.gattExported = true
    if (this.battery !== undefined) {
      this.host.tree.add(this.path, this.battery1)
      this.batteryExported = true
    }
    this.servicesResolved = true
    changed(this.device1, { ServicesResolved: true })
  }

  private teardownLink (): void {
    if (!this.connected) return
    this.gatt.measurement.endNotify()
    if (this.servicesResolved) {
      this.servicesResolved = false
      changed(this.device1, { ServicesResolved: false })
    }
    if (this.gattExported) {
      for (const [path] of this.gatt.objects().reverse()) this.host.tree.remove(path)
      this.gattExported = false
    }
    if (this.batteryExported) {
      this.host.tree.remove(this.path, this.battery1)
      this.batteryExported = false
    }
    this.connected = false
    changed(this.device1, { Connected: false })
    this.emit('disconnected')
  }
}
