// The e2e-latency scenario's "bare Aedes + sync batch" (bench/workers/
// aedes-ref.ts, start({ durable: true })): bare Aedes that acknowledges and
// forwards a reading only once a LevelDB sync batch holds it. Its figures say what
// durability alone costs, so it must really store before it answers, and the
// plain reference must not.
import t from 'tap'
import mqtt from 'mqtt'
import { WebSocket } from 'ws'
import { Worker } from '../../bench/lib/proc.ts'
import { SyncBatches } from '../../bench/lib/sync-batches.ts'

const TOPIC = (i: number): string => `hr-relay/v1/devices/durable${i}/heart_rate`

async function connected (port: number, clientId: string): Promise<mqtt.MqttClient> {
  const c = mqtt.connect({ host: '127.0.0.1', port, clientId, clean: true, reconnectPeriod: 0 })
  await new Promise<void>((resolve, reject) => { c.once('connect', () => { resolve() }); c.once('error', reject) })
  return c
}

t.test('bare Aedes + sync batch acknowledges and forwards only stored readings, grouped into sync batches', async t => {
  const broker = await Worker.start('workers/aedes-ref.ts')
  t.teardown(async () => { await broker.stop() })
  const port = await broker.call<number>('start', { durable: true })
  const sub = await connected(port, 'durable-sub')
  const pub = await connected(port, 'durable-pub')
  t.teardown(async () => { await pub.endAsync(true); await sub.endAsync(true) })
  const got: string[] = []
  sub.on('message', (_topic, payload) => { got.push(payload.toString('utf8')) })
  await sub.subscribeAsync('hr-relay/v1/devices/+/heart_rate', { qos: 1 })

  await pub.publishAsync(TOPIC(0), '{"heart_rate":71}', { qos: 1 })
  // The PUBACK came after the batch that holds the reading was durable.
  t.same(await broker.call('counts'), { batches: 1, stored: 1 })

  // A burst of 50: every one acknowledged and stored, never more batches than readings.
  await Promise.all(Array.from({ length: 50 }, async (_, i) => await pub.publishAsync(TOPIC(i + 1), `{"heart_rate":${80 + (i % 50)}}`, { qos: 1 })))
  const after = await broker.call<{ batches: number, stored: number }>('counts')
  t.equal(after.stored, 51)
  t.ok(after.batches >= 2 && after.batches <= 51, `2..51 sync batches (got ${after.batches})`)

  // Forwarded after storing: all 51 reach the subscriber.
  while (got.length < 51) await new Promise(resolve => sub.once('message', resolve))
  t.equal(got.length, 51)
  t.equal(got[0], '{"heart_rate":71}')

  // stop() closes and removes the store; a new start is a fresh store.
  await broker.call('stop')
  const again = await broker.call<number>('start', { durable: true })
  t.ok(again > 0)
  t.same(await broker.call('counts'), { batches: 0, stored: 0 })
})

t.test('the plain reference stores nothing', async t => {
  const broker = await Worker.start('workers/aedes-ref.ts')
  t.teardown(async () => { await broker.stop() })
  const port = await broker.call<number>('start')
  const pub = await connected(port, 'plain-pub')
  t.teardown(async () => { await pub.endAsync(true) })
  await pub.publishAsync(TOPIC(0), '{"heart_rate":71}', { qos: 1 })
  t.same(await broker.call('counts'), { batches: 0, stored: 0 })
})

t.test('bare ws + sync batch forwards a message only once it is stored', async t => {
  const server = await Worker.start('workers/ws-broadcast-ref.ts')
  t.teardown(async () => { await server.stop() })
  const port = await server.call<number>('start', { durable: true })
  const viewer = new WebSocket(`ws://127.0.0.1:${port}/view/a`)
  const pub = new WebSocket(`ws://127.0.0.1:${port}/publish/a`)
  t.teardown(() => { viewer.close(); pub.close() })
  await Promise.all([viewer, pub].map(async s => await new Promise(resolve => s.addEventListener('open', resolve, { once: true }))))
  const got: string[] = []
  const first = new Promise(resolve => viewer.addEventListener('message', e => { got.push(String(e.data)); resolve(undefined) }, { once: true }))
  pub.send('{"heart_rate":64}')
  await first
  t.same(got, ['{"heart_rate":64}'])
  t.same(await server.call('counts'), { batches: 1, stored: 1 })
})

t.test('the reference subscriber per device: one connection a device, each on its own topic, QoS 0', async t => {
  const broker = await Worker.start('workers/aedes-ref.ts')
  const sub = await Worker.start('workers/mqtt-subscriber.ts')
  t.teardown(async () => { await sub.stop(); await broker.stop() })
  const port = await broker.call<number>('start', { durable: true })
  const ids = ['pd0', 'pd1', 'pd2']
  await sub.call('open', port, ids, true)
  t.equal(await broker.call('clients'), 3, 'three subscriber connections')
  await sub.call('start')
  const pub = await connected(port, 'per-device-pub')
  t.teardown(async () => { await pub.endAsync(true) })
  // The reading of a device it does not subscribe to goes first: one subscriber on every topic would get it,
  // on its one connection, before the three others, and count it as garbage before their count is reached.
  const readings: Array<[string, number]> = [['not-subscribed', 3], ...ids.map((id, i): [string, number] => [id, i])]
  for (const [id, i] of readings) {
    await pub.publishAsync(`hr-relay/v1/devices/${id}/heart_rate`, `{"measured_at":${1000 + i},"heart_rate":${60 + i}}`, { qos: 1 })
  }
  // The acknowledged readings are forwarded; the subscriber has them once their count is reached.
  while (await sub.call<number>('count') < 3) await new Promise(resolve => setImmediate(resolve))
  const r = await sub.call<{ labels: Record<string, number>, measuredAt: Record<string, number>, garbage: number }>('collect')
  t.same(Object.values(r.labels).sort(), [0, 1, 2], 'each device once, by its index')
  t.same(Object.values(r.measuredAt).sort(), [1000, 1001, 1002])
  t.equal(r.garbage, 0, 'nothing from a device it does not subscribe to')
  t.same(await broker.call('counts'), { batches: 4, stored: 4 })
})

t.test('SyncBatches: a message is done once its sync batch is written; messages that arrive meanwhile form the next batch', async t => {
  const store = await SyncBatches.open()
  t.teardown(async () => { await store.close() })
  const add = async (prefix: string, text: string): Promise<void> => { await new Promise<void>((resolve, reject) => { store.add(prefix, Buffer.from(text), err => { if (err === null) resolve(); else reject(err) }) }) }
  await add('dev1', '{"heart_rate":72}')
  t.same({ batches: store.batches, stored: store.stored }, { batches: 1, stored: 1 })
  // Ten at once: the first starts a batch alone, the nine that arrive while it is written go together in the next.
  await Promise.all(Array.from({ length: 10 }, async (_, i) => { await add(`dev${i}`, `{"heart_rate":${60 + i}}`) }))
  t.same({ batches: store.batches, stored: store.stored }, { batches: 3, stored: 11 })
})
