// The broker inside the whole service: devices paired through the admin API,
// readings stored by the real pipeline, MQTT over WebSocket, app subscriptions,
// /health and /metrics.
import t from 'tap'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import mqtt, { type IClientOptions, type MqttClient } from 'mqtt'
import { startTestService, type TestService } from '../../helpers/service.ts'
import { subackCodes } from '../../helpers/broker.ts'

async function mqttPort (svc: TestService): Promise<number> {
  const info = JSON.parse(await readFile(join(svc.dataDir, 'server.json'), 'utf8')) as { mqtt_port: number | null }
  if (typeof info.mqtt_port !== 'number') throw new Error('server.json has no mqtt_port')
  return info.mqtt_port
}

async function connect (t: Tap.Test, url: string, options: IClientOptions): Promise<MqttClient> {
  const client = mqtt.connect(url, { protocolVersion: 4, reconnectPeriod: 0, ...options })
  t.teardown(() => { client.end(true) })
  await new Promise<void>((resolve, reject) => {
    client.once('connect', () => { resolve() })
    client.once('error', reject)
    client.once('close', () => { reject(new Error('closed before CONNACK')) })
  })
  return client
}

namespace Tap { export type Test = { teardown (fn: () => unknown): void } }

t.test('a paired MQTT device\'s QoS 1 reading is readable through the API once PUBACK arrived', async t => {
  const svc = await startTestService(t)
  const profile = await svc.user('alice')
  const cred = await svc.admin('POST', '/admin/devices', { device_id: 'esp32-01', username: 'alice', name: 'Bike 3' })
  t.same(Object.keys(cred).sort(), ['device_id', 'kind', 'mqtt_password', 'mqtt_username', 'profile_id'])
  t.equal(cred.device_id, 'esp32-01')
  t.equal(cred.mqtt_username, 'esp32-01')
  t.equal(cred.profile_id, profile)
  const port = await mqttPort(svc)
  const device = await connect(t, `mqtt://127.0.0.1:${port}`, { username: cred.mqtt_username, password: cred.mqtt_password })
  const measuredAt = Date.now() - 1000
  await device.publishAsync('hr-relay/v1/devices/esp32-01/heart_rate', JSON.stringify({ measured_at: measuredAt, heart_rate: 77, battery_percent: 64 }), { qos: 1 })
  // No waiting: the PUBACK above means the reading is stored.
  const token = await svc.token('alice', 'data:heart_rate:read')
  const res = await fetch(`${svc.url}/api/v1/data/heart_rate/latest`, { headers: { authorization: `Bearer ${token}` } })
  t.equal(res.status, 200)
  t.same(await res.json(), { measured_at: measuredAt, data: { heart_rate: 77 } })

  const list = await svc.admin('GET', '/admin/devices')
  t.equal(list.devices.length, 1)
  t.match(list.devices[0], { device_id: 'esp32-01', username: 'alice', profile_id: profile, kind: 'any', name: 'Bike 3', mqtt_username: 'esp32-01', state: { source: 'mqtt', connected: true, battery_percent: 64, last_reading: { heart_rate: 77, measured_at: measuredAt } } })
  t.notOk('mqtt_password_hash' in list.devices[0], 'the hash never leaves the server')

  const health = await (await fetch(`${svc.url}/health`)).json() as { sources: unknown[] }
  t.match(health.sources, [{ id: 'mqtt', state: 'running', connected: 1 }])

  const metrics = await fetch(`${svc.url}/metrics`)
  t.equal(metrics.status, 200)
  t.match(metrics.headers.get('content-type'), /^text\/plain; version=0\.0\.4/)
  const text = await metrics.text()
  t.match(text, /hr_relay_readings_stored_total\{source="mqtt"\} 1\n/)
  t.match(text, /hr_relay_mqtt_clients\{kind="device"\} 1\n/)
  t.match(text, /hr_relay_ingest_latency_seconds_count 1\n/)
  t.match(text, /hr_relay_ingest_dropped_total\{reason="unpaired"\} 0\n/)
})

t.test('MQTT over WebSocket at /mqtt: a device publishes and an app with a token receives its user\'s reading', async t => {
  const svc = await startTestService(t)
  const profile = await svc.user('bob')
  await svc.user('carol')
  const cred = await svc.admin('POST', '/admin/devices', { device_id: 'ws-dev', username: 'bob', kind: 'mqtt' })
  const wsUrl = svc.url.replace(/^http/, 'ws') + '/mqtt'
  const app = await connect(t, wsUrl, { username: 'bob-app', password: await svc.token('bob', 'data:heart_rate:read') })
  const other = await connect(t, wsUrl, { username: 'carol-app', password: await svc.token('carol', 'data:heart_rate:read') })
  const granted = await app.subscribeAsync(`hr-relay/v1/users/${profile}/heart_rate`, { qos: 1 })
  t.same(granted.map(g => g.qos), [1])
  t.same(await subackCodes(other, `hr-relay/v1/users/${profile}/heart_rate`), [0x80], 'carol may not subscribe to bob')
  const received = new Promise<{ topic: string, body: string }>(resolve => {
    app.once('message', (topic, body) => { resolve({ topic, body: body.toString() }) })
  })
  const device = await connect(t, wsUrl, { username: cred.mqtt_username, password: cred.mqtt_password })
  const measuredAt = Date.now() - 500
  await device.publishAsync('hr-relay/v1/devices/ws-dev/heart_rate', JSON.stringify({ measured_at: measuredAt, heart_rate: 101 }), { qos: 1 })
  t.same(await received, { topic: `hr-relay/v1/users/${profile}/heart_rate`, body: `{"measured_at":${measuredAt},"data":{"heart_rate":101}}` })
})

t.test('readings of a device that is not paired are not stored; the device appears in the unpaired list', async t => {
  const svc = await startTestService(t)
  await svc.user('dave')
  // A reading from a source that knows only its device id goes through the same pipeline.
  const result = await svc.service.services.pipeline.submit({ device_id: 'AA:BB:CC:DD:EE:01', measured_at: Date.now(), heart_rate: 70, source: 'ble' })
  t.same(result, { status: 'dropped', reason: 'unpaired' })
  svc.service.services.devices.sighting({ device_id: 'aa:bb:cc:dd:ee:01', source: 'ble', name: 'Polar H10 1234', rssi: -60, connected: false, seen_at: 1_700_000_000_000 })
  const unpaired = await svc.admin('GET', '/admin/devices/unpaired')
  t.same(unpaired, { devices: [{ device_id: 'AA:BB:CC:DD:EE:01', source: 'ble', name: 'Polar H10 1234', rssi: -60, connected: false, seen_at: 1_700_000_000_000 }] })
  const paired = await svc.admin('POST', '/admin/devices', { device_id: 'aa:bb:cc:dd:ee:01', username: 'dave', kind: 'ble' })
  t.same(paired.mqtt_password, null, 'a BLE pairing gets no MQTT credentials')
  t.equal(paired.device_id, 'AA:BB:CC:DD:EE:01')
  t.same(await svc.admin('GET', '/admin/devices/unpaired'), { devices: [] })
  const stored = await svc.service.services.pipeline.submit({ device_id: 'AA:BB:CC:DD:EE:01', measured_at: Date.now(), heart_rate: 71, source: 'ble' })
  t.equal(stored.status, 'stored')
})

t.test('MQTT over WebSocket: a packet above mqtt.max_packet_bytes closes that connection, stores nothing, and others go on', async t => {
  const svc = await startTestService(t, { mqtt: { max_packet_bytes: 1024 } })
  await svc.user('bob')
  const cred = await svc.admin('POST', '/admin/devices', { device_id: 'ws-big', username: 'bob', kind: 'mqtt' })
  const wsUrl = svc.url.replace(/^http/, 'ws') + '/mqtt'
  const login = { username: cred.mqtt_username, password: cred.mqtt_password }
  const big = await connect(t, wsUrl, { ...login, clientId: 'big' })
  const gone = new Promise<void>(resolve => { big.once('close', () => { resolve() }) })
  big.publish('hr-relay/v1/devices/ws-big/heart_rate', JSON.stringify({ measured_at: Date.now() - 500, heart_rate: 99, pad: 'x'.repeat(2000) }), { qos: 1 })
  await gone
  const other = await connect(t, wsUrl, { ...login, clientId: 'other' })
  const measuredAt = Date.now() - 400
  await other.publishAsync('hr-relay/v1/devices/ws-big/heart_rate', JSON.stringify({ measured_at: measuredAt, heart_rate: 77 }), { qos: 1 })
  const metrics = await (await fetch(svc.url + '/metrics')).text()
  t.match(metrics, /hr_relay_dropped_total\{reason="mqtt_packet_too_large"\} 1\n/)
  const latest = await svc.admin('GET', '/admin/ingest')
  t.equal(latest.pipeline.stored, 1, 'only the small reading was stored')
})
