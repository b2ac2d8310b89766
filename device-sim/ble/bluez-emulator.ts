// A BlueZ emulator on a (private) D-Bus: owns `org.bluez` and exports the
// objects bluetoothd exports (doc/adapter-api.txt, device-api.txt,
// gatt-api.txt, battery-api.txt) so node-ble and the relay talk to it as to a
// real controller. Only the radio is fake.
import * as dbus from 'dbus-next'
import { Adapter1, AgentManager1 } from './adapter.ts'
import { BLUEZ, BLUEZ_ERRORS, devicePathSegment, normaliseAddress } from './dbus-util.ts'
import { EmulatedStrap, type StrapOptions } from './device.ts'
import { ObjectTree } from './object-tree.ts'

export type { StrapOptions, StrapFaults } from './device.ts'
export { EmulatedStrap } from './device.ts'

export interface BluezEmulatorOptions {
  busAddress: string
  /** Adapter name, default 'hci0'. */
  adapter?: string
  /** Adapter address, default '00:1A:7D:DA:71:13'. */
  adapterAddress?: string
}

export class BluezEmulator {
  readonly adapterPath: string
  readonly adapter: Adapter1
  readonly tree: ObjectTree
  /** Errors of the emulator's own bus connection (e.g. the daemon went away). */
  readonly busErrors: Error[] = []
  private readonly straps = new Map<string, EmulatedStrap>()
  private stopped = false

  private constructor (private readonly bus: dbus.MessageBus, adapterName: string, adapterAddress: string) {
    this.adapterPath = `/org/bluez/${adapterName}`
    this.tree = new ObjectTree(bus)
    this.adapter = new Adapter1(adapterAddress, adapterName, {
      startDiscovery: () => { this.setDiscovering(true) },
      stopDiscovery: () => { this.setDiscovering(false) },
      setPowered: (on) => { if (on) this.powerOn(); else this.powerOff() },
      removeDevice: (path) => { this.removeDevicePath(path) }
    })
    bus.addMethodHandler(this.unknownObjectHandler)
    this.tree.add('/org/bluez', new AgentManager1())
    this.tree.add(this.adapterPath, this.adapter)
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
    const emulator = new BluezEmulator(bus, opts.adapter ?? 'hci0', opts.adapterAddress ?? '00:1A:7D:DA:71:13')
    emulator.busErrors.push(...errors)
    bus.on('error', (err: unknown) => { emulator.busErrors.push(err instanceof Error ? err : new Error(String(err))) })
    return emulator
  }

  get powered (): boolean { return this.adapter.powered }
  get discovering (): boolean { return this.adapter.discovering }

  /** A strap starts advertising; it appears on the bus once discovery runs. */
  addStrap (opts: StrapOptions): EmulatedStrap {
    const address = normaliseAddress(opts.address)
    if (this.straps.has(address)) throw new Error(`strap ${address} already exists`)
    const strap = new EmulatedStrap({
      adapterPath: this.adapterPath,
      tree: this.tree,
      powered: () => this.adapter.powered
    }, { ...opts, address })
    this.straps.set(address, strap)
    if (this.adapter.discovering) strap.appear()
    return strap
  }

  strap (address: string): EmulatedStrap | undefined {
    return this.straps.get(normaliseAddress(address))
  }

  /** The strap goes away: its link drops and its object is removed (InterfacesRemoved). */
  removeStrap (address: string): void {
    const key = normaliseAddress(address)
    const strap = this.straps.get(key)
    if (strap === undefined) return
    strap.vanish()
    this.straps.delete(key)
  }

  /** The controller is powered off (rfkill, `bluetoothctl power off`): links drop, discovery stops. */
  powerOff (): void {
    if (!this.adapter.powered) return
    for (const strap of this.straps.values()) strap.dropLink()
    if (this.adapter.discovering) this.adapter.update({ Discovering: false })
    this.adapter.update({ Powered: false })
  }

  powerOn (): void {
    if (this.adapter.powered) return
    this.adapter.update({ Powered: true })
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

  private setDiscovering (on: boolean): void {
    this.adapter.update({ Discovering: on })
    if (on) for (const strap of this.straps.values()) strap.appear()
  }

  private removeDevicePath (path: string): void {
    for (const strap of this.straps.values()) {
      if (strap.path === path && strap.visible) {
        // Removed from BlueZ's list; it shows up again on the next discovery.
        strap.vanish()
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
