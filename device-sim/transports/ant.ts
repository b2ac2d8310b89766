// ANT: one simulated ANT USB stick (ant/stick.ts) on a pty pair, hearing N
// ANT+ heart-rate straps, one per simulated person. The relay opens the
// printed relay-side path as `ant: [{ path }]`. Each reading the runner sends
// is one second of that strap's beats (its rate and RR intervals); the stick
// broadcasts the strap's pages at its ~4 Hz period from them.
//
// Faults: `drop` is a strap walking out of the stick's range (it keeps
// beating, nothing of it is heard) and back; `unplug` is the stick pulled out
// (socat ends, the relay's port closes) and put back at the same path, while
// any strap's unplug lasts. Noise and a broken message ride on the stick's line.
import { ANT_MAX_DEVICE_NUMBER, encodeAntMessage, parseAntDeviceId } from '../../firmware-protocol/ant.ts'
import { AntStickSim } from '../ant/stick.ts'
import { SimError } from '../errors.ts'
import type { LinkFaultKind } from '../faults.ts'
import { openPtyPair, type PtyPair } from '../serial/pty.ts'
import type { FaultOutcome, SimDevice, SimReading, SimTransport } from './transport.ts'

/** Straps one seed can number without repeats. */
export const MAX_SIM_ANT_STRAPS = 4095

/**
 * The ANT+ device number of simulated strap `index`: distinct for indexes 0..4094 of one seed, 1..1048575, and
 * above 65535 (extended by the transmission type) for most seeds, as many real straps' are.
 */
export function simAntDeviceNumber (seed: number, index: number): number {
  if (!Number.isInteger(index) || index < 0 || index >= MAX_SIM_ANT_STRAPS) throw new SimError('bad_option', `at most ${MAX_SIM_ANT_STRAPS} ANT straps`)
  const n = (seed % 255) * 4096 + index + 1
  return Math.min(n, ANT_MAX_DEVICE_NUMBER)
}

export interface AntTransportOptions {
  /** A pty pair already open (the demo opens it before the relay's sources start). The caller owns it. */
  pair?: PtyPair
  /** Whether the stick has continuous scan mode (default true); without it the relay opens a channel per strap. */
  scanMode?: boolean
}

interface Strap { device: SimDevice, number: number, inRange: boolean }

export class AntTransport implements SimTransport {
  readonly name = 'ant' as const
  private pair: PtyPair | undefined
  private stick: AntStickSim | undefined
  private readonly straps = new Map<number, Strap>()
  /** Devices whose `unplug` fault is on: the stick is out while there is one. */
  private readonly unplugged = new Set<number>()

  constructor (private readonly options: AntTransportOptions = {}) {}

  /** The path the relay opens (`ant[].path`). */
  get relayPath (): string | undefined { return this.pair?.relayPath }

  async open (devices: SimDevice[]): Promise<void> {
    try {
      this.pair = this.options.pair ?? await openPtyPair()
    } catch (err) {
      throw new SimError('transport_unavailable', `cannot open a pty pair (is socat installed?): ${(err as Error).message}`, { cause: err })
    }
    const stick = new AntStickSim({ path: this.pair.devicePath, ...(this.options.scanMode === undefined ? {} : { scanMode: this.options.scanMode }) })
    this.stick = stick
    for (const device of devices) {
      const number = parseAntDeviceId(device.device_id)
      if (number === undefined) throw new SimError('bad_option', `ANT strap ${device.device_id} is not ant:<device number 1..1048575>`)
      // Signal strength from the strap's place in the room: -45 dBm next to the stick down to -80 at the back.
      stick.addStrap({ deviceNumber: number, rssi: -45 - ((number * 7) % 36), batteryPercent: 100, firstBackgroundPage: 7 })
      this.straps.set(device.index, { device, number, inRange: true })
    }
    try {
      await stick.open()
    } catch (err) {
      await this.close()
      throw new SimError('transport_unavailable', `cannot open the simulated stick: ${(err as Error).message}`, { cause: err })
    }
  }

  /** The relay's `ant` configuration for this stick; the network key is the operator's own (docs/operator.md "ANT+ sticks"). */
  relayConfig (): { ant: Array<{ path: string, network_key: string }> } {
    return { ant: [{ path: this.pair?.relayPath ?? '', network_key: '<the ANT+ network key, 16 hex digits>' }] }
  }

  describe (): string[] {
    return [
      `ANT stick: relay port ${this.pair?.relayPath ?? '?'} (the simulated stick accepts any network key)`,
      ...[...this.straps.values()].map(s => `ANT+ strap ${s.device.device_id} (${s.device.label}): pair with  hr-relay admin device pair <username> --kind ant --device-id ${s.device.device_id}`),
      `relay configuration: ${JSON.stringify(this.relayConfig())}`
    ]
  }

  async send (device: number, r: SimReading): Promise<boolean> {
    const s = this.straps.get(device)
    const stick = this.stick
    if (s === undefined || stick === undefined) return false
    // A strap without skin contact sends a rate of 0, which the relay stores nothing of.
    stick.beats(s.number, r.sensor_contact ? r.heart_rate : 0, r.sensor_contact ? r.rr_intervals_ms : [], r.battery_percent)
    return stick.isOpen && stick.receiving && s.inRange
  }

  async inject (device: number, kind: 'garbage' | 'bad_checksum' | 'oversized', r: SimReading): Promise<FaultOutcome> {
    const s = this.straps.get(device)
    const stick = this.stick
    if (s === undefined || stick === undefined || !stick.isOpen) return 'not_applicable'
    try {
      switch (kind) {
        case 'garbage': await stick.writeRaw(Uint8Array.of(0x00, 0x13, 0x37, 0x42)); break
        case 'bad_checksum': {
          const m = encodeAntMessage(0x4e, [0, 4, 0, 0, 0, 0, 0, 0, r.heart_rate & 0xff])
          m[m.length - 1] = (m[m.length - 1] as number) ^ 0xff
          await stick.writeRaw(m)
          break
        }
        // A length byte above any message's: the framer drops it and looks for the next sync.
        case 'oversized': await stick.writeRaw(Uint8Array.of(0xa4, 0xff, 0x4e, 0x00)); break
      }
      return 'injected'
    } catch {
      return 'not_applicable'
    }
  }

  async link (device: number, up: boolean, kind: LinkFaultKind): Promise<FaultOutcome> {
    const s = this.straps.get(device)
    const stick = this.stick
    const pair = this.pair
    if (s === undefined || stick === undefined || pair === undefined) return 'not_applicable'
    if (kind === 'drop') {
      s.inRange = up
      stick.setInRange(s.number, up)
      return 'injected'
    }
    const wasOut = this.unplugged.size > 0
    if (up) this.unplugged.delete(device)
    else this.unplugged.add(device)
    const out = this.unplugged.size > 0
    if (out && !wasOut) {
      await stick.close()
      await pair.unplug()
    } else if (!out && wasOut) {
      await pair.plug()
      await stick.open()
    }
    return 'injected'
  }

  async close (): Promise<void> {
    await this.stick?.close().catch(() => {})
    this.stick = undefined
    if (this.pair !== undefined && this.pair !== this.options.pair) await this.pair.close().catch(() => {})
    this.pair = undefined
    this.straps.clear()
    this.unplugged.clear()
  }
}
