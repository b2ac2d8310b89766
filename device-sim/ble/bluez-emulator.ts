// A BlueZ emulator on a (private) D-Bus: owns `org.bluez` and exports the
// objects bluetoothd exports (doc/adapter-api.txt, device-api.txt,
// gatt-api.txt, battery-api.txt) so node-ble and the relay talk to it as to a
// real controller. Only the radio is fake.
import * as dbus from 'dbus-next'
import { Adapter1, AgentManager1, type AdapterLimits } from './adapter.ts'
import { BLUEZ, BLUEZ_ERRORS, devicePathSegment, normaliseAddress } from './dbus-util.ts'
import { EmulatedStrap, type StrapOptions } from './device.ts'
import { ObjectTree } from './object-tree.ts'

export type { StrapOptions, StrapFaults } from './device.ts'
export type { AdapterLimits } from './adapter.ts'
export { EmulatedStrap } from './device.ts'

export interface BluezEmulatorOptions {
  busAddress: string
  /** Adapter name, default 'hci0'; with `adapters` > 1 the others follow it (hci1, hci2, ...). */
  adapter?: string
  /** Address of the first adapter, default '00:1A:7D:DA:71:13'; the others count up from it. */
  adapterAddress?: string
  /** How many adapters (controllers), default 1. */
  adapters?: number
  /** The adapters by name (instead of `adapter` and `adapters`). */
  adapterNames?: string[]
  /** Limits every adapter starts with (setLimits changes one). */
  limits?: AdapterLimits
}

export class BluezEmulator {
  readonly tree: ObjectTree
  /** Errors of the emulator's own bus connection (e.g. the daemon went away). */
  readonly busErrors: Error[] = []
  private readonly adapters = new Map<string, Adapter1>()
  private readonly straps = new Map<string, EmulatedStrap>()
  private readonly firstAdapter: string
  private stopped = false

  private constructor (private readonly bus: dbus.MessageBus, names: string[], addresses: string[], limits: AdapterLimits) {
    this.tree = new ObjectTree(bus)
    bus.addMethodHandler(this.unknownObjectHandler)
    this.tree.add('/org/bluez', new AgentManager1())
    this.firstAdapter = names[0] ?? 'hci0'
    names.forEach((name, i) => {
      const adapter = new Adapter1(addresses[i] ?? '00:1A:7D:DA:71:13', name, {
        startDiscovery: () => { this.setDiscovering(name, true) },
        stopDiscovery: () => { this.setDiscovering(name, false) },
        setPowered: (on) => { if (on) this.powerOn(name); else this.powerOff(name) },
        removeDevice: (path) => { this.removeDevicePath(name, path) }
      })
      adapter.limits = { ...limits }
      this.adapters.set(name, adapter)
      this.tree.add(adapter.path, adapter)
    })
  }

  static async start (opts: BluezEmulatorOptions): Promise<BluezEmulator> {
    const bus = dbus.sessionBus({ busAddress: opts.busAddress })
    const errors: Error[] = []
    bus.on('error', (err: unknown) => { errors.push(err instanceof Error ? err : new Error(String(err))) })
    const reply = await Promise.race([
      bus.requestName(BLUEZ, dbus.NameFlag.DO_NOT_QUEUE),
      new Promise<never>((_resolve, reject) => {
        const timer = setTimeout(() => { reject(new Error(`cannot reach the bus at ${opts.busAddress}: ${errors.map(String).join('; ')}`)) }, 10_000)
        timer.unref()
      })
    ]).catch((err: unknown) => { bus.disconnect(); throw err })
    if (reply !== dbus.RequestNameReply.PRIMARY_OWNER) {
      bus.disconnect()
      throw new Error(`could not own ${BLUEZ} on ${opts.busAddress} (reply ${reply})`)
    }
    const first = opts.adapter ?? 'hci0'
    const match = /^(.*?)(\d+)$/.exec(first)
    const count = opts.adapters ?? 1
    const names = opts.adapterNames ?? Array.from({ length: count }, (_, i) =>
      i === 0 ? first : match === null ? `${first}-${i}` : `${match[1] ?? ''}${Number(match[2]) + i}`)
    const base = opts.adapterAddress ?? '00:1A:7D:DA:71:13'
    const addresses = names.map((_, i) => base.slice(0, -2) + ((parseInt(base.slice(-2), 16) + i) & 0xff).toString(16).toUpperCase().padStart(2, '0'))
    const emulator = new BluezEmulator(bus, names, addresses, opts.limits ?? {})
    emulator.busErrors.push(...errors)
    bus.on('error', (err: unknown) => { emulator.busErrors.push(err instanceof Error ? err : new Error(String(err))) })
    return emulator
  }

  /** The first adapter (the only one unless `adapters` was given). */
  get adapter (): Adapter1 { return this.adapterNamed(this.firstAdapter) }
  get adapterPath (): string { return this.adapter.path }
  /** Every adapter's name, plugged in or not. */
  get adapterNames (): string[] { return [...this.adapters.keys()] }
  get powered (): boolean { return this.adapter.powered }
  get discovering (): boolean { return this.adapter.discovering }

  adapterNamed (name: string): Adapter1 {
    const adapter = this.adapters.get(name)
    if (adapter === undefined) throw new Error(`no adapter ${name}; the emulator has ${this.adapterNames.join(', ')}`)
    return adapter
  }

  /** Changes an adapter's limits; links already up keep the state they were made with. */
  setLimits (name: string, limits: AdapterLimits): void {
    this.adapterNamed(name).limits = { ...limits }
  }

  /** Links currently up through `name`. */
  linksOn (name: string): number {
    let n = 0
    for (const strap of this.straps.values()) if (strap.connectedVia === name) n++
    return n
  }

  /** A strap starts advertising; it appears on the bus once discovery runs, under every adapter that discovers. */
  addStrap (opts: StrapOptions): EmulatedStrap {
    const address = normaliseAddress(opts.address)
    if (this.straps.has(address)) throw new Error(`strap ${address} already exists`)
    const strap = new EmulatedStrap({
      tree: this.tree,
      firstAdapter: this.firstAdapter,
      adapter: (name) => { const a = this.adapters.get(name); return a?.present === true ? a : undefined },
      linksOn: (name) => this.linksOn(name)
    }, { ...opts, address })
    this.straps.set(address, strap)
    for (const adapter of this.adapters.values()) if (adapter.present && adapter.discovering) strap.appear(adapter.name)
    return strap
  }

  strap (address: string): EmulatedStrap | undefined {
    return this.straps.get(normaliseAddress(address))
  }

  /** The strap goes away: its link drops and its objects are removed (InterfacesRemoved). */
  removeStrap (address: string): void {
    const key = normaliseAddress(address)
    const strap = this.straps.get(key)
    if (strap === undefined) return
    strap.vanish()
    this.straps.delete(key)
  }

  /** The controller is powered off (rfkill, `bluetoothctl power off`): links drop, discovery stops. */
  powerOff (name = this.firstAdapter): void {
    const adapter = this.adapterNamed(name)
    if (!adapter.powered) return
    for (const strap of this.straps.values()) if (strap.connectedVia === name) strap.dropLink()
    if (adapter.discovering) adapter.update({ Discovering: false })
    adapter.update({ Powered: false })
  }

  powerOn (name = this.firstAdapter): void {
    const adapter = this.adapterNamed(name)
    if (adapter.powered) return
    adapter.update({ Powered: true })
  }

  /**
   * The dongle is unplugged: its links drop, its devices and then its
   * Adapter1 leave the bus (InterfacesRemoved), as bluetoothd does.
   */
  unplugAdapter (name: string): void {
    const adapter = this.adapterNamed(name)
    if (!adapter.present) return
    for (const strap of this.straps.values()) strap.vanish(name)
    adapter.present = false
    adapter.powered = true
    adapter.discovering = false
    this.tree.remove(adapter.path)
  }

  /** The dongle is plugged back in: Adapter1 is back, powered, not discovering, with no devices. */
  plugAdapter (name: string): void {
    const adapter = this.adapterNamed(name)
    if (adapter.present) return
    adapter.present = true
    this.tree.add(adapter.path, adapter)
  }

  async stop (): Promise<void> {
    if (this.stopped) return
    this.stopped = true
    for (const strap of this.straps.values()) strap.dropLink()
    this.straps.clear()
    this.bus.removeMethodHandler(this.unknownObjectHandler)
    try { await this.bus.releaseName(BLUEZ) } catch { /* the bus may be gone already */ }
    this.bus.disconnect()
  }

  private setDiscovering (name: string, on: boolean): void {
    const adapter = this.adapterNamed(name)
    adapter.update({ Discovering: on })
    if (on) for (const strap of this.straps.values()) strap.appear(name)
  }

  private removeDevicePath (name: string, path: string): void {
    for (const strap of this.straps.values()) {
      if (strap.viewAt(path) !== undefined) {
        // Removed from this adapter's list; it shows up again on its next discovery.
        strap.vanish(name)
        return
      }
    }
    throw new dbus.DBusError(BLUEZ_ERRORS.DoesNotExist, 'Does Not Exist')
  }

  /**
   * BlueZ (libdbus) answers calls on paths it does not export with
   * UnknownObject, and Properties calls for an interface the object lacks
   * with InvalidArgs; dbus-next would answer differently, so answer first.
   */
  private readonly unknownObjectHandler = (msg: dbus.Message): boolean => {
    const path = msg.path
    if (typeof path !== 'string' || !path.startsWith('/org/bluez')) return false
    const send = (name: string, text: string): true => {
      this.bus.send(dbus.Message.newError(msg as unknown as string, name, text))
      return true
    }
    if (!this.tree.has(path)) {
      if (msg.interface === 'org.freedesktop.DBus.Introspectable' && this.tree.isNode(path)) return false
      return send(BLUEZ_ERRORS.UnknownObject,
        `Method "${msg.member}" with signature "${msg.signature ?? ''}" on interface "${msg.interface}" doesn't exist`)
    }
    if (msg.interface === 'org.freedesktop.DBus.Properties' && (msg.member === 'Get' || msg.member === 'GetAll')) {
      const ifaceName: unknown = msg.body[0]
      if (typeof ifaceName === 'string' && !this.tree.interfacesAt(path).includes(ifaceName)) {
        return send('org.freedesktop.DBus.Error.InvalidArgs', `No such interface '${ifaceName}'`)
      }
    }
    return false
  }
}

export { devicePathSegment }
