// BLE: N straps on the BlueZ emulator, on a private dbus-daemon started here
// (or on a bus given by address, or on an emulator the caller already runs,
// as the demo does). The relay reaches them through node-ble with
// DBUS_SYSTEM_BUS_ADDRESS set to the printed address.
import { rrMsToUnits } from '../../firmware-protocol/ble.ts'
import { BluezEmulator, type AdapterLimits, type EmulatedStrap } from '../ble/bluez-emulator.ts'
import { startPrivateBus, type PrivateBus } from '../ble/private-bus.ts'
import { SimError } from '../errors.ts'
import type { LinkFaultKind } from '../faults.ts'
import type { FaultOutcome, SimDevice, SimReading, SimTransport } from './transport.ts'

export interface BleTransportOptions {
  /** Use this bus instead of starting a private dbus-daemon. */
  busAddress?: string
  /**
   * Add the straps to this running emulator instead of starting one. The
   * caller owns it: close() leaves it, and the straps on it, running; they go
   * when the caller stops the emulator.
   */
  emulator?: { bluez: BluezEmulator, busAddress: string }
  /** Adapters of the emulator this transport starts (hci0, hci1, ...), default 1. */
  adapters?: number
  /** Limits of each of those adapters (docs/operator.md "Several Bluetooth adapters"). */
  limits?: AdapterLimits
}

/** A random static address (top two bits set) for strap `index`, derived from the seed. */
export function strapAddress (seed: number, index: number): string {
  const bytes = [0xc0 | ((seed >>> 8) & 0x3f), seed & 0xff, 0x5e, 0xed, (index >>> 8) & 0xff, index & 0xff]
  return bytes.map(b => b.toString(16).toUpperCase().padStart(2, '0')).join(':')
}

export class BleTransport implements SimTransport {
  readonly name = 'ble' as const
  private bus: PrivateBus | undefined
  private emulator: BluezEmulator | undefined
  private devices: SimDevice[] = []
  private readonly straps = new Map<number, EmulatedStrap>()
  private address = ''

  constructor (private readonly options: BleTransportOptions = {}) {}

  get busAddress (): string { return this.address }

  async open (devices: SimDevice[]): Promise<void> {
    const external = this.options.emulator
    if (external !== undefined) {
      this.address = external.busAddress
      this.emulator = external.bluez
      this.devices = devices
      for (const d of devices) this.addStrap(d)
      return
    }
    try {
      if (this.options.busAddress === undefined) this.bus = await startPrivateBus()
    } catch (err) {
      throw new SimError('transport_unavailable', `cannot start dbus-daemon: ${(err as Error).message}`, { cause: err })
    }
    this.address = this.options.busAddress ?? (this.bus as PrivateBus).address
    try {
      this.emulator = await BluezEmulator.start({ busAddress: this.address, adapters: this.options.adapters ?? 1, limits: this.options.limits ?? {} })
    } catch (err) {
      await this.bus?.stop()
      throw new SimError('transport_unavailable', `cannot own org.bluez on ${this.address}: ${(err as Error).message}`, { cause: err })
    }
    this.devices = devices
    for (const d of devices) this.addStrap(d)
  }

  private addStrap (d: SimDevice, battery?: number): void {
    const strap = (this.emulator as BluezEmulator).addStrap({ address: d.device_id, name: `HRM ${d.label}`, battery: battery ?? 100 })
    this.straps.set(d.index, strap)
  }

  strap (device: number): EmulatedStrap | undefined { return this.straps.get(device) }
  get bluez (): BluezEmulator | undefined { return this.emulator }

  describe (): string[] {
    const { maxConnections, silentAbove } = this.options.limits ?? {}
    const limits = [maxConnections === undefined ? 'no connection limit' : `at most ${maxConnections} connections each`, ...(silentAbove === undefined ? [] : [`silent above ${silentAbove}`])]
    return [
      `BlueZ emulator on a private D-Bus: DBUS_SYSTEM_BUS_ADDRESS=${this.address}`,
      `adapters ${this.emulator?.adapterNames.join(', ') ?? ''}: ${limits.join(', ')}`,
      `start the relay with it: DBUS_SYSTEM_BUS_ADDRESS=${this.address} hr-relay start`,
      ...this.devices.map(d => `strap ${d.device_id} (${d.label}): pair with  hr-relay admin device add ${d.device_id} --user <username>`)
    ]
  }

  async send (device: number, r: SimReading): Promise<boolean> {
    const strap = this.straps.get(device)
    if (strap === undefined) return false
    if (r.battery_percent !== undefined && strap.battery !== r.battery_percent) strap.setBattery(r.battery_percent)
    return strap.sendHeartRate({
      heart_rate: r.heart_rate,
      sensor_contact: r.sensor_contact ? 'detected' : 'not_detected',
      ...(r.energy_expended_kj === undefined ? {} : { energy_expended_kj: r.energy_expended_kj }),
      rr_intervals: r.rr_intervals_ms.map(rrMsToUnits)
    })
  }

  async inject (device: number, kind: 'garbage' | 'bad_checksum' | 'oversized'): Promise<FaultOutcome> {
    const strap = this.straps.get(device)
    if (strap === undefined) return 'not_applicable'
    switch (kind) {
      // Flags say "RR present" but one odd byte follows the value: malformed (odd RR byte count).
      case 'garbage': strap.notify(Uint8Array.of(0x10, 72, 0x01)); return 'injected'
      // Longer than any ATT MTU allows (512 bytes), with an odd RR byte count.
      case 'oversized': strap.notify(new Uint8Array(601).fill(0x10, 0, 1).fill(0x4b, 1, 2).fill(0x01, 2)); return 'injected'
      default: return 'not_applicable'
    }
  }

  async link (device: number, up: boolean, kind: LinkFaultKind): Promise<FaultOutcome> {
    const emulator = this.emulator
    const d = this.devices[device]
    if (emulator === undefined || d === undefined) return 'not_applicable'
    if (kind === 'drop') {
      const strap = this.straps.get(device)
      if (strap === undefined) return 'not_applicable'
      if (up) {
        strap.faults = {}
      } else {
        // Out of range: the link drops and reconnect attempts fail until it returns.
        strap.faults = { refuseConnect: 'Failed' }
        strap.dropLink()
      }
      return 'injected'
    }
    if (up) {
      if (!this.straps.has(device)) this.addStrap(d)
    } else {
      emulator.removeStrap(d.device_id)
      this.straps.delete(device)
    }
    return 'injected'
  }

  async close (): Promise<void> {
    if (this.options.emulator !== undefined) { this.emulator = undefined; this.straps.clear(); return }
    await this.emulator?.stop()
    this.emulator = undefined
    await this.bus?.stop()
    this.bus = undefined
  }
}
