// One emulated heart-rate strap: org.bluez.Device1 (+ org.bluez.Battery1) at
// /org/bluez/hciN/dev_XX_... under every adapter that hears it, its Heart Rate
// GATT service under the adapter it is connected through (a strap keeps one
// link at a time), and the control surface tests use (notify, dropLink, faults).
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
import type { Adapter1 } from './adapter.ts'
import type { ObjectTree } from './object-tree.ts'

const { Interface } = dbus.interface

export interface StrapOptions {
  address: string
  name?: string
  rssi?: number
  /** Signal strength per adapter name, where it differs from `rssi`. */
  rssiAt?: Record<string, number>
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

/** What a strap needs from its emulator: the object tree and the adapter a link would use. */
export interface StrapHost {
  readonly tree: ObjectTree
  /** The adapter a path belongs to (undefined: unplugged). */
  adapter (name: string): Adapter1 | undefined
  /** Links currently up through the adapter. */
  linksOn (name: string): number
  /** Path of the first adapter, where `strap.path` points. */
  readonly firstAdapter: string
}

export class Device1 extends Interface {
  constructor (private readonly strap: EmulatedStrap, private readonly view: StrapView) { super('org.bluez.Device1') }
  get Address (): string { return this.strap.address }
  get AddressType (): string { return 'random' }
  get Name (): string { return this.strap.name }
  get Alias (): string { return this.strap.name }
  get RSSI (): number { return this.strap.rssiOn(this.view.adapter) }
  get UUIDs (): string[] { return this.strap.uuids() }
  get Paired (): boolean { return false }
  get Trusted (): boolean { return false }
  get Blocked (): boolean { return false }
  get Connected (): boolean { return this.strap.link === this.view }
  get ServicesResolved (): boolean { return this.strap.link === this.view && this.view.servicesResolved }
  get Adapter (): string { return `/org/bluez/${this.view.adapter}` }
  async Connect (): Promise<void> { await this.strap.handleConnect(this.view) }
  Disconnect (): void { if (this.strap.link === this.view) this.strap.handleDisconnect() }
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

/** The strap as one adapter knows it: its objects under /org/bluez/<adapter>. */
export class StrapView {
  readonly path: string
  readonly device1: Device1
  readonly battery1: Battery1
  readonly gatt: HeartRateGatt
  visible = false
  servicesResolved = false
  gattExported = false
  batteryExported = false
  /** Linked while the adapter was past its silentAbove: notifications go nowhere. */
  silent = false

  constructor (readonly strap: EmulatedStrap, readonly adapter: string) {
    this.path = `/org/bluez/${adapter}/${devicePathSegment(strap.address)}`
    this.device1 = new Device1(strap, this)
    this.battery1 = new Battery1(strap)
    this.gatt = new HeartRateGatt(this.path, {
      location: () => strap.location,
      controlPointWrite: (value) => { strap.controlPointWrites.push(value) },
      notifyChange: (on) => { strap.emit(on ? 'subscribed' : 'unsubscribed') }
    })
  }
}

export interface EmulatedStrapEvents {
  subscribed: []
  unsubscribed: []
  connected: []
  disconnected: []
}

export class EmulatedStrap extends EventEmitter<EmulatedStrapEvents> {
  readonly address: string
  name: string
  rssi: number
  readonly rssiAt: Map<string, number>
  battery: number | undefined
  location: number
  faults: StrapFaults = {}
  readonly controlPointWrites: Uint8Array[] = []
  /** Connect() calls received, refused or not. */
  connectCalls = 0
  /** The view (adapter) the strap is linked through. */
  link: StrapView | undefined
  private readonly views = new Map<string, StrapView>()

  constructor (readonly host: StrapHost, opts: StrapOptions & { address: string }) {
    super()
    this.address = opts.address
    this.name = opts.name ?? `HRM ${opts.address.slice(-5)}`
    this.rssi = opts.rssi ?? -60
    this.rssiAt = new Map(Object.entries(opts.rssiAt ?? {}))
    this.battery = opts.battery
    this.location = opts.location ?? 1
  }

  /** The strap's object path under the first adapter. */
  get path (): string { return this.view(this.host.firstAdapter).path }
  get connected (): boolean { return this.link !== undefined }
  get servicesResolved (): boolean { return this.link?.servicesResolved ?? false }
  /** Exported under at least one adapter (discovered). */
  get visible (): boolean { return [...this.views.values()].some(v => v.visible) }
  get notifying (): boolean { return this.link?.gatt.measurement.isNotifying() ?? false }
  /** The adapter the strap is linked through, if any. */
  get connectedVia (): string | undefined { return this.link?.adapter }
  /** True while linked through an adapter past its silentAbove. */
  get silent (): boolean { return this.link?.silent ?? false }

  rssiOn (adapter: string): number { return this.rssiAt.get(adapter) ?? this.rssi }

  view (adapter: string): StrapView {
    let v = this.views.get(adapter)
    if (v === undefined) { v = new StrapView(this, adapter); this.views.set(adapter, v) }
    return v
  }

  /** The view at `path`, if the strap is exported there. */
  viewAt (path: string): StrapView | undefined {
    for (const v of this.views.values()) if (v.path === path && v.visible) return v
    return undefined
  }

  uuids (): string[] {
    const list = [uuid16(0x1800), uuid16(0x1801), HEART_RATE_SERVICE_UUID, uuid16(0x180a)]
    if (this.battery !== undefined) list.push(BATTERY_SERVICE_UUID)
    return list
  }

  /** Sends raw Heart Rate Measurement bytes; true when a subscribed client received them (never through a silent link). */
  notify (bytes: Uint8Array): boolean {
    const link = this.link
    if (link === undefined || link.silent) return false
    return link.gatt.measurement.notify(bytes)
  }

  sendHeartRate (m: HeartRateMeasurementInput): boolean {
    return this.notify(encodeHeartRateMeasurement(m))
  }

  setBattery (pct: number): void {
    this.battery = pct
    for (const v of this.views.values()) if (v.batteryExported) changed(v.battery1, { Percentage: pct })
  }

  /** Signal strength as every adapter hears it, or as `adapter` hears it. */
  setRssi (rssi: number, adapter?: string): void {
    if (adapter === undefined) { this.rssi = rssi; this.rssiAt.clear() } else this.rssiAt.set(adapter, rssi)
    for (const v of this.views.values()) {
      if (v.visible && (adapter === undefined || v.adapter === adapter)) changed(v.device1, { RSSI: rssi })
    }
  }

  /** The strap goes out of range or resets: the link drops without a Disconnect call. */
  dropLink (): void {
    this.teardownLink()
  }

  // ---- called by the emulator ----

  /** Discovered by `adapter`. */
  appear (adapter: string): void {
    const v = this.view(adapter)
    if (v.visible) return
    v.visible = true
    this.host.tree.add(v.path, v.device1)
  }

  /** Gone from `adapter`'s list (every adapter's when absent); a link through it drops. */
  vanish (adapter?: string): void {
    for (const v of this.views.values()) {
      if (!v.visible || (adapter !== undefined && v.adapter !== adapter)) continue
      if (this.link === v) this.teardownLink()
      v.visible = false
      this.host.tree.remove(v.path)
    }
  }

  // ---- D-Bus method bodies ----

  async handleConnect (view: StrapView): Promise<void> {
    this.connectCalls++
    const adapter = this.host.adapter(view.adapter)
    if (adapter === undefined || !adapter.powered) throw bluezError('NotReady', 'Resource Not Ready')
    const { refuseConnect, refuseCount } = this.faults
    if (refuseConnect !== undefined && refuseConnect !== null && (refuseCount === undefined || refuseCount > 0)) {
      if (refuseCount !== undefined) this.faults.refuseCount = refuseCount - 1
      throw refuseConnect === 'Failed'
        ? bluezError('Failed', 'Software caused connection abort')
        : bluezError('InProgress', 'In Progress')
    }
    if (this.link === view) throw bluezError('AlreadyConnected', 'Already Connected')
    // Linked through another adapter: the strap no longer advertises, so this attempt times out.
    if (this.link !== undefined) throw bluezError('Failed', 'le-connection-abort-by-local')
    const links = this.host.linksOn(view.adapter)
    const { maxConnections, silentAbove } = adapter.limits
    // The controller has no room for another link: BlueZ cancels the LE connection attempt.
    if (maxConnections !== undefined && links >= maxConnections) throw bluezError('Failed', 'le-connection-abort-by-local')
    view.silent = silentAbove !== undefined && links >= silentAbove
    this.link = view
    changed(view.device1, { Connected: true })
    this.emit('connected')
    // Service discovery completes after the Connect reply, as on a real link.
    setImmediate(() => { this.resolveServices(view) })
  }

  handleDisconnect (): void {
    this.teardownLink()
  }

  private resolveServices (view: StrapView): void {
    if (this.link !== view || this.faults.neverResolveServices === true) return
    for (const [path, iface] of view.gatt.objects()) this.host.tree.add(path, iface)
    view.gattExported = true
    if (this.battery !== undefined) {
      this.host.tree.add(view.path, view.battery1)
      view.batteryExported = true
    }
    view.servicesResolved = true
    changed(view.device1, { ServicesResolved: true })
  }

  private teardownLink (): void {
    const view = this.link
    if (view === undefined) return
    view.gatt.measurement.endNotify()
    if (view.servicesResolved) {
      view.servicesResolved = false
      changed(view.device1, { ServicesResolved: false })
    }
    if (view.gattExported) {
      for (const [path] of view.gatt.objects().reverse()) this.host.tree.remove(path)
      view.gattExported = false
    }
    if (view.batteryExported) {
      this.host.tree.remove(view.path, view.battery1)
      view.batteryExported = false
    }
    this.link = undefined
    view.silent = false
    changed(view.device1, { Connected: false })
    this.emit('disconnected')
  }
}
