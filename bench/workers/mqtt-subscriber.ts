// Worker: the references' receivers. open(port, ids) is bare Aedes's one
// subscriber on every device topic; open(port, ids, true) is a connection per
// device on its own topic, at QoS 0 (as hr-relay's WebSocket viewers, one per
// user, acknowledge nothing). Either way it records (device index,
// measured_at, receipt time), the same receipts ws-viewers.ts records from
// hr-relay.
import mqtt, { type MqttClient } from 'mqtt'
import { parseDeviceTopic } from '../../firmware-protocol/mqtt.ts'
import { now, serve } from '../lib/proc.ts'
import type { Receipts } from './ws-viewers.ts'

/** Its connections: the one subscriber, or one per device. */
let clients: MqttClient[] = []
let index = new Map<string, number>()
let labels: number[] = []
let measured: number[] = []
let rates: number[] = []
let times: number[] = []
let garbage = 0
let recording = false

async function connected (port: number, clientId: string, keepalive?: number): Promise<MqttClient> {
  const c = mqtt.connect({ host: '127.0.0.1', port, clientId, clean: true, reconnectPeriod: 0, ...(keepalive === undefined ? {} : { keepalive }) })
  clients.push(c)
  await new Promise<void>((resolve, reject) => { c.once('connect', () => { resolve() }); c.once('error', reject) })
  c.on('message', onMessage)
  return c
}

async function open (port: number, deviceIds: string[], perDevice = false): Promise<void> {
  index = new Map(deviceIds.map((id, i) => [id, i]))
  if (!perDevice) {
    const client = await connected(port, 'bench-ref-subscriber')
    await client.subscribeAsync('hr-relay/v1/devices/+/heart_rate', { qos: 1 })
    return
  }
  // 100 at a time; no keep-alive pings (hr-relay's viewers get one every 30 s, none in a window).
  for (let i = 0; i < deviceIds.length; i += 100) {
    await Promise.all(deviceIds.slice(i, i + 100).map(async id => {
      const c = await connected(port, `bench-ref-subscriber-${id}`, 0)
      await c.subscribeAsync(`hr-relay/v1/devices/${id}/heart_rate`, { qos: 0 })
    }))
  }
}

function onMessage (topic: string, payload: Buffer): void {
  const t = now()
  if (!recording) return
  const d = parseDeviceTopic(topic)
  const i = d === null ? undefined : index.get(d.device_id)
  let m: any
  try { m = JSON.parse(payload.toString('utf8')) } catch { garbage++; return }
  if (i === undefined || typeof m?.measured_at !== 'number') { garbage++; return }
  labels.push(i); measured.push(m.measured_at); rates.push(Number(m.heart_rate)); times.push(t)
}

function start (): void {
  labels = []; measured = []; rates = []; times = []; garbage = 0
  recording = true
}

/** Receipts recorded so far (recording goes on). */
function peek (): Receipts {
  return { labels: Int32Array.from(labels), measuredAt: Float64Array.from(measured), heartRates: Float64Array.from(rates), times: Float64Array.from(times), closed: 0, garbage }
}

function collect (): Receipts {
  recording = false
  return peek()
}

function count (): number { return times.length }

async function close (): Promise<void> {
  const all = clients
  clients = []
  await Promise.all(all.map(async c => { await c.endAsync(true) }))
}

serve({ open, start, count, peek, collect, close, reset: close })
