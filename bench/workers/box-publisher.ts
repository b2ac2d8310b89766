// Worker: simulated boxes of a chain, each an MQTT connection that forwards readings as a box's upstream does
// (relay/upstream.ts: QoS 1, at most 32 in flight, the rest queued in order), at a total rate spread over the
// boxes. Counts what the broker acknowledged: what a real box then deletes from its queue, so what the hub
// must hold.
import mqtt from 'mqtt'
import { chainBoxPrefix, upstreamPayload, upstreamTopic } from '../../firmware-protocol/upstream.ts'
import { serve } from '../lib/proc.ts'

const WINDOW = 32
const TICK_MS = 10

interface Box { id: string, prefix: string, client: mqtt.MqttClient, profiles: string[], queue: Array<[string, string]>, inflight: number }

let boxes: Box[] = []
let acked = 0
let published = 0
let base = Date.now() - 3_600_000
let seq = 0
/** Profiles whose readings' times of acknowledgement are kept (`profile|measured_at` → ms since the epoch). */
let watched = new Set<string>()
const ackedAt = new Map<string, number>()
const clock = (): number => performance.timeOrigin + performance.now()

async function connect (o: { url: string, root: string, boxes: number, profilesPerBox: number }): Promise<void> {
  boxes = await Promise.all(Array.from({ length: o.boxes }, async (_, i) => {
    const id = `bench-box-${i}`
    const client = mqtt.connect(o.url, { clientId: id, clean: false, reconnectPeriod: 250, protocolVersion: 4 })
    client.on('error', () => {})
    await new Promise<void>(resolve => { client.once('connect', () => { resolve() }) })
    const profiles = Array.from({ length: o.profilesPerBox }, (_, k) => `p-${i}-${k}`)
    return { id, prefix: chainBoxPrefix(o.root, id), client, profiles, queue: [], inflight: 0 }
  }))
}

function pump (box: Box): void {
  while (box.inflight < WINDOW && box.queue.length > 0) {
    const [topic, payload] = box.queue.shift()!
    box.inflight++
    box.client.publish(topic, payload, { qos: 1 }, err => {
      box.inflight--
      if (err === undefined || err === null) acked++
      else box.queue.unshift([topic, payload])
      pump(box)
    })
  }
}

/** Offers `ratePerSecond` readings for `durationS`; resolves when every one is acknowledged by the broker. */
async function run (o: { ratePerSecond: number, durationS: number }): Promise<{ published: number, acked: number, publishMs: number }> {
  const t0 = Date.now()
  const total = Math.round(o.ratePerSecond * o.durationS)
  const start = { published, acked }
  let sent = 0
  await new Promise<void>(resolve => {
    const timer = setInterval(() => {
      const due = Math.min(total, Math.round((Date.now() - t0) / 1000 * o.ratePerSecond))
      while (sent < due) {
        const box = boxes[sent % boxes.length]!
        const profile = box.profiles[Math.floor(sent / boxes.length) % box.profiles.length]!
        const at = base + seq++
        // A box acknowledges a reading once stored and then queues it for its upstream: this is that moment.
        if (watched.has(profile)) ackedAt.set(`${profile}|${at}`, clock())
        box.queue.push([upstreamTopic(box.prefix, profile), upstreamPayload({ measured_at: at, heart_rate: 60 + (sent % 120), source: 'ble' })])
        sent++
        published++
        pump(box)
      }
      if (sent >= total) { clearInterval(timer); resolve() }
    }, TICK_MS)
  })
  const publishMs = Date.now() - t0
  while (acked - start.acked < total) await new Promise(resolve => setTimeout(resolve, 5))
  return { published: published - start.published, acked: acked - start.acked, publishMs }
}

async function stop (): Promise<void> {
  await Promise.all(boxes.map(async b => { await b.client.endAsync() }))
  boxes = []
}

/** The profile ids of the simulated boxes (`p-<box>-<k>`), so that a bench can open their streams. */
async function profiles (): Promise<string[]> {
  return boxes.flatMap(b => b.profiles)
}

/** Keeps the acknowledgement times of these profiles' readings from now on. */
async function watch (o: { profiles: string[] }): Promise<void> {
  watched = new Set(o.profiles)
  ackedAt.clear()
}

/** The acknowledgement times kept since `watch`: [profile|measured_at, ms since the epoch]. */
async function acknowledgedAt (): Promise<Array<[string, number]>> {
  return [...ackedAt]
}

serve({ connect, run, stop, profiles, watch, acknowledgedAt, reset: async () => { await stop(); acked = 0; published = 0; base = Date.now() - 3_600_000; seq = 0; ackedAt.clear() } })
