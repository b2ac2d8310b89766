// Home Assistant MQTT discovery over real sockets: the whole service
// in-process, a real mqtt.js client logging in to the embedded broker with the
// integration credentials, and a real Mosquitto as the upstream broker.
import t from 'tap'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import mqtt, { type MqttClient } from 'mqtt'
import { startTestService, type TestService } from '../../helpers/service.ts'
import { Mosquitto } from '../../helpers/mosquitto.ts'
import { connackCode, subackCodes } from '../../helpers/broker.ts'
import { eventually } from '../../helpers/wait.ts'
import { HOME_ASSISTANT_OFF } from '../../../api/http/admin-integrations.ts'

interface Msg { topic: string, payload: string, retain: boolean }

async function mqttPort (svc: TestService): Promise<number> {
  return (JSON.parse(await readFile(join(svc.dataDir, 'server.json'), 'utf8')) as { mqtt_port: number }).mqtt_port
}

/** Connects, subscribes, and records every message; `next(pred)` waits for a matching one. */
async function recorder (t: Tap, url: string, topics: string[], auth: { username?: string, password?: string } = {}): Promise<{ client: MqttClient, messages: Msg[], next: (pred: (m: Msg) => boolean) => Promise<Msg> }> {
  const client = mqtt.connect(url, { protocolVersion: 4, reconnectPeriod: 0, ...auth })
  t.teardown(() => { client.end(true) })
  const messages: Msg[] = []
  let waiters: Array<{ pred: (m: Msg) => boolean, resolve: (m: Msg) => void }> = []
  client.on('message', (topic, payload, packet) => {
    const m = { topic, payload: payload.toString(), retain: packet.retain }
    messages.push(m)
    for (const w of waiters.filter(w => w.pred(m))) w.resolve(m)
    waiters = waiters.filter(w => !w.pred(m))
  })
  await new Promise<void>((resolve, reject) => { client.once('connect', () => { resolve() }); client.once('error', reject) })
  await client.subscribeAsync(topics, { qos: 1 })
  const next = async (pred: (m: Msg) => boolean): Promise<Msg> => {
    const seen = messages.find(pred)
    if (seen !== undefined) return seen
    return await new Promise<Msg>(resolve => { waiters.push({ pred, resolve }) })
  }
  return { client, messages, next }
}

interface Tap { teardown (fn: () => unknown): void }

async function member (svc: TestService, name: string, deviceId: string): Promise<{ profile_id: string, device: { username: string, password: string } }> {
  const profileId = await svc.user(name, { display_name: `${name} runner` })
  const paired = await svc.admin('POST', '/admin/devices', { device_id: deviceId, username: name, kind: 'mqtt' })
  return { profile_id: profileId, device: { username: paired.mqtt_username, password: paired.mqtt_password } }
}

const node = (pid: string): string => `hr_relay_${pid.toLowerCase().replace(/[^a-z0-9_]/g, '_')}`

t.test('embedded broker: discovery configs field by field, opted-in topics only, opt-out clears', async t => {
  const svc = await startTestService(t, { home_assistant: { enabled: true } })
  const url = `mqtt://127.0.0.1:${await mqttPort(svc)}`
  const anna = await member(svc, 'anna', 'strap-anna')
  const ben = await member(svc, 'ben', 'strap-ben')
  const creds = await svc.admin('POST', '/admin/integrations', { name: 'home-assistant' })
  t.same(Object.keys(creds).sort(), ['mqtt_password', 'mqtt_username'])
  t.equal(creds.mqtt_username, 'home-assistant@hr-relay')
  t.match(creds.mqtt_password, /^[A-Za-z0-9_-]{32}$/)
  t.equal(await connackCode(url, { username: creds.mqtt_username, password: 'wrong-password-123' }), 4, 'a wrong password gets CONNACK 4')

  // Anna's strap connects before she opts in; Ben's strap is connected too but he never opts in.
  const annaDev = mqtt.connect(url, { protocolVersion: 4, reconnectPeriod: 0, clientId: 'strap-anna', ...anna.device })
  const benDev = mqtt.connect(url, { protocolVersion: 4, reconnectPeriod: 0, clientId: 'strap-ben', ...ben.device })
  t.teardown(() => { annaDev.end(true); benDev.end(true) })
  await Promise.all([annaDev, benDev].map(async c => { await new Promise<void>(resolve => { c.once('connect', () => { resolve() }) }) }))
  t.same(await svc.admin('PUT', '/admin/users/anna/home-assistant', { enabled: true }), { username: 'anna', home_assistant: true })

  const ha = await recorder(t, url, ['#'], { username: creds.mqtt_username, password: creds.mqtt_password })
  const n = node(anna.profile_id)
  const hr = await ha.next(m => m.topic === `homeassistant/sensor/${n}/heart_rate/config`)
  const battery = await ha.next(m => m.topic === `homeassistant/sensor/${n}/battery/config`)
  const connected = await ha.next(m => m.topic === `homeassistant/binary_sensor/${n}/connected/config`)
  t.equal(hr.retain, true, 'the config is retained')
  const availability = [{ topic: 'hr-relay/v1/relay/status', payload_available: 'online', payload_not_available: 'offline' }]
  const device = { identifiers: [n], name: 'anna runner', manufacturer: 'hr-relay', model: 'hr-relay member', sw_version: '0.1.0' }
  const origin = { name: 'hr-relay', sw_version: '0.1.0' }
  t.same(JSON.parse(hr.payload), {
    name: 'Heart rate',
    unique_id: `${n}_heart_rate`,
    default_entity_id: `sensor.${n}_heart_rate`,
    state_topic: `hr-relay/v1/users/${anna.profile_id}/heart_rate`,
    value_template: '{{ value_json.data.heart_rate }}',
    unit_of_measurement: 'bpm',
    state_class: 'measurement',
    icon: 'mdi:heart-pulse',
    availability,
    device,
    origin
  })
  t.same(JSON.parse(battery.payload), {
    name: 'Strap battery',
    unique_id: `${n}_battery`,
    default_entity_id: `sensor.${n}_battery`,
    state_topic: `hr-relay/v1/users/${anna.profile_id}/state`,
    value_template: '{{ value_json.battery_percent }}',
    device_class: 'battery',
    unit_of_measurement: '%',
    state_class: 'measurement',
    entity_category: 'diagnostic',
    availability,
    device,
    origin
  })
  t.same(JSON.parse(connected.payload), {
    name: 'Strap connected',
    unique_id: `${n}_connected`,
    default_entity_id: `binary_sensor.${n}_connected`,
    state_topic: `hr-relay/v1/users/${anna.profile_id}/state`,
    value_template: "{{ 'ON' if value_json.connected else 'OFF' }}",
    payload_on: 'ON',
    payload_off: 'OFF',
    device_class: 'connectivity',
    entity_category: 'diagnostic',
    availability,
    device,
    origin
  })
  const status = await ha.next(m => m.topic === 'hr-relay/v1/relay/status')
  t.same([status.payload, status.retain], ['online', true])
  const state = await ha.next(m => m.topic === `hr-relay/v1/users/${anna.profile_id}/state`)
  t.same(JSON.parse(state.payload), { connected: true, battery_percent: null })

  // Ben's reading is stored (his own app sees it) but never reaches Home Assistant; Anna's does, with her battery.
  const benToken = await svc.token('ben', 'data:heart_rate:read')
  const benApp = await recorder(t, url, [`hr-relay/v1/users/${ben.profile_id}/heart_rate`], { username: 'app', password: benToken })
  benDev.publish('hr-relay/v1/devices/strap-ben/heart_rate', JSON.stringify({ measured_at: Date.now(), heart_rate: 101 }), { qos: 1 })
  t.equal(JSON.parse((await benApp.next(() => true)).payload).data.heart_rate, 101)
  annaDev.publish('hr-relay/v1/devices/strap-anna/heart_rate', JSON.stringify({ measured_at: Date.now(), heart_rate: 72, battery_percent: 87 }), { qos: 1 })
  const reading = await ha.next(m => m.topic === `hr-relay/v1/users/${anna.profile_id}/heart_rate`)
  t.equal(JSON.parse(reading.payload).data.heart_rate, 72, 'value_template {{ value_json.data.heart_rate }} finds 72')
  const withBattery = await ha.next(m => m.topic === `hr-relay/v1/users/${anna.profile_id}/state` && m.payload.includes('87'))
  t.same(JSON.parse(withBattery.payload), { connected: true, battery_percent: 87 })
  t.same(ha.messages.filter(m => m.topic.includes(ben.profile_id) || m.topic.includes('strap-ben') || m.topic.includes(node(ben.profile_id))), [], 'nothing of the member who did not opt in')
  t.same(ha.messages.filter(m => m.topic.startsWith('hr-relay/v1/devices/')), [], 'no device topics')
  t.same(await subackCodes(ha.client, '$SYS/#'), [128], '$SYS is refused')

  // The integration may publish its birth message (`<discovery_prefix>/status`); it comes back to it.
  await ha.client.publishAsync('homeassistant/status', 'online', { qos: 1 })
  t.equal((await ha.next(m => m.topic === 'homeassistant/status')).payload, 'online')

  // Opting out (member page or admin) publishes an empty retained payload on each config topic.
  await svc.admin('PUT', '/admin/users/anna/home-assistant', { enabled: false })
  for (const topic of [hr.topic, battery.topic, connected.topic]) {
    t.equal((await ha.next(m => m.topic === topic && m.payload === '')).payload, '', `${topic} cleared`)
  }
  // Her readings stop reaching Home Assistant: a later one arrives at her own app only.
  const annaToken = await svc.token('anna', 'data:heart_rate:read')
  const annaApp = await recorder(t, url, [`hr-relay/v1/users/${anna.profile_id}/heart_rate`], { username: 'app', password: annaToken })
  annaDev.publish('hr-relay/v1/devices/strap-anna/heart_rate', JSON.stringify({ measured_at: Date.now(), heart_rate: 99 }), { qos: 1 })
  await annaApp.next(m => m.payload.includes('99'))
  await ha.client.publishAsync('homeassistant/status', 'ping', { qos: 1 })
  await ha.next(m => m.payload === 'ping')
  t.same(ha.messages.filter(m => m.payload.includes('"heart_rate":99')), [], 'no reading after opting out')
})

t.test('a second integration add replaces the password and disconnects the old connection', async t => {
  const svc = await startTestService(t, { home_assistant: { enabled: true } })
  const url = `mqtt://127.0.0.1:${await mqttPort(svc)}`
  const first = await svc.admin('POST', '/admin/integrations', { name: 'home-assistant' })
  const ha = await recorder(t, url, ['homeassistant/#'], { username: first.mqtt_username, password: first.mqtt_password })
  const gone = new Promise<void>(resolve => { ha.client.once('close', () => { resolve() }) })
  const second = await svc.admin('POST', '/admin/integrations', { name: 'home-assistant' })
  await gone
  t.equal(await connackCode(url, { username: first.mqtt_username, password: first.mqtt_password }), 4, 'the old password is refused')
  t.equal(await connackCode(url, { username: second.mqtt_username, password: second.mqtt_password }), 0, 'the new one is accepted')
})

t.test('while home_assistant is off (the default) no credentials are issued: 409 saying how to turn it on, and integration logins are refused', async t => {
  const svc = await startTestService(t)
  const url = `mqtt://127.0.0.1:${await mqttPort(svc)}`
  const res = await fetch(`${svc.url}/admin/integrations`, {
    method: 'POST',
    headers: { authorization: `Bearer ${svc.adminToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'home-assistant' })
  })
  t.equal(res.status, 409)
  t.same(await res.json(), { error_code: 9409, error_message: 'conflict', detail: HOME_ASSISTANT_OFF })
  t.equal(await connackCode(url, { username: 'home-assistant@hr-relay', password: 'A'.repeat(32) }), 4)
})

t.test('a member who opted in without a paired device (readings from an app) gets the heart-rate sensor only; pairing adds battery and connection, unpairing removes them', async t => {
  const svc = await startTestService(t, { home_assistant: { enabled: true } })
  const url = `mqtt://127.0.0.1:${await mqttPort(svc)}`
  const profileId = await svc.user('cleo', { display_name: 'Cleo' })
  await svc.admin('PUT', '/admin/users/cleo/home-assistant', { enabled: true })
  const creds = await svc.admin('POST', '/admin/integrations', { name: 'home-assistant' })
  const n = node(profileId)
  const [hrTopic, batteryTopic, connectedTopic] = [`homeassistant/sensor/${n}/heart_rate/config`, `homeassistant/sensor/${n}/battery/config`, `homeassistant/binary_sensor/${n}/connected/config`]
  const stateTopic = `hr-relay/v1/users/${profileId}/state`

  // What is retained for her: a sentinel published after the SUBACK arrives after the retained messages.
  const ha = await recorder(t, url, ['homeassistant/#', `hr-relay/v1/users/${profileId}/#`], { username: creds.mqtt_username, password: creds.mqtt_password })
  await ha.client.publishAsync('homeassistant/status', 'sentinel-1', { qos: 1 })
  await ha.next(m => m.payload === 'sentinel-1')
  const hr = await ha.next(m => m.topic === hrTopic)
  t.equal(hr.retain, true, 'the heart-rate config is retained')
  t.same(JSON.parse(hr.payload), {
    name: 'Heart rate',
    unique_id: `${n}_heart_rate`,
    default_entity_id: `sensor.${n}_heart_rate`,
    state_topic: `hr-relay/v1/users/${profileId}/heart_rate`,
    value_template: '{{ value_json.data.heart_rate }}',
    unit_of_measurement: 'bpm',
    state_class: 'measurement',
    icon: 'mdi:heart-pulse',
    availability: [{ topic: 'hr-relay/v1/relay/status', payload_available: 'online', payload_not_available: 'offline' }],
    device: { identifiers: [n], name: 'Cleo', manufacturer: 'hr-relay', model: 'hr-relay member', sw_version: '0.1.0' },
    origin: { name: 'hr-relay', sw_version: '0.1.0' }
  })
  t.same(ha.messages.filter(m => m.topic === batteryTopic || m.topic === connectedTopic || m.topic === stateTopic), [], 'no battery, connection or state without a device')

  // Her app writes a reading over HTTP; Home Assistant receives it on the sensor's state topic.
  const write = await svc.token('cleo', 'data:heart_rate:write')
  const res = await fetch(`${svc.url}/api/v1/data`, {
    method: 'POST',
    headers: { authorization: `Bearer ${write}`, 'content-type': 'application/json' },
    body: JSON.stringify({ measured_at: Date.now(), data: { heart_rate: 77 } })
  })
  t.ok(res.ok, `POST /api/v1/data: ${res.status}`)
  const reading = await ha.next(m => m.topic === `hr-relay/v1/users/${profileId}/heart_rate`)
  t.equal(JSON.parse(reading.payload).data.heart_rate, 77, 'value_template {{ value_json.data.heart_rate }} finds 77')

  // Pairing a strap adds the two strap entities and her state.
  await svc.admin('POST', '/admin/devices', { device_id: 'strap-cleo', username: 'cleo', kind: 'mqtt' })
  t.equal(JSON.parse((await ha.next(m => m.topic === batteryTopic && m.payload !== '')).payload).name, 'Strap battery')
  t.equal(JSON.parse((await ha.next(m => m.topic === connectedTopic && m.payload !== '')).payload).name, 'Strap connected')
  t.same(JSON.parse((await ha.next(m => m.topic === stateTopic && m.payload !== '')).payload), { connected: false, battery_percent: null })

  // Unpairing it removes them again (empty retained payloads); the heart-rate sensor stays.
  await svc.admin('DELETE', '/admin/devices/strap-cleo')
  for (const topic of [batteryTopic, connectedTopic, stateTopic]) t.equal((await ha.next(m => m.topic === topic && m.payload === '')).payload, '', `${topic} cleared`)
  await ha.client.publishAsync('homeassistant/status', 'sentinel-2', { qos: 1 })
  await ha.next(m => m.payload === 'sentinel-2')
  t.same(ha.messages.filter(m => m.topic === hrTopic).map(m => m.payload === hr.payload), [true, true, true], 'the heart-rate config: retained, then published again (the same) on pairing and on unpairing, never cleared')

  // A fresh login sees exactly her heart-rate config retained.
  const later = await recorder(t, url, ['homeassistant/#'], { username: creds.mqtt_username, password: creds.mqtt_password })
  await later.client.publishAsync('homeassistant/status', 'sentinel-3', { qos: 1 })
  await later.next(m => m.payload === 'sentinel-3')
  t.same(later.messages.filter(m => m.retain).map(m => m.topic), [hrTopic])
})

/** Every retained message under `topics` on a fresh connection: a sentinel published after SUBACK comes after them (Mosquitto sends retained messages while it handles the SUBSCRIBE). */
async function retained (t: Tap, url: string, topics: string[]): Promise<Msg[]> {
  const r = await recorder(t, url, [...topics, 'test/sentinel'])
  await r.client.publishAsync('test/sentinel', 'x', { qos: 1 })
  await r.next(m => m.topic === 'test/sentinel')
  r.client.end(true)
  return r.messages.filter(m => m.retain)
}

t.test('upstream Mosquitto: retained configs, state and status with a last will; opt-out clears them', async t => {
  const mosq = await Mosquitto.create(t)
  await mosq.start()
  const svc = await startTestService(t, { home_assistant: { enabled: true, discovery_prefix: 'ha' }, upstream: { url: mosq.url, topic_prefix: 'gym/hr' } })
  const anna = await member(svc, 'anna', 'strap-anna')
  await svc.admin('PUT', '/admin/users/anna/home-assistant', { enabled: true })
  const n = node(anna.profile_id)
  const topics = ['ha/#', 'gym/hr/relay/status', 'gym/hr/users/+/state']
  const seen = await eventually('retained discovery upstream', async () => {
    const msgs = await retained(t, mosq.url, topics)
    return msgs.length >= 5 ? msgs : undefined
  })
  const byTopic = new Map(seen.map(m => [m.topic, m.payload]))
  t.same([...byTopic.keys()].sort(), ['gym/hr/relay/status', `gym/hr/users/${anna.profile_id}/state`, `ha/binary_sensor/${n}/connected/config`, `ha/sensor/${n}/battery/config`, `ha/sensor/${n}/heart_rate/config`].sort())
  t.equal(byTopic.get('gym/hr/relay/status'), 'online')
  const hrConfig = JSON.parse(byTopic.get(`ha/sensor/${n}/heart_rate/config`) ?? '{}')
  t.equal(hrConfig.state_topic, `gym/hr/users/${anna.profile_id}/heart_rate`, 'upstream state topic is the bridge\'s reading topic')
  t.same(hrConfig.availability, [{ topic: 'gym/hr/relay/status', payload_available: 'online', payload_not_available: 'offline' }])
  t.same(JSON.parse(byTopic.get(`gym/hr/users/${anna.profile_id}/state`) ?? '{}'), { connected: false, battery_percent: null })

  // Unpairing her only device clears the strap's two configs and her state; her heart-rate sensor stays.
  await svc.admin('DELETE', '/admin/devices/strap-anna')
  const after = await eventually('strap configs cleared upstream', async () => {
    const msgs = await retained(t, mosq.url, topics)
    return msgs.length === 2 ? msgs : undefined
  })
  t.same(after.map(m => m.topic).sort(), ['gym/hr/relay/status', `ha/sensor/${n}/heart_rate/config`].sort())
  t.equal(after.find(m => m.topic === 'gym/hr/relay/status')?.payload, 'online')

  // Opting out withdraws her heart-rate sensor too.
  await svc.admin('PUT', '/admin/users/anna/home-assistant', { enabled: false })
  const optedOut = await eventually('every config cleared upstream', async () => {
    const msgs = await retained(t, mosq.url, topics)
    return msgs.length === 1 ? msgs : undefined
  })
  t.same(optedOut.map(m => [m.topic, m.payload]), [['gym/hr/relay/status', 'online']])

  // Stopping the relay leaves `offline` retained (published at stop; the will covers a crash).
  await svc.stop()
  const final = await eventually('offline status upstream', async () => {
    const msgs = await retained(t, mosq.url, ['gym/hr/relay/status'])
    return msgs[0]?.payload === 'offline' ? msgs : undefined
  })
  t.same(final.map(m => m.payload), ['offline'])
})
