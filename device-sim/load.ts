// The load generator the benchmarks use: thousands of MQTT devices from one
// process, each on its own connection with its own credentials, publishing
// one reading per period at QoS 1. Counts are exact: `sent` is every
// PUBLISH handed to a connected client, `acked` every PUBACK received,
// `failed` every publish whose callback reported an error, and `in_flight`
// what was still unacknowledged when the drain timeout ended the run
// (sent = acked + failed + in_flight).
import mqtt, { type MqttClient } from 'mqtt'
import { deviceHeartRateTopic, encodeDevicePayload } from '../firmware-protocol/mqtt.ts'
import type { DeviceCredentials } from './admin-client.ts'
import { HeartModel, makePerson } from './physiology.ts'
import { deriveSeed } from './random.ts'
import type { Scenario } from './scenario.ts'

export interface LoadOptions {
  url: string
  credentials: DeviceCredentials[]
  /** Readings per second per device. Default 1. */
  rateHz?: number
  /** Seconds of publishing once every device has tried to connect. */
  durationS: number
  qos?: 0 | 1
  seed?: number
  scenario?: Scenario
  /** Connections opened at once. Default 50. */
  connectConcurrency?: number
  /** How long to wait for outstanding PUBACKs after the last publish. Default 30 s. */
  drainTimeoutMs?: number
  signal?: AbortSignal
  /** Called about once a second while publishing. */
  onProgress?: (stats: LoadStats) => void
}

export interface LoadStats {
  devices: number
  connected: number
  connect_failed: number
  /** Publishes skipped because the device's connection was down at its tick. */
  skipped: number
  sent: number
  acked: number
  failed: number
  in_flight: number
  publish_ms: number
  qos: 0 | 1
}

const STEADY: Scenario = { name: 'load', loop: true, phases: [{ kind: 'steady', duration_s: 3600, intensity: 0.5 }] }

async function connectOne (url: string, cred: DeviceCredentials): Promise<MqttClient | null> {
  const client = mqtt.connect(url, {
    clientId: cred.device_id,
    username: cred.mqtt_username,
    password: cred.mqtt_password,
    clean: true,
    reconnectPeriod: 0,
    connectTimeout: 30_000,
    keepalive: 60
  })
  client.on('error', () => {})
  const ok = await new Promise<boolean>(resolve => {
    client.once('connect', () => resolve(true))
    client.once('error', () => resolve(false))
    client.once('close', () => resolve(false))
  })
  if (ok) return client
  await client.endAsync(true).catch(() => {})
  return null
}

export async function runLoad (o: LoadOptions): Promise<LoadStats> {
  const qos = o.qos ?? 1
  const rate = o.rateHz ?? 1
  const periodMs = 1000 / rate
  const stats: LoadStats = { devices: o.credentials.length, connected: 0, connect_failed: 0, skipped: 0, sent: 0, acked: 0, failed: 0, in_flight: 0, publish_ms: 0, qos }
  const clients: Array<MqttClient | null> = new Array(o.credentials.length).fill(null)

  // Connect in bounded batches so the broker's accept queue is not flooded.
  const concurrency = o.connectConcurrency ?? 50
  let next = 0
  await Promise.all(Array.from({ length: Math.min(concurrency, o.credentials.length) }, async () => {
    while (next < o.credentials.length && o.signal?.aborted !== true) {
      const i = next++
      const c = await connectOne(o.url, o.credentials[i] as DeviceCredentials)
      clients[i] = c
      if (c === null) stats.connect_failed++
      else stats.connected++
    }
  }))

  const seed = o.seed ?? 1
  const models = o.credentials.map((_c, i) => new HeartModel(makePerson(seed, i), o.scenario ?? STEADY, { tick_ms: periodMs, seed: deriveSeed(seed, 'heart', i) }))
  const topics = o.credentials.map(c => deviceHeartRateTopic(c.device_id))
  let settle: (() => void) | null = null
  const settled = (): void => { if (settle !== null && stats.acked + stats.failed === stats.sent) settle() }

  const publish = (i: number): void => {
    const client = clients[i]
    const sample = (models[i] as HeartModel).next()
    if (client === null || client === undefined || !client.connected) { stats.skipped++; return }
    stats.sent++
    const payload = encodeDevicePayload({ measured_at: Date.now(), heart_rate: sample.heart_rate, ...(sample.rr_intervals_ms.length > 0 ? { rr_intervals_ms: sample.rr_intervals_ms } : {}) })
    client.publish(topics[i] as string, payload, { qos }, err => {
      if (err === undefined || err === null) stats.acked++
      else stats.failed++
      settled()
    })
  }

  // Each device ticks on its own phase within the period, so publishes spread evenly.
  const started = Date.now()
  const endAt = started + o.durationS * 1000
  const timers: NodeJS.Timeout[] = []
  await new Promise<void>(resolve => {
    const n = o.credentials.length
    for (let i = 0; i < n; i++) {
      const phase = (i / Math.max(1, n)) * periodMs
      timers.push(setTimeout(function tick (k: number) {
        if (o.signal?.aborted === true) return
        const due = started + phase + k * periodMs
        if (due >= endAt) return
        publish(i)
        const nextDue = started + phase + (k + 1) * periodMs
        timers[i] = setTimeout(tick, Math.max(0, nextDue - Date.now()), k + 1)
      }, phase, 0))
    }
    const progress = setInterval(() => { o.onProgress?.({ ...stats, in_flight: stats.sent - stats.acked - stats.failed }) }, 1000)
    const finish = (): void => { clearInterval(progress); clearTimeout(endTimer); o.signal?.removeEventListener('abort', finish); resolve() }
    const endTimer = setTimeout(finish, o.durationS * 1000 + periodMs)
    o.signal?.addEventListener('abort', finish, { once: true })
  })
  for (const t of timers) clearTimeout(t)
  stats.publish_ms = Date.now() - started

  // Drain: wait for every outstanding PUBACK, or the drain timeout.
  if (stats.acked + stats.failed < stats.sent) {
    await new Promise<void>(resolve => {
      const timer = setTimeout(() => { settle = null; resolve() }, o.drainTimeoutMs ?? 30_000)
      settle = () => { clearTimeout(timer); settle = null; resolve() }
    })
  }
  stats.in_flight = stats.sent - stats.acked - stats.failed
  // Freeze the counts before closing: a forced end fails whatever is still in flight.
  const final = { ...stats }
  await Promise.all(clients.map(async c => { if (c !== null) await c.endAsync(true).catch(() => {}) }))
  return final
}
