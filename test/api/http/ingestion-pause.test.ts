// Ingestion pause over real sockets: the endpoints (round trip, bad bodies,
// scopes, the feature flag), and a paused member's MQTT QoS 1 reading:
// PUBACKed, not stored, not streamed (WebSocket, MQTT user topic), counted;
// stored again after unpause and after expiry.
import t from 'tap'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import mqtt, { type MqttClient } from 'mqtt'
import { startTestService, type TestService } from '../../helpers/service.ts'
import { until } from '../../helpers/wait.ts'
import { call, openWs, wsUrl } from './fetch.ts'

const PATH = '/api/v1/data/ingestion_pause'

async function mqttConnect (t: { teardown (fn: () => unknown): void }, svc: TestService, username: string, password: string): Promise<MqttClient> {
  const info = JSON.parse(await readFile(join(svc.dataDir, 'server.json'), 'utf8')) as { mqtt_port: number }
  const client = mqtt.connect(`mqtt://127.0.0.1:${info.mqtt_port}`, { protocolVersion: 4, reconnectPeriod: 0, username, password })
  t.teardown(() => { client.end(true) })
  await new Promise<void>((resolve, reject) => {
    client.once('connect', () => { resolve() })
    client.once('error', reject)
  })
  return client
}

t.test('GET and POST round trip; the feature flag is on', async t => {
  const s = await startTestService(t)
  await s.user('alice')
  const token = await s.token('alice', 'data:ingestion_pause:read data:ingestion_pause:write')
  t.same((await call(s.url, 'GET', PATH, { token })).json, { paused: false, until: null })

  const before = Date.now()
  const a = await call(s.url, 'POST', PATH, { token, body: { paused: true, duration_s: 900 } })
  t.equal(a.status, 200)
  t.equal(a.json.paused, true)
  t.ok(a.json.until >= before + 900_000 && a.json.until <= Date.now() + 900_000, `until ${a.json.until}`)
  t.same((await call(s.url, 'GET', PATH, { token })).json, a.json)

  const forever = await call(s.url, 'POST', PATH, { token, body: { paused: true } })
  t.same([forever.status, forever.json], [200, { paused: true, until: null }], 'without duration_s: until turned off')
  t.same((await call(s.url, 'GET', PATH, { token })).json, { paused: true, until: null })

  const off = await call(s.url, 'POST', PATH, { token, body: { paused: false } })
  t.same([off.status, off.json], [200, { paused: false, until: null }])
  t.same((await call(s.url, 'GET', PATH, { token })).json, { paused: false, until: null })

  const flag = await call(s.url, 'GET', '/api/v1/features/deck_ingestion_pause_feature', { token })
  t.same([flag.status, flag.json], [200, { id: 'deck_ingestion_pause_feature', enabled: true }])
})

t.test('bad bodies are 400 7013 and change nothing; scopes are checked', async t => {
  const s = await startTestService(t)
  await s.user('alice')
  const both = await s.token('alice', 'data:ingestion_pause:read data:ingestion_pause:write')
  const read = await s.token('alice', 'data:ingestion_pause:read')
  const write = await s.token('alice', 'data:ingestion_pause:write')
  const hr = await s.token('alice', 'data:heart_rate:read data:heart_rate:write')
  const bad: Array<[string, { body?: unknown, raw?: string }]> = [
    ['empty object', { body: {} }],
    ['paused a string', { body: { paused: 'yes' } }],
    ['duration 0', { body: { paused: true, duration_s: 0 } }],
    ['duration over 7 days', { body: { paused: true, duration_s: 604_801 } }],
    ['fractional duration', { body: { paused: true, duration_s: 1.5 } }],
    ['duration with paused false', { body: { paused: false, duration_s: 60 } }],
    ['unknown key', { body: { paused: true, until: 5 } }],
    ['not JSON', { raw: '{paused' }],
    ['an array', { body: [true] }]
  ]
  for (const [what, options] of bad) {
    const a = await call(s.url, 'POST', PATH, { token: both, ...options })
    t.equal(a.status, 400, what)
    t.equal(a.json?.error_code, 7013, what)
    t.equal(a.json?.error_message, 'invalid_request', what)
  }
  t.same((await call(s.url, 'GET', PATH, { token: both })).json, { paused: false, until: null }, 'nothing changed')

  const longest = await call(s.url, 'POST', PATH, { token: both, body: { paused: true, duration_s: 604_800 } })
  t.equal(longest.status, 200, '7 days is allowed')

  for (const [what, method, token] of [['read token writes', 'POST', read], ['write token reads', 'GET', write], ['heart-rate token reads', 'GET', hr], ['heart-rate token writes', 'POST', hr]] as const) {
    const a = await call(s.url, method, PATH, { token, ...(method === 'POST' ? { body: { paused: false } } : {}) })
    t.same([a.status, a.json], [400, { error_code: 7011, error_message: 'error_invalid_scope' }], what)
  }
  t.equal((await call(s.url, 'GET', PATH, {})).status, 403, 'no token')
  t.same((await call(s.url, 'GET', PATH, { token: both })).json.paused, true, 'the refused writes changed nothing')
})

t.test('a paused member\'s MQTT QoS 1 reading is PUBACKed, withheld everywhere and counted; unpause and expiry store again', async t => {
  const s = await startTestService(t)
  const profile = await s.user('alice')
  const cred = await s.admin('POST', '/admin/devices', { device_id: 'esp-p', username: 'alice', kind: 'mqtt' })
  const pause = await s.token('alice', 'data:ingestion_pause:read data:ingestion_pause:write')
  const read = await s.token('alice', 'data:heart_rate:read')
  const latest = async (): Promise<unknown> => (await call(s.url, 'GET', '/api/v1/data/heart_rate/latest', { token: read })).json

  const ws = await openWs(wsUrl(s.url, `/api/v1/data/real_time?access_token=${read}`))
  t.teardown(() => { ws.ws.terminate() })
  const app = await mqttConnect(t, s, 'alice-app', read)
  await app.subscribeAsync(`hr-relay/v1/users/${profile}/heart_rate`, { qos: 0 })
  const topic: string[] = []
  const topicWaiters: Array<() => void> = []
  app.on('message', (_topic, body) => { topic.push(body.toString()); topicWaiters.shift()?.() })
  const nextOnTopic = async (n: number): Promise<void> => { while (topic.length < n) await new Promise<void>(resolve => topicWaiters.push(resolve)) }

  const device = await mqttConnect(t, s, cred.mqtt_username, cred.mqtt_password)
  const publish = async (measuredAt: number, bpm: number): Promise<void> => {
    await device.publishAsync('hr-relay/v1/devices/esp-p/heart_rate', JSON.stringify({ measured_at: measuredAt, heart_rate: bpm }), { qos: 1 })
  }
  const t0 = Date.now() - 10_000
  await publish(t0, 70)
  t.same(await latest(), { measured_at: t0, data: { heart_rate: 70 } })
  t.same(JSON.parse(await ws.next()), { measured_at: t0, data: { heart_rate: 70 } })
  await nextOnTopic(1)

  t.equal((await call(s.url, 'POST', PATH, { token: pause, body: { paused: true } })).status, 200)
  // publishAsync resolves on PUBACK: the reading is acknowledged.
  await publish(t0 + 1000, 71)
  await publish(t0 + 2000, 72)
  t.equal(device.connected, true, 'the connection stays open')
  t.same(await latest(), { measured_at: t0, data: { heart_rate: 70 } }, 'latest unchanged: not stored')
  const metrics = await (await fetch(`${s.url}/metrics`)).text()
  t.match(metrics, /hr_relay_ingest_dropped_total\{reason="paused"\} 2\n/)
  t.match(metrics, /hr_relay_readings_stored_total\{source="mqtt"\} 1\n/)

  t.equal((await call(s.url, 'POST', PATH, { token: pause, body: { paused: false } })).status, 200)
  await publish(t0 + 3000, 73)
  t.same(await latest(), { measured_at: t0 + 3000, data: { heart_rate: 73 } }, 'stored again after unpause')
  // Streams deliver in order: the next message after 70 is 73, so 71 and 72 never went out.
  t.same(JSON.parse(await ws.next()), { measured_at: t0 + 3000, data: { heart_rate: 73 } })
  await nextOnTopic(2)
  t.same(topic, [`{"measured_at":${t0},"data":{"heart_rate":70}}`, `{"measured_at":${t0 + 3000},"data":{"heart_rate":73}}`])

  // Expiry: a 1 s pause ends by itself.
  const short = await call(s.url, 'POST', PATH, { token: pause, body: { paused: true, duration_s: 1 } })
  t.equal(short.json.paused, true)
  await publish(t0 + 4000, 74)
  await until('the pause to expire', async () => (await call(s.url, 'GET', PATH, { token: pause })).json.paused === false)
  await publish(t0 + 5000, 75)
  t.same(await latest(), { measured_at: t0 + 5000, data: { heart_rate: 75 } }, 'stored again after expiry')
  t.same(JSON.parse(await ws.next()), { measured_at: t0 + 5000, data: { heart_rate: 75 } }, '74 was withheld')
  t.match(await (await fetch(`${s.url}/metrics`)).text(), /hr_relay_ingest_dropped_total\{reason="paused"\} 3\n/)
})

t.test('room displays show a member whose ingestion is paused as paused', async t => {
  const s = await startTestService(t)
  const alice = await s.user('alice')
  const rooms = s.service.services.rooms
  const room = await rooms.create('Spin')
  await rooms.upsertMember(room.room_id, alice, { display_name: 'Alice' })
  const display = await openWs(wsUrl(s.url, `/rooms/${room.room_id}/stream?display_id=${room.display_id}&kinds=room_member_updated`))
  t.teardown(() => { display.ws.terminate() })
  const stateUrl = `${s.url}/rooms/${room.room_id}/display/state?display_id=${room.display_id}`
  const member = async (): Promise<Record<string, unknown> | undefined> => ((await (await fetch(stateUrl)).json()) as { members: Array<Record<string, unknown>> }).members[0]
  t.match(await member(), { profile_id: alice, paused: false, paused_until: null })

  const token = await s.token('alice', 'data:ingestion_pause:write')
  const a = await call(s.url, 'POST', PATH, { token, body: { paused: true, duration_s: 600 } })
  t.same(JSON.parse(await display.next()).room_member_updated, { profile_id: alice, config: { display_name: 'Alice', max_heart_rate: null, zones: [50, 60, 70, 80, 90], paused: true } })
  t.match(await member(), { profile_id: alice, paused: true, paused_until: a.json.until, latest: null })

  await call(s.url, 'POST', PATH, { token, body: { paused: false } })
  t.same(JSON.parse(await display.next()).room_member_updated.config.paused, false)
  t.match(await member(), { profile_id: alice, paused: false, paused_until: null })
})
