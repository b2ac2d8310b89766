// The simulation loop: N simulated people, each with a device on one
// transport. Every tick (1 / rate seconds) each person's heart model advances,
// the fault schedule says what the device does, and the transport carries it.
// With `realtime: false` ticks run back to back (tests); measured_at is then
// still startAt + offset, so a run is reproducible from its seed.
import { EventEmitter } from 'node:events'
import { faultsAt, type InstantFaultKind, type LinkFaultKind } from './faults.ts'
import { HeartModel, makePerson } from './physiology.ts'
import { deriveSeed } from './random.ts'
import type { RecordedReading } from './replay.ts'
import type { FaultKind, FaultSpec, Scenario } from './scenario.ts'
import type { FaultOutcome, SimDevice, SimReading, SimTransport } from './transports/transport.ts'

export interface RunOptions {
  transport: SimTransport
  devices: SimDevice[]
  /** Readings per second per device. */
  rateHz: number
  /** Stop after this many seconds of simulated time (undefined: until aborted). */
  durationS?: number
  seed: number
  scenario: Scenario
  /** Replay these readings (on every device) instead of the heart model. */
  replay?: RecordedReading[]
  /** Replay: shift the recording so it starts at startAt (default: exact measured_at). */
  rebase?: boolean
  faults: FaultSpec[]
  /** Default true: wait for each tick's time. */
  realtime?: boolean
  /** measured_at of offset 0 (default Date.now() at run()). */
  startAt?: number
  signal?: AbortSignal
}

export type DeviceState = 'up' | LinkFaultKind | 'contact_lost'

export interface DeviceStats {
  device_id: string
  label: string
  bpm: number | null
  /** Good readings the device sent (burst readings included). */
  sent: number
  /** Of those, delivered (BLE: a client was subscribed; MQTT: PUBACK; HTTP: 200). */
  delivered: number
  failed: number
  /** Faults injected, by kind (link faults and contact loss count their starts). */
  faults: Partial<Record<FaultKind, number>>
  /** Faults the transport cannot carry (e.g. a checksum over BLE), by kind. */
  not_applicable: Partial<Record<FaultKind, number>>
  state: DeviceState
}

export type SimEvent =
  | { type: 'reading', device: number, reading: SimReading, delivered: boolean, burst: boolean }
  | { type: 'fault', device: number, kind: FaultKind, outcome: FaultOutcome, at: number }
  | { type: 'link', device: number, up: boolean, kind: LinkFaultKind, at: number }
  | { type: 'tick', offset_ms: number }

export class Simulation extends EventEmitter<{ event: [SimEvent] }> {
  readonly stats: DeviceStats[]
  private readonly models: HeartModel[]
  private readonly down: Array<LinkFaultKind | null>
  private readonly contactLost: boolean[]

  constructor (readonly options: RunOptions) {
    super()
    if (!(options.rateHz > 0 && options.rateHz <= 100)) throw new RangeError('rateHz must be in (0, 100]')
    const tickMs = 1000 / options.rateHz
    this.models = options.devices.map(d => new HeartModel(makePerson(options.seed, d.index), options.scenario, { tick_ms: tickMs, seed: deriveSeed(options.seed, 'heart', d.index) }))
    this.stats = options.devices.map(d => ({ device_id: d.device_id, label: d.label, bpm: null, sent: 0, delivered: 0, failed: 0, faults: {}, not_applicable: {}, state: 'up' }))
    this.down = options.devices.map(() => null)
    this.contactLost = options.devices.map(() => false)
  }

  private count (device: number, kind: FaultKind, outcome: FaultOutcome, at: number): void {
    const s = this.stats[device] as DeviceStats
    const bucket = outcome === 'injected' ? s.faults : s.not_applicable
    bucket[kind] = (bucket[kind] ?? 0) + 1
    this.emit('event', { type: 'fault', device, kind, outcome, at })
  }

  private async deliver (device: number, reading: SimReading, burst: boolean): Promise<void> {
    const s = this.stats[device] as DeviceStats
    s.sent++
    s.bpm = reading.heart_rate
    let ok = false
    try { ok = await this.options.transport.send(device, reading) } catch { ok = false }
    if (ok) s.delivered++
    else s.failed++
    this.emit('event', { type: 'reading', device, reading, delivered: ok, burst })
  }

  /** One device's tick over [from, to) ms, with its sample (heart model or recording). */
  private async step (device: number, from: number, to: number, base: SimReading): Promise<void> {
    const { transport, faults } = this.options
    const tf = faultsAt(faults, device, from / 1000, to / 1000)
    const s = this.stats[device] as DeviceStats
    const wasDown = this.down[device] ?? null
    if (tf.down !== wasDown) {
      if (wasDown !== null) {
        const outcome = await transport.link(device, true, wasDown)
        this.emit('event', { type: 'link', device, up: true, kind: wasDown, at: to })
        if (outcome === 'not_applicable') this.count(device, wasDown, outcome, to)
      }
      if (tf.down !== null) {
        const outcome = await transport.link(device, false, tf.down)
        this.emit('event', { type: 'link', device, up: false, kind: tf.down, at: to })
        this.count(device, tf.down, outcome, to)
      }
      this.down[device] = tf.down
    }
    if (tf.contactLost && this.contactLost[device] !== true) this.count(device, 'contact_lost', 'injected', to)
    this.contactLost[device] = tf.contactLost
    if (tf.skewMs !== 0 && (s.faults.skew ?? 0) === 0 && (s.not_applicable.skew ?? 0) === 0) this.count(device, 'skew', transport.name === 'mqtt' || transport.name === 'http' ? 'injected' : 'not_applicable', to)
    s.state = tf.down ?? (tf.contactLost ? 'contact_lost' : 'up')
    if (tf.down !== null) {
      s.bpm = null
      return
    }
    const reading: SimReading = tf.contactLost
      ? { ...base, heart_rate: 0, rr_intervals_ms: [], sensor_contact: false, measured_at: base.measured_at + tf.skewMs }
      : { ...base, measured_at: base.measured_at + tf.skewMs }

    for (const ev of tf.events) {
      if (ev.kind === 'burst') {
        // A device flushing a backlog: `count` readings back to back, time-stamped inside this tick.
        this.count(device, 'burst', 'injected', to)
        const step = Math.max(1, Math.floor((to - from) / (ev.count + 1)))
        for (let j = 0; j < ev.count; j++) {
          await this.deliver(device, { ...reading, rr_intervals_ms: [], measured_at: reading.measured_at - (ev.count - j) * step }, true)
        }
      } else {
        for (let j = 0; j < ev.count; j++) {
          let outcome: FaultOutcome = 'not_applicable'
          try { outcome = await transport.inject(device, ev.kind as Exclude<InstantFaultKind, 'burst'>, reading) } catch { /* counted as not applicable */ }
          this.count(device, ev.kind, outcome, to)
        }
      }
    }
    await this.deliver(device, reading, false)
  }

  private async sleepUntil (due: number): Promise<boolean> {
    const signal = this.options.signal
    if (signal?.aborted === true) return false
    const wait = due - Date.now()
    if (wait <= 0) return true
    return await new Promise<boolean>(resolve => {
      const timer = setTimeout(() => { signal?.removeEventListener('abort', onAbort); resolve(true) }, wait)
      const onAbort = (): void => { clearTimeout(timer); resolve(false) }
      signal?.addEventListener('abort', onAbort, { once: true })
    })
  }

  /** Runs until the duration has passed or the signal aborts; returns the final stats. */
  async run (): Promise<DeviceStats[]> {
    const o = this.options
    const realtime = o.realtime ?? true
    const t0 = Date.now()
    const startAt = o.startAt ?? t0
    const limitMs = o.durationS === undefined ? Infinity : o.durationS * 1000

    if (o.replay !== undefined) {
      const rec = o.replay
      const first = (rec[0] as RecordedReading).measured_at
      let prev = 0
      for (const r of rec) {
        const offset = r.measured_at - first
        if (offset > limitMs) break
        if (realtime && !await this.sleepUntil(t0 + offset)) break
        if (!realtime && o.signal?.aborted === true) break
        const base: SimReading = {
          measured_at: o.rebase === true ? startAt + offset : r.measured_at,
          heart_rate: r.heart_rate,
          rr_intervals_ms: r.rr_intervals_ms ?? [],
          sensor_contact: r.heart_rate > 0
        }
        await Promise.all(o.devices.map(async d => { await this.step(d.index, prev, offset === prev ? prev + 1 : offset, base) }))
        this.emit('event', { type: 'tick', offset_ms: offset })
        prev = offset === prev ? prev + 1 : offset
      }
      await this.restoreLinks(prev)
      return this.stats
    }

    const tickMs = 1000 / o.rateHz
    for (let k = 1; ; k++) {
      const offset = k * tickMs
      if (offset > limitMs) break
      if (realtime && !await this.sleepUntil(t0 + offset)) break
      if (!realtime && o.signal?.aborted === true) break
      await Promise.all(o.devices.map(async d => {
        const sample = (this.models[d.index] as HeartModel).next()
        await this.step(d.index, offset - tickMs, offset, {
          measured_at: Math.round(startAt + sample.offset_ms),
          heart_rate: sample.heart_rate,
          rr_intervals_ms: sample.rr_intervals_ms,
          energy_expended_kj: sample.energy_expended_kj,
          battery_percent: sample.battery_percent,
          sensor_contact: sample.sensor_contact
        })
      }))
      this.emit('event', { type: 'tick', offset_ms: offset })
    }
    await this.restoreLinks(limitMs)
    return this.stats
  }

  /** Devices still down at the end are brought back, so the transport closes cleanly. */
  private async restoreLinks (at: number): Promise<void> {
    for (const [device, kind] of this.down.entries()) {
      if (kind === null) continue
      await this.options.transport.link(device, true, kind).catch(() => 'not_applicable')
      this.emit('event', { type: 'link', device, up: true, kind, at })
      this.down[device] = null
    }
  }
}
