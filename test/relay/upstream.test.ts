// The upstream bridge against a real Mosquitto: readings keep flowing into a
// persistent LevelDB queue while the upstream is down, across a restart of
// the relay, and each reaches the upstream subscriber exactly once.
import t from 'tap'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pino from 'pino'
import mqtt, { type MqttClient } from 'mqtt'
import { Mosquitto } from '../helpers/mosquitto.ts'
import { startTestService } from '../helpers/service.ts'
import { Store } from '../../api/store/db.ts'
import { Metrics } from '../../relay/metrics.ts'
import { UpstreamBridge, upstreamPayload, upstreamTopic } from '../../relay/upstream.ts'
import type { StoredReading } from '../../api/pipeline/reading.ts'

interface Received { topic: string, body: string }

/** A QoS 1 subscriber with a persistent session (clean: false), so Mosquitto queues for it while it is away. */
class Watcher {
  readonly messages: Received[] = []
  private waiters: Array<{ n: number, resolve: () => void }> = []
  private constructor (readonly client: MqttClient) {
    client.on('message', (topic, body) => {
      this.messages.push({ topic, body: body.toString() })
      for (const w of this.waiters.filter(w => this.messages.length >= w.n)) w.resolve()
      this.waiters = this.waiters.filter(w => this.messages.length < w.n)
    })
  }

  static async start (t: { teardown (fn: () => unknown): void }, url: string, topic: string): Promise<Watcher> {
    const client = mqtt.connect(url, { protocolVersion: 4, clientId: `watcher-${process.pid}-${Date.now()}`, clean: false, reconnectPeriod: 250 })
    t.teardown(() => { client.end(true) })
    const w = new Watcher(client)
    await new Promise<void>((resolve, reject) => { client.once('connect', () => { resolve() }); client.once('error', reject) })
    const granted = await client.subscribeAsync(topic, { qos: 1 })
    if (granted[0]?.qos !== 1) throw new Error('watcher subscription not granted at QoS 1')
    return w
  }

  /** Resolves on the next CONNACK (the session is resumed from Mosquitto's persistence). */
  async reconnected (): Promise<void> {
    await new Promise<void>(resolve => { this.client.once('connect', () => { resolve() }) })
  }

  async count (n: number): Promise<void> {
    if (this.messages.length >= n) return
    await new Promise<void>(resolve => { this.waiters.push({ n, resolve }) })
  }
}

const BASE = Date.now() - 3_600_000

t.test('stop Mosquitto, keep ingesting, restart the relay and Mosquitto: every reading arrives upstream exactly once', async t => {
  const mosquitto = await Mosquitto.create(t)
  await mosquitto.start()
  const prefix = 'gym-7/hr-relay/v1'
  const watcher = await Watcher.start(t, mosquitto.url, `${prefix}/#`)
  const dataDir = await mkdtemp(join(tmpdir(), 'hr-relay-upstream-'))
  t.teardown(async () => { await rm(dataDir, { recursive: true, force: true }) })
  const config = { data_dir: dataDir, upstream: { url: mosquitto.url, topic_prefix: prefix } }

  let svc = await startTestService(t, config)
  const profile = await svc.user('alice')
  const expected: string[] = []
  const ingest = async (from: number, to: number): Promise<void> => {
    for (let i = from; i < to; i++) {
      const reading = { profile_id: profile, measured_at: BASE + i * 1000, heart_rate: 60 + (i % 100), source: 'http' as const }
      const result = await svc.service.services.pipeline.submit(reading)
      if (result.status !== 'stored') throw new Error(`reading ${i} not stored: ${JSON.stringify(result)}`)
      expected.push(JSON.stringify({ measured_at: reading.measured_at, data: { heart_rate: reading.heart_rate }, source: 'http' }))
    }
  }

  await ingest(0, 10)
  await watcher.count(10)

  await mosquitto.stop()
  await ingest(10, 25)
  const health = await (await fetch(`${svc.url}/health`)).json() as { sources: unknown[] }
  t.match(health.sources, [{ id: 'upstream' }], 'the bridge reports its state in /health')
  // The relay restarts while the upstream is still down: the queue is on disk.
  await svc.stop()
  t.equal(watcher.messages.length, 10, 'nothing arrived while Mosquitto was down')

  // Mosquitto may redeliver (QoS 1 allows it) what it had queued for an offline subscriber after
  // its own next restart, so the watcher is back before the relay is: what it counts is what the relay sent.
  let back = watcher.reconnected()
  await mosquitto.start()
  await back
  svc = await startTestService(t, config)
  await ingest(25, 30)
  await watcher.count(30)

  // Down again without a relay restart: mqtt.js reconnects and the pump resumes.
  await mosquitto.stop()
  await ingest(30, 40)
  back = watcher.reconnected()
  await mosquitto.start()
  await back
  await watcher.count(40)

  // A last reading: everything queued before it has arrived once it arrives (sent in order).
  await ingest(40, 41)
  await watcher.count(41)
  const sentinel = expected[40]
  t.ok(watcher.messages.some(m => m.body === sentinel))
  t.equal(watcher.messages.length, 41, 'no duplicates')
  t.same(watcher.messages.map(m => m.body).sort(), [...expected].sort(), 'each reading exactly once')
  t.same(new Set(watcher.messages.map(m => m.topic)), new Set([`${prefix}/users/${profile}/heart_rate`]))
  const metrics = await (await fetch(`${svc.url}/metrics`)).text()
  t.match(metrics, /hr_relay_upstream_sent_total \d+\n/)
  // At stop the bridge waits for the PUBACKs in flight: the queue on disk is empty.
  await svc.stop()
  const store = await Store.open(dataDir)
  const left: string[] = []
  for await (const key of store.sub('upstream_queue').keys()) left.push(key)
  await store.close()
  t.same(left, [], 'nothing left in the upstream queue')
})

t.test('a full queue drops the oldest readings and counts them; the rest are delivered in order', async t => {
  const mosquitto = await Mosquitto.create(t)
  await mosquitto.start()
  const watcher = await Watcher.start(t, mosquitto.url, 'q/#')
  // The watcher's session survives the stop; the bridge then starts against a broker that is down.
  await mosquitto.stop()
  const dir = await mkdtemp(join(tmpdir(), 'hr-relay-upstream-q-'))
  const store = await Store.open(dir)
  const metrics = new Metrics()
  const bridge = new UpstreamBridge({ url: mosquitto.url, topic_prefix: 'q', queue_max: 5 }, { store, log: pino({ level: 'silent' }), metrics, reconnectPeriodMs: 200 })
  t.teardown(async () => { await bridge.stop(); await store.close(); await rm(dir, { recursive: true, force: true }) })
  await bridge.start()
  const readings: StoredReading[] = Array.from({ length: 12 }, (_, i) => ({ profile_id: 'p1', measured_at: BASE + i, heart_rate: 100 + i, source: 'ble', device_id: 'C8:2F:9A:11:22:33' }))
  for (const r of readings) bridge.enqueue(r)
  await bridge.flushed()
  t.equal(bridge.queued, 5)
  const text = (await metrics.text()).body
  t.match(text, /hr_relay_upstream_dropped_total 7\n/)
  t.match(text, /hr_relay_upstream_queue_length 5\n/)
  t.equal(bridge.health().state, 'degraded')

  await mosquitto.start()
  await watcher.count(5)
  t.same(watcher.messages, readings.slice(7).map(r => ({ topic: upstreamTopic('q', 'p1'), body: upstreamPayload(r) })))
  t.equal(watcher.messages[0]?.body, '{"measured_at":' + String(BASE + 7) + ',"data":{"heart_rate":107},"source":"ble","device_id":"C8:2F:9A:11:22:33"}')
})
