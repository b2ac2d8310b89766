// Worker: the reference's one subscriber. Subscribes to every device topic
// on the bare broker and records (device index, measured_at, receipt time),
// the same receipts ws-viewers.ts records from hr-relay.
import mqtt, { type MqttClient } from 'mqtt'
import { parseDeviceTopic } from '../../firmware-protocol/mqtt.ts'
import { now, serve } from '../lib/proc.ts'
import type { Receipts } from './ws-viewers.ts'

let client: MqttClient | null = null
let index = new Map<string, number>()
let labels: number[] = []
let measured: number[] = []
let rates: number[] = []
let times: number[] = []
let garbage = 0
let recording = false

async function open (port: number, deviceIds: string[]): Promise<void> {
  index = new Map(deviceIds.map((id, i) => [id, i]))
  client = mqtt.connect({ host: '127.0.0.1', port, clientId: 'bench-ref-subscriber', clean: true, reconnectPeriod: 0 })
  await new Promise<void>((resolve, reject) => { client?.once('connect', () => { resolve() }); client?.once('error', reject) })
  client.on('message', (topic, payload) => {
    const t = now()
    if (!recording) return
    const d = parseDeviceTopic(topic)
    const i = d === null ? undefined : index.get(d.device_id)
    let m: any
    try { m = JSON.parse(payload.toString('utf8')) } catch { garbage++; return }
    if (i === undefined || typeof m?.measured_at !== 'number') { garbage++; return }
    labels.push(i); measured.push(m.measured_at); rates.push(Number(m.heart_rate)); times.push(t)
  })
  await client.subscribeAsync('hr-relay/v1/devices/+/heart_rate', { qos: 1 })
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
  await client?.endAsync(true)
  client = null
}

serve({ open, start, count, peek, collect, close, reset: close })
