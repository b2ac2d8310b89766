// Prometheus metrics (prom-client) and the GET /metrics route. One registry
// per running service (not prom-client's global one), so that two services in
// one process (tests) do not share counters. Other components call the small
// `Metrics` methods; only this file knows about prom-client.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client'
import type { FastifyInstance } from 'fastify'
import type { Ingest, IngestResult, Reading } from '../api/pipeline/reading.ts'
import type { AdapterHealth } from '../api/services.ts'
import type { SourceState } from './sources/source.ts'

/** Seconds; spans a LevelDB sync write on an SD card (milliseconds) up to a stalled disk. */
const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5]

/** Writes per group: one reading is about 4 (reading, minute and hour rollup, latest); the pipeline caps a group at 5,000 readings. */
const GROUP_BUCKETS = [1, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 4096, 16384]

const ADAPTER_STATES = ['up', 'full', 'powered_off', 'missing'] as const

interface BleAdapterGauges { connections: Gauge<'adapter'>, limit: Gauge<'adapter'>, state: Gauge<'adapter' | 'state'>, silent: Gauge<'adapter'>, refused: Gauge<'adapter'> }
/** Every state a source reports, each a label value of hr_relay_source_state. */
const SOURCE_STATES = ['starting', 'running', 'degraded', 'unavailable', 'stopped'] as const satisfies readonly SourceState[]

export class Metrics {
  readonly registry = new Registry()
  private readonly readings: Counter<'source'>
  private readonly drops: Counter<'reason'>
  private readonly connected: Gauge<'source'>
  private readonly brokerClientsGauge: Gauge<'kind'>
  private readonly wsClients: Gauge
  private readonly ingestLatency: Histogram
  private readonly upstreamQueue: Gauge
  private readonly upstreamSent: Counter
  private readonly upstreamDropped: Counter
  private readonly ingestDrops: Gauge<'reason'>
  private readonly clockSkew: Gauge<'source'>
  private readonly groups: Gauge
  private readonly failedGroups: Gauge
  private readonly appendLatency: Histogram
  private readonly groupOps: Histogram
  private readonly collectors: Array<() => void> = []
  private bleAdapterGauges: BleAdapterGauges | undefined
  private readonly sourceState: Gauge<'source' | 'state'>

  constructor (options: { defaultMetrics?: boolean } = {}) {
    const registers = [this.registry]
    this.readings = new Counter({ name: 'hr_relay_readings_stored_total', help: 'Readings stored, by source', labelNames: ['source'], registers })
    this.drops = new Counter({ name: 'hr_relay_dropped_total', help: 'Readings, frames, lines and packets dropped, by reason', labelNames: ['reason'], registers })
    this.connected = new Gauge({ name: 'hr_relay_connected_devices', help: 'Devices currently connected, by source (ble: connected straps)', labelNames: ['source'], registers })
    this.brokerClientsGauge = new Gauge({ name: 'hr_relay_mqtt_clients', help: 'Clients connected to the embedded MQTT broker, by kind (device, app)', labelNames: ['kind'], registers })
    this.wsClients = new Gauge({ name: 'hr_relay_websocket_clients', help: 'Open API WebSocket connections (real-time streams)', registers })
    this.ingestLatency = new Histogram({ name: 'hr_relay_ingest_latency_seconds', help: 'Time from submit to durable write (or drop) in the ingest pipeline', buckets: LATENCY_BUCKETS, registers })
    this.upstreamQueue = new Gauge({ name: 'hr_relay_upstream_queue_length', help: 'Readings waiting in the upstream store-and-forward queue', registers })
    this.upstreamSent = new Counter({ name: 'hr_relay_upstream_sent_total', help: 'Readings acknowledged by the upstream broker (PUBACK)', registers })
    this.upstreamDropped = new Counter({ name: 'hr_relay_upstream_dropped_total', help: 'Readings dropped from a full upstream queue (oldest first)', registers })
    this.ingestDrops = new Gauge({ name: 'hr_relay_ingest_dropped_total', help: 'Readings the ingest pipeline accepted but did not store, by reason (monotonic)', labelNames: ['reason'], registers })
    this.groups = new Gauge({ name: 'hr_relay_reading_groups_total', help: 'Groups of readings written durably by the ingest pipeline, one LevelDB sync batch each (monotonic)', registers })
    this.failedGroups = new Gauge({ name: 'hr_relay_reading_groups_failed_total', help: 'Groups of readings whose write failed; none of their readings was acknowledged (monotonic)', registers })
    this.appendLatency = new Histogram({ name: 'hr_relay_reading_log_append_seconds', help: 'Time to write one group of readings durably (a LevelDB sync batch), failures included', buckets: LATENCY_BUCKETS, registers })
    this.groupOps = new Histogram({ name: 'hr_relay_reading_group_writes', help: 'Writes (readings, rollups and latest records) per group of readings', buckets: GROUP_BUCKETS, registers })
    this.clockSkew = new Gauge({ name: 'hr_relay_clock_skew_corrected_total', help: 'Readings ahead of the relay clock by at most data.max_clock_skew_ms, stored at receive time, by source (monotonic)', labelNames: ['source'], registers })
    this.sourceState = new Gauge({ name: 'hr_relay_source_state', help: 'Each input source\'s state (starting, running, degraded: reopening with backoff, unavailable, stopped): 1 for its current state, 0 for the others', labelNames: ['source', 'state'], registers })
    this.brokerClientsGauge.set({ kind: 'device' }, 0)
    this.brokerClientsGauge.set({ kind: 'app' }, 0)
    this.wsClients.set(0)
    if (options.defaultMetrics === true) collectDefaultMetrics({ register: this.registry, prefix: 'hr_relay_' })
  }

  readingStored (source: string): void { this.readings.inc({ source }) }
  dropped (reason: string): void { this.drops.inc({ reason }) }
  setConnected (source: string, n: number): void { this.connected.set({ source }, n) }
  observeIngestLatency (seconds: number): void { this.ingestLatency.observe(seconds) }
  setWebSocketClients (n: number): void { this.wsClients.set(n) }
  setBrokerClients (kind: 'device' | 'app', n: number): void { this.brokerClientsGauge.set({ kind }, n) }
  setUpstreamQueue (n: number): void { this.upstreamQueue.set(n) }
  upstreamAcked (): void { this.upstreamSent.inc() }
  upstreamDroppedOldest (n = 1): void { this.upstreamDropped.inc(n) }

  /** The pipeline's drop counters, read at scrape time. */
  trackIngestDrops (counters: () => Record<string, number>): void {
    this.collectors.push(() => { for (const [reason, n] of Object.entries(counters())) this.ingestDrops.set({ reason }, n) })
  }

  /** The pipeline's groups written and failed, read at scrape time. */
  trackReadingGroups (counters: () => Readonly<{ batches: number, failed_groups: number }>): void {
    this.collectors.push(() => {
      const c = counters()
      this.groups.set(c.batches)
      this.failedGroups.set(c.failed_groups)
    })
  }

  observeAppend (seconds: number, writes: number): void {
    this.appendLatency.observe(seconds)
    this.groupOps.observe(writes)
  }

  /** The pipeline's clock-skew corrections per source, read at scrape time. */
  trackClockSkewCorrected (counters: () => Partial<Record<string, number>>): void {
    this.collectors.push(() => { for (const [source, n] of Object.entries(counters())) this.clockSkew.set({ source }, n ?? 0) })
  }

  /** Connected devices per source, read at scrape time. */
  trackConnected (counts: () => Record<string, number>): void {
    this.collectors.push(() => { for (const [source, n] of Object.entries(counts())) this.connected.set({ source }, n) })
  }

  /** The BLE source's adapters, read at scrape time: connections, limit, state, and the silent and refused links (monotonic). */
  trackBleAdapters (adapters: () => AdapterHealth[]): void {
    const registers = [this.registry]
    const g = this.bleAdapterGauges ??= {
      connections: new Gauge({ name: 'hr_relay_ble_adapter_connections', help: 'Straps connected through each Bluetooth adapter', labelNames: ['adapter'], registers }),
      limit: new Gauge({ name: 'hr_relay_ble_adapter_max_connections', help: 'Straps each adapter may hold now: ble.adapters max_connections, lower while held full', labelNames: ['adapter'], registers }),
      state: new Gauge({ name: 'hr_relay_ble_adapter_state', help: 'State of each adapter: 1 for its current state (up, full, powered_off, missing), 0 for the others', labelNames: ['adapter', 'state'], registers }),
      silent: new Gauge({ name: 'hr_relay_ble_adapter_silent_total', help: 'Straps connected and subscribed through the adapter that sent nothing within ble.silent_after_ms, and were moved (monotonic)', labelNames: ['adapter'], registers }),
      refused: new Gauge({ name: 'hr_relay_ble_adapter_refused_total', help: 'Connections the adapter refused while it held others, after which it was held full (monotonic)', labelNames: ['adapter'], registers })
    }
    this.collectors.push(() => {
      for (const a of adapters()) {
        const adapter = a.name
        g.connections.set({ adapter }, a.connections)
        g.limit.set({ adapter }, a.limit)
        for (const state of ADAPTER_STATES) g.state.set({ adapter, state }, a.state === state ? 1 : 0)
        g.silent.set({ adapter }, a.silent_total)
        g.refused.set({ adapter }, a.refused_total)
      }
    })
  }

  /** Every source's state, read at scrape time (the same states /health reports). */
  trackSourceStates (states: () => ReadonlyArray<{ id: string, state: string }>): void {
    this.collectors.push(() => {
      for (const s of states()) for (const state of SOURCE_STATES) this.sourceState.set({ source: s.id, state }, s.state === state ? 1 : 0)
    })
  }

  /** Open API WebSocket streams, read at scrape time (the hub's stream counters). */
  trackWebSocketClients (count: () => number): void {
    this.collectors.push(() => { this.wsClients.set(count()) })
  }

  /** The Prometheus text exposition. */
  async text (): Promise<{ contentType: string, body: string }> {
    for (const collect of this.collectors) collect()
    return { contentType: this.registry.contentType, body: await this.registry.metrics() }
  }
}

/** Fastify plugin: GET /metrics in the Prometheus text format (no authentication, like /health; bind to loopback or firewall it). */
export function metricsPlugin (metrics: Metrics): (app: FastifyInstance) => Promise<void> {
  return async app => {
    app.get('/metrics', async (_request, reply) => {
      const { contentType, body } = await metrics.text()
      return await reply.type(contentType).send(body)
    })
  }
}

/** Wraps an Ingest so that every submit is timed (hr_relay_ingest_latency_seconds). */
export function instrumentIngest (inner: Ingest, metrics: Pick<Metrics, 'observeIngestLatency'>): Ingest {
  return {
    // Not async, and a double clock (no BigInt): this runs for every reading.
    submit (reading: Reading): Promise<IngestResult> {
      const started = performance.now()
      const observe = (): void => { metrics.observeIngestLatency((performance.now() - started) / 1000) }
      let submitted: Promise<IngestResult>
      try {
        submitted = inner.submit(reading)
      } catch (err) {
        observe()
        return Promise.reject(err)
      }
      submitted.then(observe, observe)
      return submitted
    }
  }
}

/** Wraps a ReadingLog so that every append is timed (hr_relay_reading_log_append_seconds) and its size counted. */
export function instrumentReadingLog<Op> (inner: { append (ops: readonly Op[]): Promise<void> }, metrics: Pick<Metrics, 'observeAppend'>): { append (ops: readonly Op[]): Promise<void> } {
  return {
    append (ops: readonly Op[]): Promise<void> {
      const started = performance.now()
      const observe = (): void => { metrics.observeAppend((performance.now() - started) / 1000, ops.length) }
      const appended = inner.append(ops)
      appended.then(observe, observe)
      return appended
    }
  }
}
