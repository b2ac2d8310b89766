// The reading contract through the whole service: a real mqtt client, the
// real broker, the real pipeline and LevelDB. Acknowledged means stored: a
// QoS 1 reading within the contract is stored whole once PUBACK arrived; one
// the relay will not store gets no PUBACK, is not stored, and is counted.
import t from 'tap'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import mqtt, { type MqttClient } from 'mqtt'
import { startTestService, type TestService } from '../../helpers/service.ts'
import { closed } from '../../helpers/broker.ts'

const DAY = 86_400_000
const TOPIC = 'hr-relay/v1/devices/esp32-01/heart_rate'

async function mqttPort (svc: TestService): Promise<number> {
  const info = JSON.parse(await readFile(join(svc.dataDir, 'server.json'), 'utf8')) as { mqtt_port: number | null }
  if (typeof info.mqtt_port !== 'number') throw new Error('server.json has no mqtt_port')
  return info.mqtt_port
}

async function setup (t: { teardown (fn: () => unknown): void }): Promise<{ svc: TestService, device: () => Promise<MqttClient> }> {
  const svc = await startTestService(t)
  await svc.user('alice')
  const cred = await svc.admin('POST', '/admin/devices', { device_id: 'esp32-01', username: 'alice' })
  const port = await mqttPort(svc)
  const device = async (): Promise<MqttClient> => {
    const client = mqtt.connect(`mqtt://127.0.0.1:${port}`, { protocolVersion: 4, reconnectPeriod: 0, username: cred.mqtt_username, password: cred.mqtt_password })
    t.teardown(() => { client.end(true) })
    await new Promise<void>((resolve, reject) => {
      client.once('connect', () => { resolve() })
      client.once('error', reject)
    })
    return client
  }
  return { svc, device }
}

async function stored (svc: TestService): Promise<Array<{ measured_at: number, heart_rate: number, rr_intervals_ms?: number[] }>> {
  return (await svc.admin('GET', '/admin/readings/alice')).readings
}

/** Publishes at QoS 1 and resolves with whether a PUBACK arrived before the connection closed. */
async function publishRefused (client: MqttClient, body: string): Promise<boolean> {
  let acked = false
  const gone = closed(client)
  client.publish(TOPIC, body, { qos: 1 }, err => { if (err == null) acked = true })
  await gone
  return acked
}

t.test('a QoS 1 reading with 40 RR intervals is stored with all 40 once PUBACK arrived', async t => {
  const { svc, device } = await setup(t)
  const client = await device()
  const rr = Array.from({ length: 40 }, (_, i) => 780 + i)
  const measuredAt = Date.now() - 1000
  await client.publishAsync(TOPIC, JSON.stringify({ measured_at: measuredAt, heart_rate: 75, rr_intervals_ms: rr }), { qos: 1 })
  const readings = await stored(svc)
  t.equal(readings.length, 1)
  t.equal(readings[0]?.measured_at, measuredAt)
  t.equal(readings[0]?.heart_rate, 75)
  t.same(readings[0]?.rr_intervals_ms, rr)
})

t.test('a reading older than the raw retention gets no PUBACK, is not stored, and is counted as out_of_range', async t => {
  const { svc, device } = await setup(t)
  const client = await device()
  const acked = await publishRefused(client, JSON.stringify({ measured_at: Date.now() - 40 * DAY, heart_rate: 75 }))
  t.equal(acked, false, 'no PUBACK')
  t.same(await stored(svc), [])
  const text = await (await fetch(`${svc.url}/metrics`)).text()
  t.match(text, /hr_relay_ingest_dropped_total\{reason="out_of_range"\} 1\n/)
  // The device reconnects and a good reading is acknowledged and stored.
  const again = await device()
  const measuredAt = Date.now() - 1000
  await again.publishAsync(TOPIC, JSON.stringify({ measured_at: measuredAt, heart_rate: 76 }), { qos: 1 })
  t.same((await stored(svc)).map(r => [r.measured_at, r.heart_rate]), [[measuredAt, 76]])
})

t.test('a reading with 65 RR intervals gets no PUBACK, is not stored, and is counted as mqtt_schema', async t => {
  const { svc, device } = await setup(t)
  const client = await device()
  const acked = await publishRefused(client, JSON.stringify({ measured_at: Date.now() - 1000, heart_rate: 75, rr_intervals_ms: Array(65).fill(800) }))
  t.equal(acked, false, 'no PUBACK')
  t.same(await stored(svc), [])
  const text = await (await fetch(`${svc.url}/metrics`)).text()
  t.match(text, /hr_relay_dropped_total\{reason="mqtt_schema"\} 1\n/)
})

t.test('a 0 bpm reading is acknowledged and not stored, as the specification allows', async t => {
  const { svc, device } = await setup(t)
  const client = await device()
  await client.publishAsync(TOPIC, JSON.stringify({ measured_at: Date.now() - 1000, heart_rate: 0 }), { qos: 1 })
  t.same(await stored(svc), [])
  const text = await (await fetch(`${svc.url}/metrics`)).text()
  t.match(text, /hr_relay_ingest_dropped_total\{reason="non_positive"\} 1\n/)
})

t.test('HTTP write: a reading the relay will not store is 400 7013, never 200', async t => {
  const { svc } = await setup(t)
  const token = await svc.token('alice', 'data:heart_rate:write')
  const write = async (body: unknown): Promise<{ status: number, body: unknown }> => {
    const res = await fetch(`${svc.url}/api/v1/data`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(body) })
    return { status: res.status, body: await res.json() }
  }
  const now = Date.now()
  for (const [name, body] of [
    ['older than the raw retention', { measured_at: now - 40 * DAY, data: { heart_rate: 70 } }],
    ['more than 10 minutes ahead', { measured_at: now + 11 * 60_000, data: { heart_rate: 70 } }],
    ['more than data.max_clock_skew_ms (30 s) ahead', { measured_at: now + 40_000, data: { heart_rate: 70 } }],
    ['above 300 bpm', { measured_at: now, data: { heart_rate: 301 } }],
    ['before 2000', { measured_at: 946_684_799_999, data: { heart_rate: 70 } }]
  ] as const) {
    const res = await write(body)
    t.equal(res.status, 400, name)
    t.match(res.body, { error_code: 7013, error_message: 'invalid_request' }, name)
  }
  t.same(await write({ measured_at: now - 2000, data: { heart_rate: 0 } }), { status: 200, body: {} }, '0 bpm: accepted, not stored')
  t.same(await write({ measured_at: now - 1000, data: { heart_rate: 300 } }), { status: 200, body: {} })
  t.same((await stored(svc)).map(r => [r.measured_at, r.heart_rate]), [[now - 1000, 300]])
  const text = await (await fetch(`${svc.url}/metrics`)).text()
  t.match(text, /hr_relay_ingest_dropped_total\{reason="out_of_range"\} 3\n/)
})

t.test('HTTP write within data.max_clock_skew_ms ahead: 200, stored at the receive time, counted', async t => {
  const { svc } = await setup(t)
  const token = await svc.token('alice', 'data:heart_rate:write')
  const before = Date.now()
  const res = await fetch(`${svc.url}/api/v1/data`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify({ measured_at: before + 20_000, data: { heart_rate: 88 } }) })
  const after = Date.now()
  t.same([res.status, await res.json()], [200, {}])
  const rows = await stored(svc)
  t.equal(rows.length, 1)
  t.equal(rows[0]?.heart_rate, 88)
  t.ok(rows[0] !== undefined && rows[0].measured_at >= before && rows[0].measured_at <= after, `stored at ${rows[0]?.measured_at}, received in [${before}, ${after}]`)
  t.match(await (await fetch(`${svc.url}/metrics`)).text(), /hr_relay_clock_skew_corrected_total\{source="http"\} 1\n/)
})
