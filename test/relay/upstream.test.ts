// The upstream bridge against a real Mosquitto: readings keep flowing into a
// persistent LevelDB queue while the upstream is down, across a restart of
// the relay. What is asserted is what docs/integrations.md promises ("Upstream
// bridge"): every reading arrives at least once; after deduplication on the
// documented key (topic + measured_at) exactly the stored set arrives; and a
// duplicate only ever repeats an identical message. QoS 1 allows duplicates
// (a PUBACK lost with the link, a relay stopped before one came back), and on
// a loaded machine they do happen, so the test does not count them.
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

/** The deduplication key docs/integrations.md documents: the topic (box prefix and profile_id) and measured_at. */
function keyOf (m: Received): string {
  const parsed = JSON.parse(m.body) as { measured_at: number }
  return `${m.topic} ${parsed.measured_at}`
}

/** A QoS 1 subscriber with a persistent session (clean: false), so Mosquitto queues for it while it is away. */
class Watcher {
  readonly messages: Received[] = []
  /** First message seen for each key, in order of arrival. */
  readonly first = new Map<string, Received>()
  private waiters: Array<{ keys: string[], resolve: () => void }> = []
  private constructor (readonly client: MqttClient) {
    client.on('message', (topic, body) => {
      const m = { topic, body: body.toString() }
      this.messages.push(m)
      const key = keyOf(m)
      if (!this.first.has(key)) this.first.set(key, m)
      const done = this.waiters.filter(w => w.keys.every(k => this.first.has(k)))
      this.waiters = this.waiters.filter(w => !done.includes(w))
      for (const w of done) w.resolve()
    })
    // Refused connections while Mosquitto is stopped are expected; mqtt.js keeps reconnecting.
    client.on('error', () => {})
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

  /** Resolves once a message with each of these keys has arrived (duplicates do not count twice). */
  async received (keys: string[]): Promise<void> {
    if (keys.every(k => this.first.has(k))) return
    await new Promise<void>(resolve => { this.waiters.push({ keys, resolve }) })
  }
}

/**
 * The documented promise, checked on everything received: no message outside the expected set,
 * every expected message at least once, and every duplicate identical to the first of its key.
 */
function assertAtLeastOnce (t: Pick<typeof import('tap').default, 'same' | 'comment'>, messages: Received[], expected: Received[]): void {
  const expectedByKey = new Map(expected.map(m => [keyOf(m), m]))
  t.same(messages.filter(m => expectedByKey.get(keyOf(m))?.body !== m.body || expectedByKey.get(keyOf(m))?.topic !== m.topic), [],
    'every message received is one of the stored readings, byte for byte')
  const distinct = new Map<string, Received>()
  for (const m of messages) if (!distinct.has(keyOf(m))) distinct.set(keyOf(m), m)
  t.same([...distinct.keys()].sort(), [...expectedByKey.keys()].sort(), 'after deduplication on topic + measured_at: exactly the stored set')
  t.same(messages.filter(m => distinct.get(keyOf(m))?.body !== m.body), [], 'a duplicate repeats its first message exactly')
  t.comment(`${messages.length} messages for ${expected.length} readings (${messages.length - distinct.size} duplicates)`)
}

const BASE = Date.now() - 3_600_000

t.test('stop Mosquitto, keep ingesting, restart the relay and Mosquitto: every reading arrives upstream at least once, identical, and once after deduplication', async t => {
  const mosquitto = await Mosquitto.create(t)
  await mosquitto.start()
  const prefix = 'gym-7/hr-relay/v1'
  const watcher = await Watcher.start(t, mosquitto.url, `${prefix}/#`)
  const dataDir = await mkdtemp(join(tmpdir(), 'hr-relay-upstream-'))
  t.teardown(async () => { await rm(dataDir, { recursive: true, force: true }) })
  const config = { data_dir: dataDir, upstream: { url: mosquitto.url, topic_prefix: prefix } }

  let svc = await startTestService(t, config)
  const profile = await svc.user('alice')
  const topic = `${prefix}/users/${profile}/heart_rate`
  const expected: Received[] = []
  const keys = (from: number, to: number): string[] => expected.slice(from, to).map(keyOf)
  const ingest = async (from: number, to: number): Promise<void> => {
    for (let i = from; i < to; i++) {
      const reading = { profile_id: profile, measured_at: BASE + i * 1000, heart_rate: 60 + (i % 100), source: 'http' as const }
      const result = await svc.service.services.pipeline.submit(reading)
      if (result.status !== 'stored') throw new Error(`reading ${i} not stored: ${JSON.stringify(result)}`)
      expected.push({ topic, body: JSON.stringify({ measured_at: reading.measured_at, data: { heart_rate: reading.heart_rate }, source: 'http' }) })
    }
  }

  await ingest(0, 10)
  await watcher.received(keys(0, 10))

  await mosquitto.stop()
  await ingest(10, 25)
  const health = await (await fetch(`${svc.url}/health`)).json() as { sources: unknown[] }
  t.match(health.sources, [{ id: 'upstream' }], 'the bridge reports its state in /health')
  // The relay restarts while the upstream is still down: the queue is on disk.
  await svc.stop()
  t.same([...watcher.first.keys()], keys(0, 10), 'nothing arrived while Mosquitto was down')

  // Mosquitto may redeliver (QoS 1 allows it) what it had in flight to the watcher, so the
  // watcher is back before the relay is.
  let back = watcher.reconnected()
  await mosquitto.start()
  await back
  svc = await startTestService(t, config)
  await ingest(25, 30)
  await watcher.received(keys(0, 30))

  // Down again without a relay restart: mqtt.js reconnects and the pump resumes.
  await mosquitto.stop()
  await ingest(30, 40)
  back = watcher.reconnected()
  await mosquitto.start()
  await back
  await ingest(40, 41)
  await watcher.received(keys(0, 41))

  assertAtLeastOnce(t, watcher.messages, expected)
  const metrics = await (await fetch(`${svc.url}/metrics`)).text()
  t.match(metrics, /hr_relay_upstream_sent_total \d+\n/)
  // At stop the bridge waits for the PUBACKs in flight and their deletes: the queue on disk is empty.
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
  const delivered = readings.slice(7).map(r => ({ topic: upstreamTopic('q', 'p1'), body: upstreamPayload(r) }))
  await watcher.received(delivered.map(keyOf))
  t.same([...watcher.first.values()], delivered, 'the newest five, first arrivals in order')
  assertAtLeastOnce(t, watcher.messages, delivered)
  t.equal(watcher.first.values().next().value?.body, '{"measured_at":' + String(BASE + 7) + ',"data":{"heart_rate":107},"source":"ble","device_id":"C8:2F:9A:11:22:33"}')
})
