// HTTP: N writers, each with its own access token (scope
// data:heart_rate:write), posting readings to POST /api/v1/data as an app
// does. A send counts as delivered on 200.
import type { LinkFaultKind } from '../faults.ts'
import type { FaultOutcome, SimDevice, SimReading, SimTransport } from './transport.ts'

export interface HttpWriter { username: string, token: string }

export interface HttpTransportOptions {
  url: string
  writers: HttpWriter[]
  /** Body size of the oversized fault. Default 256 KiB (above the default body limit). */
  oversizedBytes?: number
}

export class HttpTransport implements SimTransport {
  readonly name = 'http' as const
  private devices: SimDevice[] = []
  /** Status codes of answers other than 200 to good readings. */
  readonly statuses = new Map<number, number>()
  /** Status codes the service answered to injected faults, by fault kind (e.g. garbage → 400). */
  readonly faultStatuses = new Map<string, number[]>()

  constructor (private readonly options: HttpTransportOptions) {}

  async open (devices: SimDevice[]): Promise<void> { this.devices = devices }

  describe (): string[] {
    return this.devices.map(d => `writer ${d.device_id} (${d.label}) posts to ${new URL('/api/v1/data', this.options.url).href}`)
  }

  private async post (device: number, body: string): Promise<number> {
    const w = this.options.writers[device]
    if (w === undefined) return 0
    try {
      const res = await fetch(new URL('/api/v1/data', this.options.url), {
        method: 'POST',
        headers: { authorization: `Bearer ${w.token}`, 'content-type': 'application/json' },
        body
      })
      await res.arrayBuffer()
      return res.status
    } catch {
      return 0
    }
  }

  async send (device: number, r: SimReading): Promise<boolean> {
    const status = await this.post(device, JSON.stringify({ measured_at: r.measured_at, data: { heart_rate: r.heart_rate } }))
    if (status !== 200) this.statuses.set(status, (this.statuses.get(status) ?? 0) + 1)
    return status === 200
  }

  async inject (device: number, kind: 'garbage' | 'bad_checksum' | 'oversized'): Promise<FaultOutcome> {
    if (kind === 'bad_checksum') return 'not_applicable'
    const body = kind === 'garbage'
      ? '{"measured_at": 1700000000000, "data": {"heart_rate": '
      : JSON.stringify({ measured_at: Date.now(), data: { heart_rate: 70 }, pad: 'x'.repeat(this.options.oversizedBytes ?? 262144) })
    const status = await this.post(device, body)
    this.faultStatuses.set(kind, [...(this.faultStatuses.get(kind) ?? []), status])
    return 'injected'
  }

  async link (_device: number, _up: boolean, _kind: LinkFaultKind): Promise<FaultOutcome> {
    return 'injected' // the writer goes quiet
  }

  async close (): Promise<void> {}
}
