// Who may connect, publish and subscribe: real aedes and mqtt.js over loopback TCP.
import t from 'tap'
import { randomUUID } from 'node:crypto'
import { closed, connackCode, payload, startBroker, subackCodes } from '../../helpers/broker.ts'
import { until } from '../../helpers/wait.ts'

const alice = randomUUID()
const bob = randomUUID()

t.test('CONNACK codes: wrong password 4, unknown device 4, anonymous 5, token without the read scope 5, expired token 4, good credentials 0', async t => {
  const h = await startBroker(t)
  const cred = await h.device('hr-01', alice)
  t.equal(cred.username, 'hr-01')
  t.match(cred.password, /^[A-Za-z0-9_-]{32}$/)
  t.equal(await connackCode(h.url, { username: 'hr-01', password: cred.password + 'x' }), 4)
  t.equal(await connackCode(h.url, { username: 'nobody', password: cred.password }), 4)
  t.equal(await connackCode(h.url, {}), 5)
  t.equal(await connackCode(h.url, { username: 'app', password: await h.token(alice, ['profile:read']) }), 5)
  t.equal(await connackCode(h.url, { username: 'app', password: await h.token(null, ['data:heart_rate:read']) }), 5)
  t.equal(await connackCode(h.url, { username: 'app', password: randomUUID() }), 4)
  t.equal(await connackCode(h.url, { username: 'hr-01', password: cred.password }), 0)
  t.equal(await connackCode(h.url, { username: 'any name', password: await h.token(alice) }), 0)
})

/** Resolves when the client's connection closes; rejects after a generous bound so a connection that stays open fails its own test. */
async function closedWithin (client: import('mqtt').MqttClient, ms = 20_000): Promise<void> {
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<never>((_resolve, reject) => { timer = setTimeout(() => { reject(new Error(`the connection stayed open for ${ms} ms`)) }, ms) })
  try { await Promise.race([closed(client), late]) } finally { clearTimeout(timer) }
}

t.test('client ids: a paired device\'s id is reserved for it; an app cannot take it, connected or not (CONNACK 2)', async t => {
  const h = await startBroker(t)
  const cred = await h.device('hr-01', alice)
  const other = await h.device('hr-02', bob)
  const token = await h.token(bob)
  // The device is offline: its id is still its own.
  t.equal(await connackCode(h.url, { clientId: 'hr-01', username: 'app', password: token }), 2, 'app tried first: refused')
  const device = await h.connect({ clientId: 'hr-01', username: cred.username, password: cred.password })
  t.equal(await connackCode(h.url, { clientId: 'hr-01', username: 'app', password: token }), 2, 'app while the device is connected: refused')
  t.equal(await connackCode(h.url, { clientId: 'hr-01', username: other.username, password: other.password }), 2, 'another device: refused')
  t.equal(device.connected, true, 'the device keeps its connection')
})

t.test('client ids: a device with valid credentials connects even when an app holds its client id; the app is the one dropped', async t => {
  const h = await startBroker(t)
  const cred = await h.device('hr-01', alice)
  const app = await h.connect({ clientId: 'bike-3', username: 'app', password: await h.token(bob) })
  const appGone = closedWithin(app)
  const device = await h.connect({ clientId: 'bike-3', username: cred.username, password: cred.password })
  await appGone
  t.equal(device.connected, true)
  t.equal(await connackCode(h.url, { clientId: 'bike-3', username: 'app', password: await h.token(bob) }), 2, 'the app cannot take it back')
  t.equal(device.connected, true, 'the device keeps its connection')
})

t.test('client ids: a device\'s reconnect takes over its own session; an app of the same user too, another user\'s app is refused', async t => {
  const h = await startBroker(t)
  const cred = await h.device('hr-01', alice)
  const first = await h.connect({ clientId: 'hr-01', username: cred.username, password: cred.password })
  const firstGone = closedWithin(first)
  const second = await h.connect({ clientId: 'hr-01', username: cred.username, password: cred.password })
  await firstGone
  t.equal(second.connected, true, 'the new connection holds the session [MQTT-3.1.4-2]')

  const app1 = await h.connect({ clientId: 'dashboard', username: 'app', password: await h.token(alice) })
  t.equal(await connackCode(h.url, { clientId: 'dashboard', username: 'app', password: await h.token(bob) }), 2)
  const app1Gone = closedWithin(app1)
  const app2 = await h.connect({ clientId: 'dashboard', username: 'app', password: await h.token(alice) })
  await app1Gone
  t.equal(app2.connected, true)
})

t.test('client ids: an id is free again once its holder disconnected; a replaced connection\'s close does not free its successor\'s id', async t => {
  const h = await startBroker(t)
  const appClients = async (): Promise<string> => ((await h.metrics.text()).body.match(/hr_relay_mqtt_clients\{kind="app"\} (\d+)/)?.[1]) ?? 'none'
  const first = await h.connect({ clientId: 'dashboard', username: 'app', password: await h.token(alice) })
  t.equal(await connackCode(h.url, { clientId: 'dashboard', username: 'app', password: await h.token(bob) }), 2, 'held by alice\'s app')
  const gone = closed(first)
  first.end()
  await gone
  // The broker sees the DISCONNECT on its own turn: wait for its count of apps, not for a time.
  await until('the broker releases the client id', async () => await appClients() === '0')
  const second = await h.connect({ clientId: 'dashboard', username: 'app', password: await h.token(bob) })
  t.equal(second.connected, true, 'bob\'s app takes the free id')
  // Alice's device takes it over: bob's app is closed, and its close must not release the device's hold.
  const cred = await h.device('hr-01', alice)
  const secondGone = closed(second)
  const device = await h.connect({ clientId: 'dashboard', username: cred.username, password: cred.password })
  await secondGone
  await until('the broker counts no app', async () => await appClients() === '0')
  t.equal(await connackCode(h.url, { clientId: 'dashboard', username: 'app', password: await h.token(bob) }), 2, 'the device holds it')
  t.equal(device.connected, true)
})

t.test('a device publishing to another device\'s topic is disconnected and nothing is stored', async t => {
  const h = await startBroker(t)
  const a = await h.device('hr-01', alice)
  await h.device('hr-02', bob)
  const client = await h.connect({ username: a.username, password: a.password })
  const gone = closed(client)
  client.publish('hr-relay/v1/devices/hr-02/heart_rate', payload(80), { qos: 1 })
  await gone
  t.equal(h.ingest.readings.length, 0, 'no reading reached the pipeline')
  t.match((await h.metrics.text()).body, /hr_relay_dropped_total\{reason="mqtt_unauthorized_publish"\} 1/)

  const again = await h.connect({ username: a.username, password: a.password })
  const gone2 = closed(again)
  again.publish('hr-relay/v1/users/' + bob + '/heart_rate', payload(80), { qos: 0 })
  await gone2
  t.equal(h.ingest.readings.length, 0, 'a device may not publish on a user topic either')
})

t.test('a device whose id is a MAC publishes on its topic in either spelling; readings reach the pipeline under its normalized id', async t => {
  const h = await startBroker(t)
  const a = await h.device('aa:bb:cc:dd:ee:01', alice)
  const client = await h.connect({ username: a.username, password: a.password })
  // The spelling the relay writes (normalized: upper case), then the device's own lower-case spelling.
  t.equal((await client.publishAsync('hr-relay/v1/devices/AA:BB:CC:DD:EE:01/heart_rate', payload(81), { qos: 1 }))?.cmd, 'publish', 'acknowledged')
  t.equal((await client.publishAsync('hr-relay/v1/devices/aa:bb:cc:dd:ee:01/heart_rate', payload(82), { qos: 1 }))?.cmd, 'publish', 'acknowledged')
  // Its status topic is no reading.
  await client.publishAsync('hr-relay/v1/devices/AA:BB:CC:DD:EE:01/status', 'online', { qos: 1 })
  t.same(h.ingest.readings.map(r => [r.device_id, r.heart_rate, r.source]), [['AA:BB:CC:DD:EE:01', 81, 'mqtt'], ['AA:BB:CC:DD:EE:01', 82, 'mqtt']])
  // Another device's topic in the same shape is still refused.
  const gone = closed(client)
  client.publish('hr-relay/v1/devices/AA:BB:CC:DD:EE:02/heart_rate', payload(83), { qos: 1 })
  await gone
  t.equal(h.ingest.readings.length, 2)
})

t.test('an app may not publish at all', async t => {
  const h = await startBroker(t)
  await h.device('hr-01', alice)
  const app = await h.connect({ username: 'app', password: await h.token(alice) })
  const gone = closed(app)
  app.publish('hr-relay/v1/devices/hr-01/heart_rate', payload(80), { qos: 1 })
  await gone
  t.equal(h.ingest.readings.length, 0)
})

t.test('SUBACK: own user topic granted, other user, wildcards and $SYS refused with 0x80; devices may not subscribe', async t => {
  const h = await startBroker(t)
  const cred = await h.device('hr-01', alice)
  await h.device('hr-02', bob)
  const app = await h.connect({ username: 'app', password: await h.token(alice) })
  t.same(await subackCodes(app, `hr-relay/v1/users/${alice}/heart_rate`), [1])
  t.same(await subackCodes(app, `hr-relay/v1/users/${alice}/heart_rate`, 0), [0])
  t.same(await subackCodes(app, `hr-relay/v1/users/${bob}/heart_rate`), [0x80])
  t.same(await subackCodes(app, '#'), [0x80])
  t.same(await subackCodes(app, '$SYS/#'), [0x80])
  t.same(await subackCodes(app, 'hr-relay/v1/users/+/heart_rate'), [0x80])
  t.same(await subackCodes(app, `hr-relay/v1/users/${alice}/#`), [0x80])
  t.same(await subackCodes(app, 'hr-relay/v1/devices/hr-01/status'), [1], 'the status of its own device')
  t.same(await subackCodes(app, 'hr-relay/v1/devices/hr-02/status'), [0x80], 'not another user\'s device')
  t.same(await subackCodes(app, 'hr-relay/v1/devices/hr-01/heart_rate'), [0x80])
  const device = await h.connect({ username: cred.username, password: cred.password })
  t.same(await subackCodes(device, `hr-relay/v1/users/${alice}/heart_rate`), [0x80])
  t.same(await subackCodes(device, 'hr-relay/v1/devices/hr-01/heart_rate'), [0x80])
})

t.test('an app receives its own user\'s stored readings on its topic, not another user\'s', async t => {
  const h = await startBroker(t)
  const app = await h.connect({ username: 'app', password: await h.token(alice) })
  t.same(await subackCodes(app, `hr-relay/v1/users/${alice}/heart_rate`), [1])
  const got: Array<{ topic: string, body: string }> = []
  const two = new Promise<void>(resolve => {
    app.on('message', (topic, body) => { got.push({ topic, body: body.toString() }); if (got.length === 2) resolve() })
  })
  h.feed.emit({ profile_id: bob, measured_at: 1_700_000_000_000, heart_rate: 99, source: 'ble' })
  h.feed.emit({ profile_id: alice, measured_at: 1_700_000_001_000, heart_rate: 71, source: 'ble' })
  h.feed.emit({ profile_id: alice, measured_at: 1_700_000_002_000, heart_rate: 72, source: 'mqtt', device_id: 'x' })
  await two
  t.same(got, [
    { topic: `hr-relay/v1/users/${alice}/heart_rate`, body: '{"measured_at":1700000001000,"data":{"heart_rate":71}}' },
    { topic: `hr-relay/v1/users/${alice}/heart_rate`, body: '{"measured_at":1700000002000,"data":{"heart_rate":72}}' }
  ])
})

t.test('stored readings are published only while a subscription matches a member topic; it is counted once and uncounted on unsubscribe and on disconnect', async t => {
  const h = await startBroker(t)
  await h.device('hr-01', alice)
  t.equal(h.broker.userTopicSubscribers, 0)
  const topic = `hr-relay/v1/users/${alice}/heart_rate`
  const app = await h.connect({ username: 'app', password: await h.token(alice) })
  await app.subscribeAsync('hr-relay/v1/devices/hr-01/status')
  t.equal(h.broker.userTopicSubscribers, 0, 'a device status subscription does not count')
  t.same(await subackCodes(app, topic), [1])
  t.same(await subackCodes(app, topic), [1])
  t.equal(h.broker.userTopicSubscribers, 1, 'subscribing twice to one topic counts once')
  await app.unsubscribeAsync(topic)
  t.equal(h.broker.userTopicSubscribers, 0)
  h.feed.emit({ profile_id: alice, measured_at: 1_700_000_003_000, heart_rate: 73, source: 'ble' })
  const got: string[] = []
  const one = new Promise<void>(resolve => { app.on('message', (_t, body) => { got.push(body.toString()); resolve() }) })
  t.same(await subackCodes(app, topic), [1])
  h.feed.emit({ profile_id: alice, measured_at: 1_700_000_004_000, heart_rate: 74, source: 'ble' })
  await one
  // A round trip after the reading: a second copy, or the unsubscribed one, would have arrived by now.
  await app.subscribeAsync('hr-relay/v1/devices/hr-01/status')
  t.same(got, ['{"measured_at":1700000004000,"data":{"heart_rate":74}}'])
  const gone = closed(app)
  app.end(true)
  await gone
  // The broker sees the socket close on its own turn: wait for that, not for a time.
  await until('the broker uncounts the closed client\'s subscription', () => h.broker.userTopicSubscribers === 0)
  t.equal(h.broker.userTopicSubscribers, 0, 'a disconnected client\'s subscription is uncounted')
})

t.test('device availability: retained online on connect, offline on disconnect, readable by the owner\'s app', async t => {
  const h = await startBroker(t)
  const cred = await h.device('hr-01', alice)
  const device = await h.connect({ username: cred.username, password: cred.password })
  // The broker marks the device connected on aedes' clientReady, which may come just after the client sees CONNACK.
  for (let i = 0; i < 100 && h.devices.stateOf('hr-01')?.connected !== true; i++) await new Promise(r => setTimeout(r, 20))
  t.equal(h.devices.stateOf('hr-01')?.connected, true)
  const app = await h.connect({ username: 'app', password: await h.token(alice) })
  const messages: string[] = []
  let onMessage = (): void => {}
  app.on('message', (_topic, body, packet) => { messages.push(`${body.toString()}${packet.retain ? ' (retained)' : ''}`); onMessage() })
  const first = new Promise<void>(resolve => { onMessage = resolve })
  t.same(await subackCodes(app, 'hr-relay/v1/devices/hr-01/status'), [1])
  await first
  const second = new Promise<void>(resolve => { onMessage = resolve })
  device.end()
  await second
  t.same(messages, ['online (retained)', 'offline'])
  t.equal(h.devices.stateOf('hr-01')?.connected, false)
})

t.test('removing a pairing disconnects the device and its credentials stop working', async t => {
  const h = await startBroker(t)
  const cred = await h.device('hr-01', alice)
  const device = await h.connect({ username: cred.username, password: cred.password })
  const gone = closed(device)
  await h.devices.remove('hr-01')
  await gone
  t.equal(await connackCode(h.url, { username: cred.username, password: cred.password }), 4)
})

t.test('an app connection closes when its token is revoked, its grant disconnected, or it expires (events and a timer, no poll)', async t => {
  const h = await startBroker(t)
  await h.device('hr-01', alice)
  const token = await h.token(alice)
  const app = await h.connect({ username: 'app', password: token })
  t.same(await subackCodes(app, `hr-relay/v1/users/${alice}/heart_rate`), [1])
  const gone = closedWithin(app)
  t.equal(await h.tokens.revoke(token), true)
  await gone
  t.equal(await connackCode(h.url, { username: 'app', password: token }), 4)

  const granted = await h.connect({ username: 'app', password: await h.token(bob) })
  const grantGone = closedWithin(granted)
  t.ok(await h.tokens.revokeGrant(bob, 'test') > 0, 'disconnect app')
  await grantGone

  const short = await h.connect({ username: 'app', password: await h.token(alice, ['data:heart_rate:read'], 2) })
  await closedWithin(short)
  t.equal(short.connected, false, 'closed at expiry')
})
