// Worker: MQTT devices with per-message timing. device-sim/load.ts (the
// simulator's load generator) counts sends and PUBACKs; latency needs the
// high-resolution time of every single publish and of its PUBACK, which this
// generator records. One connection per device, each with its own
// credentials; publishes are spread evenly over the period.
import mqtt, { type MqttClient } from 'mqtt'
import { deviceHeartRateTopic, encodeDevicePayload } from '../../firmware-protocol/mqtt.ts'
import { now, serve } from '../lib/proc.ts'

export interface DeviceLogin { device_id: string, mqtt_username?: string, mqtt_password?: string }

export interface PublishPlan {
  /** Total publishes per second over all devices. */
  rate: number
  durationMs: number
  qos: 0 | 1
  /** Record the send time of every publish by `${deviceIndex}:${measured_at}`. */
  recordSends: boolean
  /** measured_at: 'clock' = Date.now() (at least last + 1); 'sequence' = base + 1 ms per publish of the device. */
  measuredAt: 'clock' | 'sequence'
  sequenceBase?: number
  /** How long to wait for outstanding PUBACKs at the end. */
  drainMs: number
}

export interface PublishReport {
  sent: number
  acked: number
  failed: number
  unacked: number
  /** PUBACK latency of every acknowledged QoS 1 publish (ms). */
  ackLatencies: Float64Array
  sends: Map<string, number>
  disconnects: number
  /** Achieved send rate (publishes / s). */
  achievedRate: number
  /** How far the generator's timer lagged behind its schedule at worst (ms). */
  maxLagMs: number
}

let clients: MqttClient[] = []
let topics: string[] = []
let lastAt: number[] = []
let disconnects = 0

async function connectOne (port: number, d: DeviceLogin): Promise<MqttClient> {
  const client = mqtt.connect({
    host: '127.0.0.1',
    port,
    clientId: d.device_id,
    ...(d.mqtt_username === undefined ? {} : { username: d.mqtt_username, password: d.mqtt_password }),
    clean: true,
    reconnectPeriod: 0,
    connectTimeout: 60_000,
    keepalive: 120
  })
  await new Promise<void>((resolve, reject) => {
    client.once('connect', () => { resolve() })
    client.once('error', err => { reject(new Error(`device ${d.device_id} could not connect: ${err.message}`)) })
    client.once('close', () => { reject(new Error(`device ${d.device_id}: connection closed before CONNACK`)) })
  })
  client.removeAllListeners('error')
  client.on('error', () => {})
  client.on('close', () => { disconnects++ })
  return client
}

async function connect (port: number, devices: DeviceLogin[], concurrency = 8): Promise<number> {
  clients = new Array(devices.length)
  topics = devices.map(d => deviceHeartRateTopic(d.device_id))
  lastAt = devices.map(() => 0)
  disconnects = 0
  let next = 0
  await Promise.all(Array.from({ length: Math.min(concurrency, devices.length) }, async () => {
    while (next < devices.length) {
      const i = next++
      clients[i] = await connectOne(port, devices[i] as DeviceLogin)
    }
  }))
  return clients.length
}

async function publish (plan: PublishPlan): Promise<PublishReport> {
  const n = clients.length
  if (n === 0) throw new Error('no devices connected')
  const intervalMs = 1000 / plan.rate
  const total = Math.floor(plan.durationMs / intervalMs)
  const ack: number[] = []
  const sends = new Map<string, number>()
  let sent = 0; let acked = 0; let failed = 0
  let maxLag = 0
  let settle: (() => void) | null = null
  const start = now()
  const seqBase = plan.sequenceBase ?? Date.now() - 3_600_000
  const send = (j: number): void => {
    const i = j % n
    const client = clients[i] as MqttClient
    let at: number
    if (plan.measuredAt === 'clock') {
      at = Math.max(Date.now(), (lastAt[i] as number) + 1)
    } else {
      at = Math.max(seqBase, (lastAt[i] as number) + 1)
    }
    lastAt[i] = at
    const payload = encodeDevicePayload({ measured_at: at, heart_rate: 60 + (j % 120) })
    const t0 = now()
    if (plan.recordSends) sends.set(`${i}:${at}`, t0)
    sent++
    client.publish(topics[i] as string, payload, { qos: plan.qos }, err => {
      if (err === undefined || err === null) {
        acked++
        if (plan.qos === 1) ack.push(now() - t0)
      } else failed++
      if (settle !== null && acked + failed === sent) settle()
    })
  }
  await new Promise<void>(resolve => {
    let j = 0
    const tick = (): void => {
      const elapsed = now() - start
      const due = Math.min(total, Math.floor(elapsed / intervalMs) + 1)
      if (due > j) maxLag = Math.max(maxLag, elapsed - j * intervalMs)
      while (j < due) send(j++)
      if (j >= total) { resolve(); return }
      setTimeout(tick, Math.max(1, Math.min(5, (j * intervalMs) - (now() - start))))
    }
    tick()
  })
  const publishMs = now() - start
  if (plan.qos === 1 && acked + failed < sent) {
    await new Promise<void>(resolve => {
      const timer = setTimeout(() => { settle = null; resolve() }, plan.drainMs)
      settle = () => { clearTimeout(timer); settle = null; resolve() }
    })
  }
  return {
    sent,
    acked,
    failed,
    unacked: plan.qos === 1 ? sent - acked - failed : 0,
    ackLatencies: Float64Array.from(ack),
    sends,
    disconnects,
    achievedRate: sent / (publishMs / 1000),
    maxLagMs: maxLag
  }
}

async function close (): Promise<void> {
  await Promise.all(clients.map(async c => { await c.endAsync(true).catch(() => {}) }))
  clients = []
}

serve({ connect, publish, close, reset: close })
