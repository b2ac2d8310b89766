// org.bluez.Adapter1 of the emulated controller (bluez doc/adapter-api.txt)
// and the org.bluez.AgentManager1 root object node-ble looks for.
import * as dbus from 'dbus-next'
import { uuid16 } from '../../firmware-protocol/ble.ts'
import { bluezError, changed } from './dbus-util.ts'

const { Interface } = dbus.interface

/** What the adapter interface asks of the emulator. */
export interface AdapterHost {
  startDiscovery (): void
  stopDiscovery (): void
  setPowered (on: boolean): void
  removeDevice (path: string): void
}

/** How much one emulated controller holds, as real controllers differ (docs/operator.md "Several Bluetooth adapters"). */
export interface AdapterLimits {
  /** Connect() while this many links are up answers org.bluez.Error.Failed "le-connection-abort-by-local". Default: no limit. */
  maxConnections?: number
  /** A link made while this many are up connects and subscribes, but its notifications never arrive. Default: never. */
  silentAbove?: number
}

export class Adapter1 extends Interface {
  powered = true
  discovering = false
  discoveryFilter: Record<string, unknown> = {}

  /** Limits of this controller; the emulator applies them in Device1.Connect. */
  limits: AdapterLimits = {}
  /** Exported on the bus (false while the dongle is unplugged). */
  present = true

  constructor (readonly address: string, readonly name: string, private readonly host: AdapterHost) {
    super('org.bluez.Adapter1')
  }

  get path (): string { return `/org/bluez/${this.name}` }

  get Address (): string { return this.address }
  get AddressType (): string { return 'public' }
  get Name (): string { return this.name }
  get Alias (): string { return this.name }
  get Class (): number { return 0x7c0104 }
  get Powered (): boolean { return this.powered }
  set Powered (on: boolean) { this.host.setPowered(on) }
  get Discoverable (): boolean { return false }
  get Pairable (): boolean { return true }
  get Discovering (): boolean { return this.discovering }
  get UUIDs (): string[] { return [uuid16(0x1800), uuid16(0x1801), uuid16(0x110e)] }
  get Modalias (): string { return 'usb:v1D6Bp0246d0542' }

  StartDiscovery (): void {
    if (!this.powered) throw bluezError('NotReady', 'Resource Not Ready')
    if (this.discovering) throw bluezError('InProgress', 'Operation already in progress')
    this.host.startDiscovery()
  }

  StopDiscovery (): void {
    if (!this.powered) throw bluezError('NotReady', 'Resource Not Ready')
    if (!this.discovering) throw bluezError('Failed', 'No discovery started')
    this.host.stopDiscovery()
  }

  SetDiscoveryFilter (filter: Record<string, dbus.Variant>): void {
    const plain: Record<string, unknown> = {}
    for (const [k, v] of Object.entries(filter)) plain[k] = v.value
    const transport = plain.Transport
    if (transport !== undefined && transport !== 'auto' && transport !== 'le' && transport !== 'bredr') {
      throw bluezError('InvalidArguments', 'Invalid arguments in method call')
    }
    this.discoveryFilter = plain
  }

  GetDiscoveryFilters (): string[] {
    return ['UUIDs', 'RSSI', 'Pathloss', 'Transport', 'DuplicateData', 'Discoverable', 'Pattern']
  }

  RemoveDevice (path: string): void {
    this.host.removeDevice(path)
  }

  /** Called by the emulator after it changed state. */
  update (props: { Powered?: boolean, Discovering?: boolean }): void {
    if (props.Powered !== undefined) this.powered = props.Powered
    if (props.Discovering !== undefined) this.discovering = props.Discovering
    changed(this, props)
  }
}
Adapter1.configureMembers({
  properties: {
    Address: { signature: 's', access: 'read' },
    AddressType: { signature: 's', access: 'read' },
    Name: { signature: 's', access: 'read' },
    Alias: { signature: 's', access: 'read' },
    Class: { signature: 'u', access: 'read' },
    Powered: { signature: 'b', access: 'readwrite' },
    Discoverable: { signature: 'b', access: 'read' },
    Pairable: { signature: 'b', access: 'read' },
    Discovering: { signature: 'b', access: 'read' },
    UUIDs: { signature: 'as', access: 'read' },
    Modalias: { signature: 's', access: 'read' }
  },
  methods: {
    StartDiscovery: { inSignature: '', outSignature: '' },
    StopDiscovery: { inSignature: '', outSignature: '' },
    SetDiscoveryFilter: { inSignature: 'a{sv}', outSignature: '' },
    GetDiscoveryFilters: { inSignature: '', outSignature: 'as' },
    RemoveDevice: { inSignature: 'o', outSignature: '' }
  }
})

export class AgentManager1 extends Interface {
  constructor () { super('org.bluez.AgentManager1') }
  RegisterAgent (_agent: string, _capability: string): void {}
  UnregisterAgent (_agent: string): void {}
  RequestDefaultAgent (_agent: string): void {}
}
AgentManager1.configureMembers({
  methods: {
    RegisterAgent: { inSignature: 'os', outSignature: '' },
    UnregisterAgent: { inSignature: 'o', outSignature: '' },
    RequestDefaultAgent: { inSignature: 'o', outSignature: '' }
  }
})
