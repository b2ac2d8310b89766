// Builds the configured sources (BLE, serial, ANT) and connects each to the one
// ingest pipeline through a SourceSink; reports their states for /health.
// The BLE and serial modules (node-ble, dbus-next, serialport) are imported
// when a configured source starts: a box without BLE or serial devices never
// loads them.
import type { Logger } from 'pino'
import type { Ingest, IngestResult, Reading } from '../../api/pipeline/reading.ts'
import type { AdapterHealth, HealthEntry } from '../../api/services.ts'
import { bleAdapters, type Config } from '../config.ts'
import type { DeviceSighting, Source, SourceSink, SourceStatus } from './source.ts'
import { UnconfiguredSource } from './unconfigured.ts'

export interface SourceDeps {
  ingest: Ingest
  /** A device seen in range (paired or not), for the operator's pairing list. */
  sighting: (d: DeviceSighting) => void
  /** A dropped frame, line or packet, by reason (metrics). */
  dropped: (reason: string) => void
  /** A reading handed to the pipeline, by source (metrics). */
  submitted?: (r: Reading, result: IngestResult) => void
  log: Logger
}

/**
 * A source whose module is imported, and the source built, on start().
 * Before that it reports `before` under its final id.
 */
export class LazySource implements Source {
  private source: Source | undefined
  private stopped = false

  constructor (readonly id: string, private readonly load: () => Promise<Source>, private readonly before: SourceStatus) {}

  async start (signal: AbortSignal, sink: SourceSink): Promise<void> {
    const source = await this.load()
    if (source.id !== this.id) throw new Error(`source ${source.id} was configured as ${this.id}`)
    // stop() ran while the module loaded: never start it.
    if (this.stopped || signal.aborted) return
    this.source = source
    await source.start(signal, sink)
  }

  async stop (): Promise<void> {
    this.stopped = true
    await this.source?.stop()
  }

  status (): SourceStatus {
    return this.source?.status() ?? (this.stopped ? { state: 'stopped', connected: 0 } : { ...this.before })
  }

  adapters (): AdapterHealth[] {
    return this.source?.adapters?.() ?? []
  }
}

export function buildSources (config: Config, log: Logger, isPaired: (id: string) => boolean): Source[] {
  const sources: Source[] = []
  if (config.ble.enabled) {
    sources.push(new LazySource('ble', async () => new (await import('./ble.ts')).BleSource({
      adapters: bleAdapters(config.ble).map(a => ({ name: a.name, maxConnections: a.max_connections })),
      fullHoldMs: config.ble.full_hold_ms,
      silentAfterMs: config.ble.silent_after_ms,
      allow: config.ble.allow.map(a => a.toUpperCase()),
      shouldConnect: address => isPaired(address),
      connectTimeoutMs: config.ble.connect_timeout_ms,
      gattTimeoutMs: config.ble.gatt_timeout_ms,
      backoff: { initialMs: config.ble.backoff_initial_ms, maxMs: config.ble.backoff_max_ms },
      rescanIntervalMs: config.ble.rescan_interval_ms,
      logger: log
    }), { state: 'stopped', connected: 0 }))
  }
  for (const port of config.serial) {
    sources.push(new LazySource(`serial:${port.path}`, async () => new (await import('./serial.ts')).SerialSource({
      path: port.path,
      baudRate: port.baud_rate,
      format: port.format,
      ...(port.device_id === undefined ? {} : { deviceId: port.device_id }),
      pollIntervalMs: port.poll_interval_ms,
      logger: log
    }), { state: 'starting', connected: 0 }))
  }
  // ANT USB sticks: every ANT+ strap in range is heard and sighted; readings of paired straps only go to the pipeline.
  for (const stick of config.ant) {
    const id = `ant:${stick.path}`
    const key = stick.network_key
    if (key === undefined) {
      sources.push(new UnconfiguredSource(id, `no network_key for the ANT stick ${stick.path}: set ant[].network_key to the ANT+ network key (16 hex digits), which hr-relay does not ship; see docs/operator.md "ANT+ sticks"`, log))
      continue
    }
    sources.push(new LazySource(id, async () => {
      const [{ AntSource }, { parseNetworkKey }] = await Promise.all([import('./ant.ts'), import('../../firmware-protocol/ant.ts')])
      return new AntSource({ path: stick.path, baudRate: stick.baud_rate, networkKey: parseNetworkKey(key), shouldSubmit: deviceId => isPaired(deviceId), logger: log })
    }, { state: 'starting', connected: 0 }))
  }
  return sources
}

export class SourceManager {
  private readonly controller = new AbortController()
  private readonly states = new Map<string, SourceStatus>()

  constructor (private readonly sources: Source[], private readonly deps: SourceDeps) {}

  private sinkFor (source: Source): SourceSink {
    return {
      reading: async r => {
        const result = await this.deps.ingest.submit(r)
        this.deps.submitted?.(r, result)
        return result
      },
      status: s => { this.states.set(source.id, s) },
      device: d => { this.deps.sighting(d) },
      dropped: reason => { this.deps.dropped(reason) }
    }
  }

  /** Starts every source; a source that fails to start is reported, never fatal for the others. */
  async start (): Promise<void> {
    await Promise.all(this.sources.map(async source => {
      try {
        await source.start(this.controller.signal, this.sinkFor(source))
      } catch (err) {
        this.states.set(source.id, { state: 'unavailable', detail: (err as Error).message })
        this.deps.log.error({ source: source.id, err }, 'source failed to start')
      }
    }))
  }

  async stop (): Promise<void> {
    this.controller.abort()
    await Promise.all(this.sources.map(async s => { try { await s.stop() } catch (err) { this.deps.log.warn({ source: s.id, err }, 'error stopping source') } }))
  }

  health (): HealthEntry[] {
    return this.sources.map(s => {
      const st = this.states.get(s.id) ?? s.status()
      const adapters = s.adapters?.() ?? []
      return { id: s.id, state: st.state, ...(st.detail === undefined ? {} : { detail: st.detail }), ...(st.connected === undefined ? {} : { connected: st.connected }), ...(adapters.length === 0 ? {} : { adapters }) }
    })
  }

  /** Every source's adapters (BLE), by source id, for /metrics. */
  adapters (): Array<{ source: string, adapter: AdapterHealth }> {
    return this.sources.flatMap(s => (s.adapters?.() ?? []).map(adapter => ({ source: s.id, adapter })))
  }

  connected (): Record<string, number> {
    const out: Record<string, number> = {}
    for (const s of this.sources) out[s.id] = (this.states.get(s.id) ?? s.status()).connected ?? 0
    return out
  }
}
