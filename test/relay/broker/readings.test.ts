// Device readings through the real broker: QoS 1 is acknowledged only after
// the pipeline stored the reading; bad payloads are dropped and counted.
import t from 'tap'
import { randomUUID } from 'node:crypto'
import { closed, payload, startBroker } from '../../helpers/broker.ts'

const alice = randomUUID()

t.test('a QoS 1 reading reaches the pipeline with every field, as source mqtt', async t => {
  const h = await startBroker(t)
  const cred = await h.device('hr-01', alice)
  const client = await h.connect({ username: cred.username, password: cred.password })
  const body = JSON.stringify({ measured_at: 1_700_000_000_123, heart_rate: 72, rr_intervals_ms: [833, 812], energy_expended_kj: 12, sensor_contact: true, battery_percent: 87 })
  const packet = await client.publishAsync('hr-relay/v1/devices/hr-01/heart_rate', body, { qos: 1 })
  t.equal(packet?.cmd, 'publish')
  t.same(h.ingest.readings, [{ device_id: 'hr-01', source: 'mqtt', measured_at: 1_700_000_000_123, heart_rate: 72, rr_intervals_ms: [833, 812], energy_expended_kj: 12, sensor_contact: true, battery_percent: 87 }])
  t.same(h.devices.stateOf('hr-01'), { device_id: 'hr-01', source: 'mqtt', connected: true, seen_at: h.devices.stateOf('hr-01')?.seen_at, battery_percent: 87, last_reading: { heart_rate: 72, measured_at: 1_700_000_000_123 } })
})

t.test('PUBACK is sent only after Ingest.submit resolved', async t => {
  const h = await startBroker(t)
  const cred = await h.device('hr-01', alice)
  const client = await h.connect({ username: cred.username, password: cred.password })
  h.ingest.hold()
  const acked = client.publishAsync('hr-relay/v1/devices/hr-01/heart_rate', payload(81), { qos: 1 }).then(() => { h.ingest.events.push('puback') })
  await h.ingest.submitted(1)
  // Give the broker every chance to answer early: a full round trip of another client.
  const other = await h.connect({ username: 'app', password: await h.token(alice) })
  await other.subscribeAsync(`hr-relay/v1/users/${alice}/heart_rate`)
  t.same(h.ingest.events, ['submit:81'], 'no PUBACK while the reading is not stored')
  h.ingest.open()
  await acked
  t.same(h.ingest.events, ['submit:81', 'released', 'stored:81', 'puback'])
})

t.test('an ingest failure closes the connection without PUBACK; the broker keeps serving', async t => {
  const h = await startBroker(t)
  const cred = await h.device('hr-01', alice)
  const client = await h.connect({ username: cred.username, password: cred.password })
  h.ingest.fail = true
  let acked = false
  client.publish('hr-relay/v1/devices/hr-01/heart_rate', payload(90), { qos: 1 }, err => { if (err == null) acked = true })
  await closed(client)
  t.equal(acked, false, 'no PUBACK for a reading that was not stored')
  h.ingest.fail = false
  const again = await h.connect({ username: cred.username, password: cred.password })
  await again.publishAsync('hr-relay/v1/devices/hr-01/heart_rate', payload(90), { qos: 1 })
  t.same(h.ingest.readings.map(r => r.heart_rate), [90, 90], 'submitted twice: once failed, once resent by the device')
})

t.test('bad payloads: QoS 0 dropped and counted, connection kept; QoS 1 dropped, counted, connection closed without PUBACK', async t => {
  const h = await startBroker(t)
  const cred = await h.device('hr-01', alice)
  const client = await h.connect({ username: cred.username, password: cred.password })
  client.publish('hr-relay/v1/devices/hr-01/heart_rate', '{"heart_rate": 70}', { qos: 0 })
  client.publish('hr-relay/v1/devices/hr-01/heart_rate', 'not json', { qos: 0 })
  await client.publishAsync('hr-relay/v1/devices/hr-01/heart_rate', payload(71), { qos: 1 })
  t.same(h.ingest.readings.map(r => r.heart_rate), [71], 'only the good reading reached the pipeline')
  let acked = false
  client.publish('hr-relay/v1/devices/hr-01/heart_rate', '{"measured_at":1700000000000,"heart_rate":999}', { qos: 1 }, err => { if (err == null) acked = true })
  await closed(client)
  t.equal(acked, false)
  t.equal(h.ingest.readings.length, 1)
  const text = (await h.metrics.text()).body
  t.match(text, /hr_relay_dropped_total\{reason="mqtt_schema"\} 2/)
  t.match(text, /hr_relay_dropped_total\{reason="mqtt_bad_json"\} 1/)
})

t.test('a status publish is accepted only as online/offline and never reaches the pipeline', async t => {
  const h = await startBroker(t)
  const cred = await h.device('hr-01', alice)
  const client = await h.connect({ username: cred.username, password: cred.password })
  await client.publishAsync('hr-relay/v1/devices/hr-01/status', 'online', { qos: 1, retain: true })
  t.equal(h.ingest.readings.length, 0)
  const gone = closed(client)
  client.publish('hr-relay/v1/devices/hr-01/status', 'rebooting', { qos: 1 })
  await gone
  t.match((await h.metrics.text()).body, /hr_relay_dropped_total\{reason="mqtt_bad_status"\} 1/)
})
