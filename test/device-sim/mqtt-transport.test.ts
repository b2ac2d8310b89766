// The MQTT transport and its faults, against a real aedes broker over TCP.
import t from 'tap'
import { decodeDevicePayload, MAX_DEVICE_PAYLOAD_BYTES } from '../../firmware-protocol/mqtt.ts'
import { parseFaultFlag } from '../../device-sim/faults.ts'
import { formatCsv, parseRecording } from '../../device-sim/replay.ts'
import { Simulation, type SimEvent } from '../../device-sim/runner.ts'
import { loadScenario } from '../../device-sim/scenario.ts'
import { MqttTransport } from '../../device-sim/transports/mqtt.ts'
import { startBroker } from './aedes-harness.ts'

const creds = (n: number) => Array.from({ length: n }, (_v, i) => ({ device_id: `dev-${i}`, mqtt_username: `dev-${i}`, mqtt_password: 'pw' }))
const devices = (n: number) => Array.from({ length: n }, (_v, i) => ({ index: i, device_id: `dev-${i}`, label: `P${i}` }))

t.test('readings, contact lost, skew, garbage, oversized and bursts arrive as the flags say', async t => {
  const broker = await startBroker(t)
  const transport = new MqttTransport({ url: broker.url, credentials: creds(2), qos: 1 })
  t.teardown(() => transport.close())
  await transport.open(devices(2))
  const startAt = 1_800_000_000_000
  const sim = new Simulation({
    transport,
    devices: devices(2),
    rateHz: 1,
    durationS: 10,
    seed: 11,
    scenario: await loadScenario('rest'),
    realtime: false,
    startAt,
    faults: [
      parseFaultFlag('skew', '5000', [1]),
      parseFaultFlag('contact_lost', '100/2@3'),
      parseFaultFlag('garbage', '100@5', [0]),
      parseFaultFlag('oversized', '100@6', [0]),
      parseFaultFlag('burst', '100/4@7', [1])
    ]
  })
  const sent: Array<Extract<SimEvent, { type: 'reading' }>> = []
  sim.on('event', ev => { if (ev.type === 'reading') sent.push(ev) })
  const stats = await sim.run()
  t.equal(stats[0]!.sent, 10)
  t.equal(stats[1]!.sent, 14, '10 + a burst of 4')
  t.equal(stats[0]!.delivered + stats[1]!.delivered, 24, 'every reading PUBACKed')
  t.same(stats[0]!.faults, { contact_lost: 1, garbage: 1, oversized: 1 })
  t.same(stats[1]!.faults, { skew: 1, contact_lost: 1, burst: 1 })

  await broker.waitFor(26) // 24 readings + garbage + oversized
  const byDevice = (id: string) => broker.received.filter(r => r.device_id === id)
  const good0 = byDevice('dev-0').filter(r => r.payload.length < 1000).flatMap(r => { try { return [decodeDevicePayload(r.payload)] } catch { return [] } })
  t.equal(good0.length, 10)
  t.same(good0.map(r => r.measured_at), Array.from({ length: 10 }, (_v, k) => startAt + (k + 1) * 1000), 'device 0: no skew')
  t.same(good0.filter(r => r.heart_rate === 0).map(r => r.measured_at), [startAt + 4000, startAt + 5000], 'contact lost from 3 s for 2 s: 0 bpm')
  for (const r of good0.filter(r => r.heart_rate === 0)) {
    t.equal(r.sensor_contact, false)
    t.equal(r.rr_intervals_ms, undefined, 'no RR without contact')
  }
  t.ok(good0.filter(r => r.heart_rate > 0).every(r => r.sensor_contact === true && r.heart_rate > 35))
  const bad0 = byDevice('dev-0').filter(r => { try { decodeDevicePayload(r.payload); return false } catch { return true } })
  t.equal(bad0.length, 2, 'garbage and oversized payloads do not decode')
  t.ok(bad0.some(r => r.payload.length > MAX_DEVICE_PAYLOAD_BYTES), 'oversized is above the payload limit')
  t.throws(() => JSON.parse(bad0.find(r => r.payload.length < 1000)!.payload.toString()), 'garbage is not JSON')

  const got1 = byDevice('dev-1').map(r => decodeDevicePayload(r.payload))
  t.equal(got1.length, 14)
  const sent1 = sent.filter(e => e.device === 1).map(e => e.reading.measured_at)
  t.same(got1.map(r => r.measured_at).sort(), [...sent1].sort(), 'what was sent arrived')
  const regular = got1.filter((_r, i) => !sent.filter(e => e.device === 1)[i]!.burst)
  t.same(regular.map(r => r.measured_at), Array.from({ length: 10 }, (_v, k) => startAt + (k + 1) * 1000 + 5000), 'device 1: every timestamp 5000 ms late')
  t.equal(new Set(got1.map(r => r.measured_at)).size, 14, 'burst readings have distinct timestamps')
})

t.test('drop and unplug end the connection and the device comes back', async t => {
  const broker = await startBroker(t)
  const transport = new MqttTransport({ url: broker.url, credentials: creds(1), qos: 1 })
  t.teardown(() => transport.close())
  await transport.open(devices(1))
  const sim = new Simulation({ transport, devices: devices(1), rateHz: 1, durationS: 12, seed: 1, scenario: await loadScenario('rest'), realtime: false, faults: [parseFaultFlag('drop', '100/2@2'), parseFaultFlag('unplug', '100/3@7')] })
  const links: string[] = []
  sim.on('event', ev => { if (ev.type === 'link') links.push(`${ev.up ? 'up' : 'down'}:${ev.kind}@${ev.at}`) })
  const stats = await sim.run()
  t.same(links, ['down:drop@3000', 'up:drop@5000', 'down:unplug@8000', 'up:unplug@11000'])
  t.equal(stats[0]!.sent, 7, '12 ticks minus 2 dropped minus 3 unplugged')
  t.equal(stats[0]!.delivered, 7)
  t.same(stats[0]!.faults, { drop: 1, unplug: 1 })
  t.equal(broker.connects.get('dev-0'), 3, 'connected at start, after the drop, after the unplug')
  await broker.waitFor(7)
  t.equal(broker.received.length, 7)
})

t.test('a recorded session replays exactly', async t => {
  const csv = `measured_at,heart_rate,rr_ms...
1700000000000,72,830
1700000000900,74,812,800
1700000002400,0
1700000003000,75
# a comment
1700000004500,180,333,334,335
`
  const rec = parseRecording(csv)
  t.equal(rec.length, 5)
  t.same(parseRecording(rec.map(r => JSON.stringify(r)).join('\n')), rec, 'JSON lines read the same')
  t.same(parseRecording(formatCsv(rec)), rec, 'CSV round trip')
  t.same(parseRecording('{"measured_at": 5, "data": {"heart_rate": 60}}'), [{ measured_at: 5, heart_rate: 60 }], 'the API reading shape')
  t.throws(() => parseRecording('1700000000000,abc'), { code: 'bad_recording' })
  t.throws(() => parseRecording('2,60\n1,60'), { code: 'bad_recording', message: /line 2/ })
  t.throws(() => parseRecording(''), { code: 'bad_recording' })

  const broker = await startBroker(t)
  const transport = new MqttTransport({ url: broker.url, credentials: creds(1), qos: 1 })
  t.teardown(() => transport.close())
  await transport.open(devices(1))
  const sim = new Simulation({ transport, devices: devices(1), rateHz: 1, seed: 1, scenario: await loadScenario('rest'), replay: rec, realtime: false, faults: [] })
  const stats = await sim.run()
  t.equal(stats[0]!.delivered, 5)
  await broker.waitFor(5)
  const got = broker.received.map(r => decodeDevicePayload(r.payload))
  t.same(got.map(r => ({ measured_at: r.measured_at, heart_rate: r.heart_rate, ...(r.rr_intervals_ms === undefined ? {} : { rr_intervals_ms: r.rr_intervals_ms }) })), rec)
})
