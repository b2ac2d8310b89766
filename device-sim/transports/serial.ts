// Serial: N devices, each on its own pty pair (socat). The device end is
// driven by SerialDeviceSim in one of the formats the relay reads; the relay
// opens the printed relay-side path. `unplug` ends socat (the relay sees a
// disconnect) and plugs the pair back at the same path afterwards.
import { MAX_LINE_LENGTH, type SerialFormat } from '../../firmware-protocol/serial.ts'
import { SimError } from '../errors.ts'
import type { LinkFaultKind } from '../faults.ts'
import { openPtyPair, type PtyPair } from '../serial/pty.ts'
import { SerialDeviceSim, type TextVariant } from '../serial/device.ts'
import type { FaultOutcome, SimDevice, SimReading, SimTransport } from './transport.ts'

export interface SerialTransportOptions {
  format: SerialFormat
  textVariant?: TextVariant
  firmwareVersion?: string
  /**
   * Pty pairs already open, by device index (the demo opens them before the
   * relay's serial sources start). The caller owns them: close() leaves them open.
   */
  pairs?: PtyPair[]
}

/** `framed`, `hrmi`, `text` or `text:<variant>` (plain, keyed, csv, pulsesensor). */
export function parseSerialFormat (value: string): SerialTransportOptions {
  const [format, variant] = value.split(':')
  if (format !== 'framed' && format !== 'text' && format !== 'hrmi') throw new SimError('bad_option', `--format ${value}: expected framed, text[:plain|keyed|csv|pulsesensor] or hrmi`)
  if (variant !== undefined && (format !== 'text' || !['plain', 'keyed', 'csv', 'pulsesensor'].includes(variant))) {
    throw new SimError('bad_option', `--format ${value}: text variants are plain, keyed, csv, pulsesensor`)
  }
  return { format, ...(variant === undefined ? {} : { textVariant: variant as TextVariant }) }
}

interface Port { pair: PtyPair, sim: SerialDeviceSim, device: SimDevice, identified: boolean }

export class SerialTransport implements SimTransport {
  readonly name = 'serial' as const
  private readonly ports = new Map<number, Port>()

  constructor (private readonly options: SerialTransportOptions) {}

  async open (devices: SimDevice[]): Promise<void> {
    try {
      for (const device of devices) {
        const pair = this.options.pairs?.[device.index] ?? await openPtyPair()
        const sim = new SerialDeviceSim({ path: pair.devicePath, format: this.options.format, ...(this.options.textVariant === undefined ? {} : { textVariant: this.options.textVariant }) })
        this.ports.set(device.index, { pair, sim, device, identified: false })
        await sim.open()
      }
    } catch (err) {
      await this.close()
      throw new SimError('transport_unavailable', `cannot open a pty pair (is socat installed?): ${(err as Error).message}`, { cause: err })
    }
  }

  relayPath (device: number): string | undefined { return this.ports.get(device)?.pair.relayPath }

  /** The relay's `serial` configuration for these ports. */
  relayConfig (): Array<{ path: string, format: SerialFormat, device_id: string }> {
    return [...this.ports.values()].map(p => ({ path: p.pair.relayPath, format: this.options.format, device_id: p.device.device_id }))
  }

  describe (): string[] {
    return [
      ...[...this.ports.values()].map(p => `serial device ${p.device.device_id} (${p.device.label}, ${this.options.format}${this.options.textVariant === undefined ? '' : ':' + this.options.textVariant}): relay port ${p.pair.relayPath}`),
      `relay configuration: ${JSON.stringify({ serial: this.relayConfig() })}`
    ]
  }

  async send (device: number, r: SimReading): Promise<boolean> {
    const port = this.ports.get(device)
    if (port === undefined || !port.sim.isOpen) return false
    try {
      if (this.options.format === 'framed' && !port.identified) {
        await port.sim.sendIdentity(port.device.device_id, this.options.firmwareVersion ?? 'sim-1.0')
        port.identified = true
      }
      await port.sim.sendReading(r.heart_rate, r.rr_intervals_ms.length > 0 ? r.rr_intervals_ms : undefined)
      return true
    } catch {
      return false
    }
  }

  async inject (device: number, kind: 'garbage' | 'bad_checksum' | 'oversized', r: SimReading): Promise<FaultOutcome> {
    const port = this.ports.get(device)
    if (port === undefined || !port.sim.isOpen) return 'not_applicable'
    try {
      switch (kind) {
        case 'garbage': await port.sim.sendGarbage(); break
        case 'bad_checksum': await port.sim.sendBadChecksum(r.heart_rate); break
        case 'oversized': await port.sim.sendOverlong(MAX_LINE_LENGTH * 4); break
      }
      return 'injected'
    } catch {
      return 'not_applicable'
    }
  }

  async link (device: number, up: boolean, kind: LinkFaultKind): Promise<FaultOutcome> {
    const port = this.ports.get(device)
    if (port === undefined) return 'not_applicable'
    if (kind === 'drop') return 'injected' // the device goes quiet; nothing to do on the line
    if (up) {
      await port.pair.plug()
      await port.sim.open()
      port.identified = false
    } else {
      await port.sim.close()
      await port.pair.unplug()
    }
    return 'injected'
  }

  async close (): Promise<void> {
    for (const port of this.ports.values()) {
      await port.sim.close().catch(() => {})
      if (this.options.pairs?.includes(port.pair) !== true) await port.pair.close().catch(() => {})
    }
    this.ports.clear()
  }
}
