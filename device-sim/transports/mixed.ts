// Several transports behind one: each simulated device goes through the
// transport it was given (the demo: some straps over BLE, some sensors on
// serial ptys, the rest over MQTT), while one Simulation runs every person.
// Each part sees its own devices numbered 0..n-1, as when it runs alone.
import type { InstantFaultKind, LinkFaultKind } from '../faults.ts'
import type { FaultOutcome, SimDevice, SimReading, SimTransport } from './transport.ts'

export interface MixedPart {
  transport: SimTransport
  /** The devices (by their index in the whole simulation) this part carries. */
  devices: SimDevice[]
}

interface Route { transport: SimTransport, local: number }

export class MixedTransport implements SimTransport {
  readonly name = 'mixed' as const
  private readonly routes = new Map<number, Route>()
  private readonly opened: SimTransport[] = []

  constructor (private readonly parts: MixedPart[]) {}

  /** The transport that carries device `index` (undefined: none). */
  transportOf (index: number): SimTransport | undefined { return this.routes.get(index)?.transport }

  /** Opens every part with a non-empty device list; a part that fails closes the ones already open. */
  async open (devices: SimDevice[]): Promise<void> {
    const wanted = new Set(devices.map(d => d.index))
    for (const part of this.parts) {
      const mine = part.devices.filter(d => wanted.has(d.index))
      if (mine.length === 0) continue
      try {
        await part.transport.open(mine.map((d, local) => ({ ...d, index: local })))
      } catch (err) {
        await this.close()
        throw err
      }
      this.opened.push(part.transport)
      mine.forEach((d, local) => { this.routes.set(d.index, { transport: part.transport, local }) })
    }
  }

  describe (): string[] {
    return this.opened.flatMap(t => t.describe())
  }

  async send (device: number, reading: SimReading): Promise<boolean> {
    const r = this.routes.get(device)
    return r === undefined ? false : await r.transport.send(r.local, reading)
  }

  async inject (device: number, kind: Exclude<InstantFaultKind, 'burst'>, reading: SimReading): Promise<FaultOutcome> {
    const r = this.routes.get(device)
    return r === undefined ? 'not_applicable' : await r.transport.inject(r.local, kind, reading)
  }

  async link (device: number, up: boolean, kind: LinkFaultKind): Promise<FaultOutcome> {
    const r = this.routes.get(device)
    return r === undefined ? 'not_applicable' : await r.transport.link(r.local, up, kind)
  }

  async close (): Promise<void> {
    const open = this.opened.splice(0)
    this.routes.clear()
    for (const t of open) await t.close().catch(() => {})
  }
}
