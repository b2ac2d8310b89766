// "Refused means not acknowledged as stored", over real sockets with real
// mqtt.js clients in both protocol versions. A refused QoS 1 publish (another
// device's topic, a payload that does not decode, a reading the pipeline did
// not store) is never answered with a PUBACK a client could take for success:
// - MQTT 3.1.1 has no reason codes: the connection is closed without PUBACK
//   ([MQTT-3.3.5-2]); the device resends after it reconnects.
// - MQTT 5: aedes 1.x refuses MQTT 5 connections (CONNACK "unacceptable
//   protocol version"), so no MQTT 5 device can publish at all. aedes 2.x
//   answers a publish refused by authorizePublish with PUBACK reason code
//   0x87 (Not authorized, a failure: >= 0x80) and keeps the connection. The
//   test follows the installed major version.
import t from 'tap'
import { randomUUID } from 'node:crypto'
import mqtt, { type IClientOptions, type MqttClient } from 'mqtt'
import { closed, payload, startBroker, type BrokerHarness } from '../../helpers/broker.ts'
import { installedVersion } from '../../../relay/dependency-internals.ts'

const alice = randomUUID()
const AEDES_MAJOR = Number(installedVersion('aedes').split('.')[0])
const TOPIC = 'hr-relay/v1/devices/hr-01/heart_rate'

const credentials = new WeakMap<BrokerHarness, { username: string, password: string }>()

interface Answer { acked: boolean, reasonCode: number | undefined, closed: boolean }

/** Connects a device and records every PUBACK it receives (by message id). */
async function device (t: { teardown (fn: () => unknown): void }, h: BrokerHarness, options: IClientOptions): Promise<{ client: MqttClient, pubacks: Map<number, number | undefined> }> {
  let cred = credentials.get(h)
  if (cred === undefined) { cred = await h.device('hr-01', alice); credentials.set(h, cred) }
  const client = mqtt.connect(h.url, { reconnectPeriod: 0, clientId: 'hr-01', ...cred, ...options })
  t.teardown(() => { client.end(true) })
  const pubacks = new Map<number, number | undefined>()
  client.on('packetreceive', packet => { if (packet.cmd === 'puback') pubacks.set(packet.messageId ?? -1, packet.reasonCode) })
  await new Promise<void>((resolve, reject) => { client.once('connect', () => { resolve() }); client.once('error', reject) })
  return { client, pubacks }
}

/** Publishes at QoS 1 and resolves with the answer: a PUBACK (and its reason code) or the connection's close. */
async function publish (client: MqttClient, pubacks: Map<number, number | undefined>, topic: string, body: string): Promise<Answer> {
  return await new Promise<Answer>(resolve => {
    const onClose = (): void => { resolve({ acked: false, reasonCode: undefined, closed: true }) }
    client.once('close', onClose)
    client.publish(topic, body, { qos: 1 }, (_err, packet) => {
      client.off('close', onClose)
      const id = packet?.messageId ?? -1
      resolve({ acked: pubacks.has(id), reasonCode: pubacks.get(id), closed: false })
    })
  })
}

const stored = (h: BrokerHarness): string[] => h.ingest.events.filter(e => e.startsWith('stored:'))

t.test('MQTT 3.1.1: a refused QoS 1 publish closes the connection without PUBACK, and nothing is stored', async t => {
  const h = await startBroker(t)
  const cases: Array<[string, string, string, () => void]> = [
    ['another device\'s topic', 'hr-relay/v1/devices/hr-02/heart_rate', payload(80), () => {}],
    ['a payload that does not decode', TOPIC, '{"heart_rate":"fast"}', () => {}],
    ['a reading the pipeline did not store', TOPIC, payload(81, Date.now()), () => { h.ingest.fail = true }]
  ]
  for (const [what, topic, body, arrange] of cases) {
    const { client, pubacks } = await device(t, h, { protocolVersion: 4 })
    arrange()
    t.same(await publish(client, pubacks, topic, body), { acked: false, reasonCode: undefined, closed: true }, `${what}: closed, no PUBACK`)
    t.equal(pubacks.size, 0, `${what}: no PUBACK at all`)
  }
  t.same(stored(h), [], 'nothing stored')
  h.ingest.fail = false
  const { client, pubacks } = await device(t, h, { protocolVersion: 4 })
  t.same(await publish(client, pubacks, TOPIC, payload(82, Date.now())), { acked: true, reasonCode: undefined, closed: false }, 'a good reading is acknowledged')
  t.same(stored(h), ['stored:82'])
})

t.test('MQTT 5: a refused QoS 1 publish is never acknowledged as stored', async t => {
  const h = await startBroker(t)
  if (AEDES_MAJOR < 2) {
    // aedes 1.x speaks MQTT 3.1 and 3.1.1 only: the CONNECT is refused, so nothing can be published.
    const cred = await h.device('hr-01', alice)
    const client = mqtt.connect(h.url, { reconnectPeriod: 0, protocolVersion: 5, ...cred })
    t.teardown(() => { client.end(true) })
    const codes: Array<number | undefined> = []
    client.on('packetreceive', packet => { if (packet.cmd === 'connack') codes.push(packet.reasonCode) })
    client.on('error', () => { /* the refusal, asserted below */ })
    await closed(client)
    t.same(codes, [1], 'CONNACK: unacceptable protocol version')
    t.equal(h.ingest.readings.length, 0)
    return
  }
  // aedes 2.x: PUBACK 0x87 (Not authorized) for each refusal; the connection stays open.
  const { client, pubacks } = await device(t, h, { protocolVersion: 5 })
  t.same(await publish(client, pubacks, 'hr-relay/v1/devices/hr-02/heart_rate', payload(80)), { acked: true, reasonCode: 0x87, closed: false }, 'another device\'s topic')
  t.same(await publish(client, pubacks, TOPIC, '{"heart_rate":"fast"}'), { acked: true, reasonCode: 0x87, closed: false }, 'a payload that does not decode')
  h.ingest.fail = true
  t.same(await publish(client, pubacks, TOPIC, payload(81, Date.now())), { acked: true, reasonCode: 0x87, closed: false }, 'a reading the pipeline did not store')
  t.same(stored(h), [], 'nothing stored')
  h.ingest.fail = false
  const good = await publish(client, pubacks, TOPIC, payload(82, Date.now()))
  t.same([good.acked, good.reasonCode ?? 0, good.closed], [true, 0, false], 'a good reading: PUBACK 0 (success)')
  t.same(stored(h), ['stored:82'])
})
