// The byte gate in front of aedes, the CONNECT deadline and the keepalive limit.
import t from 'tap'
import { connect, type Socket } from 'node:net'
import { randomUUID } from 'node:crypto'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'
import { MalformedLengthError, MqttSizeGate, PacketTooLargeError } from '../../../relay/broker/limits.ts'
import { closed, connackCode, payload, startBroker } from '../../helpers/broker.ts'

const alice = randomUUID()
const hex = (s: string): Buffer => Buffer.from(s.replace(/\s+/g, ''), 'hex')

t.test('MqttSizeGate follows packet boundaries across chunks', async t => {
  const gate = new MqttSizeGate(10)
  // PINGREQ (c0 00), then a PUBLISH of 8 bytes total (30 06 + 6 body bytes) split in three chunks.
  t.equal(gate.check(hex('c0 00 30')), null)
  t.equal(gate.check(hex('06 00 01')), null)
  t.equal(gate.check(hex('61 62 63 64')), null)
  // Exactly the limit: 1 + 1 + 8 = 10 bytes.
  t.equal(gate.check(hex('30 08 0001 61 62636465 66')), null)
  const err = gate.check(hex('30 09'))
  t.ok(err instanceof PacketTooLargeError)
  t.equal((err as PacketTooLargeError).size, 11)
})

t.test('MqttSizeGate refuses a multi-byte length as soon as it is above the limit, and a 5-byte length', async t => {
  const gate = new MqttSizeGate(8192)
  // Remaining Length 268435455 (ff ff ff 7f): refused at the second length byte, before any body.
  const err = gate.check(hex('30 ff ff'))
  t.ok(err instanceof PacketTooLargeError)
  t.equal((err as PacketTooLargeError).size, 1 + 2 + 127 + 127 * 128)
  const big = new MqttSizeGate(Number.MAX_SAFE_INTEGER)
  t.ok(big.check(hex('30 80 80 80 80 01')) instanceof MalformedLengthError)
})

t.test('an oversized packet closes that connection only; the broker keeps serving another client', async t => {
  const h = await startBroker(t, { maxPacketBytes: 1024 })
  const cred = await h.device('hr-01', alice)
  const other = await h.connect({ username: cred.username, password: cred.password, clientId: 'other' })
  const big = await h.connect({ username: cred.username, password: cred.password, clientId: 'big' })
  const gone = closed(big)
  big.publish('hr-relay/v1/devices/hr-01/heart_rate', 'x'.repeat(2000), { qos: 1 })
  await gone
  t.equal(h.ingest.readings.length, 0, 'nothing of the oversized packet reached the pipeline')
  await other.publishAsync('hr-relay/v1/devices/hr-01/heart_rate', payload(66), { qos: 1 })
  t.same(h.ingest.readings.map(r => r.heart_rate), [66])
  t.equal(other.connected, true)
  t.match((await h.metrics.text()).body, /hr_relay_dropped_total\{reason="mqtt_packet_too_large"\} 1/)
})

t.test('an oversized CONNECT from a raw socket is cut off before aedes parses it', async t => {
  const h = await startBroker(t, { maxPacketBytes: 1024 })
  const socket: Socket = connect(h.broker.port ?? 0, '127.0.0.1')
  await new Promise<void>(resolve => { socket.once('connect', () => { resolve() }) })
  const received: Buffer[] = []
  socket.on('data', d => { received.push(d) })
  const ended = new Promise<void>(resolve => { socket.once('close', () => { resolve() }) })
  socket.on('error', () => {})
  // CONNECT with Remaining Length 100000 (a0 8d 06), then some of its body.
  socket.write(Buffer.concat([hex('10 a0 8d 06'), Buffer.alloc(4096, 0x41)]))
  await ended
  t.equal(Buffer.concat(received).length, 0, 'no CONNACK, nothing answered')
  t.equal(await connackCode(h.url, { username: 'app', password: await h.token(alice) }), 0, 'others still connect')
})

t.test('a socket that never sends CONNECT is closed after connect_timeout_ms', async t => {
  const h = await startBroker(t, { connectTimeoutMs: 300 })
  const socket = connect(h.broker.port ?? 0, '127.0.0.1')
  socket.on('error', () => {})
  const received: Buffer[] = []
  socket.on('data', d => { received.push(d) })
  await new Promise<void>(resolve => { socket.once('close', () => { resolve() }) })
  t.equal(Buffer.concat(received).length, 0)
  t.equal(socket.destroyed, true)
})

t.test('keepalive: 0 or above the limit is refused when a limit is set; a silent client is dropped after 1.5 x keepalive', async t => {
  const h = await startBroker(t, { keepaliveLimitS: 60 })
  const cred = await h.device('hr-01', alice)
  t.equal(await connackCode(h.url, { username: cred.username, password: cred.password, keepalive: 0 }), 6)
  t.equal(await connackCode(h.url, { username: cred.username, password: cred.password, keepalive: 120 }), 6)
  // A hand-made CONNECT with keepalive 1 s that then stays silent (no PINGREQ).
  const socket = connect(h.broker.port ?? 0, '127.0.0.1')
  socket.on('error', () => {})
  const packets: Buffer[] = []
  socket.on('data', d => { packets.push(d) })
  const user = Buffer.from(cred.username)
  const pass = Buffer.from(cred.password)
  const body = Buffer.concat([
    hex('0004 4d515454 04 c2 0001'), // "MQTT", level 4, flags username+password+clean, keepalive 1
    hex('0002'), Buffer.from('ka'),
    Buffer.from([0, user.length]), user,
    Buffer.from([0, pass.length]), pass
  ])
  socket.write(Buffer.concat([Buffer.from([0x10, body.length]), body]))
  await new Promise<void>(resolve => { socket.once('close', () => { resolve() }) })
  t.same(Buffer.concat(packets), hex('20 02 00 00'), 'CONNACK accepted, then closed for silence')
})

t.test('mqtt-packet\'s cache of 65,536 number buffers stays empty while the broker serves (6.4 MB of heap)', async t => {
  const h = await startBroker(t)
  const cred = await h.device('hr-01', alice)
  const client = await h.connect({ username: cred.username, password: cred.password })
  await client.publishAsync('hr-relay/v1/devices/hr-01/heart_rate', payload(70), { qos: 1 })
  t.same(h.ingest.readings.map(r => r.heart_rate), [70], 'the reading was acknowledged: aedes wrote CONNACK and PUBACK')
  // The module aedes writes with is the one the broker configured.
  const fromAedes = createRequire(fileURLToPath(import.meta.resolve('aedes'))).resolve('mqtt-packet')
  t.equal(fromAedes, createRequire(import.meta.url).resolve('mqtt-packet'))
  const numbers = createRequire(fromAedes)('./numbers.js') as { cache: Record<number, Buffer> }
  t.equal(Object.keys(numbers.cache).length, 0)
})
