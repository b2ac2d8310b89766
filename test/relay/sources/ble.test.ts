// BleSource against the BlueZ emulator over a real dbus-daemon, through node-ble.
import t from 'tap'
import { BleSource } from '../../../relay/sources/ble.ts'
import type { Reading } from '../../../api/pipeline/reading.ts'
import { FAST, RecordingSink, startBleWorld } from './ble-harness.ts'

const A = 'AA:BB:CC:00:00:01'
const B = 'AA:BB:CC:00:00:02'
const C = 'AA:BB:CC:00:00:03'

t.test('three straps connect and deliver exactly the readings sent', async t => {
  const world = await startBleWorld(t)
  const a = world.emulator.addStrap({ address: A, name: 'Polar H10 A', battery: 87, rssi: -55 })
  const b = world.emulator.addStrap({ address: B, name: 'Wahoo TICKR', battery: 40 })
  const c = world.emulator.addStrap({ address: C, name: 'Optical' })
  const sink = new RecordingSink()
  const source = new BleSource(FAST)
  world.onTeardown(() => source.stop())
  await source.start(new AbortController().signal, sink)
  await sink.waitFor('three connected straps', () => source.status().connected === 3)
  t.same(source.status(), { state: 'running', connected: 3 })
  t.same(sink.lastStatus, { state: 'running', connected: 3 })
  t.equal(a.notifying && b.notifying && c.notifying, true, 'all three subscribed to 0x2A37')

  t.equal(a.sendHeartRate({ heart_rate: 72, sensor_contact: 'detected', rr_intervals: [1024, 512] }), true)
  t.equal(b.sendHeartRate({ heart_rate: 300, value_format: 'uint16', sensor_contact: 'not_detected', energy_expended_kj: 12 }), true)
  t.equal(c.sendHeartRate({ heart_rate: 61 }), true)
  t.equal(a.sendHeartRate({ heart_rate: 0, sensor_contact: 'not_detected' }), true)
  await sink.waitFor('four readings', () => sink.readings.length === 4)

  const strip = (r: Reading): Omit<Reading, 'measured_at'> => {
    const { measured_at: at, ...rest } = r
    t.type(at, 'number')
    return rest
  }
  t.same(sink.readingsOf(A).map(strip), [
    { device_id: A, source: 'ble', heart_rate: 72, rr_intervals_ms: [1000, 500], sensor_contact: true, battery_percent: 87 },
    { device_id: A, source: 'ble', heart_rate: 0, sensor_contact: false, battery_percent: 87 }
  ])
  t.same(sink.readingsOf(B).map(strip), [
    { device_id: B, source: 'ble', heart_rate: 300, energy_expended_kj: 12, sensor_contact: false, battery_percent: 40 }
  ])
  t.same(sink.readingsOf(C).map(strip), [{ device_id: C, source: 'ble', heart_rate: 61 }])
  t.strictSame(sink.drops, [])

  const sightA = sink.sightings.filter(s => s.device_id === A)
  t.ok(sightA.length > 0, 'strap A sighted')
  t.match(sightA[sightA.length - 1], { device_id: A, source: 'ble', name: 'Polar H10 A', rssi: -55 })
})

t.test('allow-list: an unallowed strap is sighted but not connected', async t => {
  const world = await startBleWorld(t)
  const a = world.emulator.addStrap({ address: A, name: 'allowed' })
  const b = world.emulator.addStrap({ address: B, name: 'stranger' })
  const sink = new RecordingSink()
  const source = new BleSource({ ...FAST, allow: [A.toLowerCase()] })
  world.onTeardown(() => source.stop())
  await source.start(new AbortController().signal, sink)
  await sink.waitFor('A connected and B sighted', () =>
    source.status().connected === 1 && sink.sightings.filter(s => s.device_id === B).length >= 3)
  t.equal(a.connected, true)
  t.equal(b.connected, false)
  t.equal(sink.sightings.filter(s => s.device_id === B).every(s => !s.connected), true)
  t.equal(b.sendHeartRate({ heart_rate: 90 }), false, 'nobody subscribed to B')
  t.same(source.diagnostics().links.map(l => l.address), [A])
})

t.test('shouldConnect decides when there is no allow-list', async t => {
  const world = await startBleWorld(t)
  const a = world.emulator.addStrap({ address: A })
  const b = world.emulator.addStrap({ address: B })
  const asked = new Set<string>()
  const sink = new RecordingSink()
  const source = new BleSource({
    ...FAST,
    shouldConnect: async (address) => { asked.add(address); return address === B }
  })
  world.onTeardown(() => source.stop())
  await source.start(new AbortController().signal, sink)
  await sink.waitFor('B connected, A asked twice', () => source.status().connected === 1 && sink.sightings.filter(s => s.device_id === A).length >= 3)
  t.same([...asked].sort(), [A, B])
  t.equal(a.connected, false)
  t.equal(b.connected, true)
  t.equal(b.sendHeartRate({ heart_rate: 66 }), true)
  await sink.waitFor('reading from B', () => sink.readings.length === 1)
  t.equal(sink.readings[0]?.device_id, B)
  t.equal(sink.readings[0]?.heart_rate, 66)
})

t.test('malformed notifications are counted as dropped and the link keeps working', async t => {
  const world = await startBleWorld(t)
  const a = world.emulator.addStrap({ address: A })
  const sink = new RecordingSink()
  const source = new BleSource(FAST)
  world.onTeardown(() => source.stop())
  await source.start(new AbortController().signal, sink)
  await sink.waitFor('connected', () => source.status().connected === 1)
  t.equal(a.notify(Uint8Array.of(0x10, 70, 0x00)), true, 'odd RR bytes')
  t.equal(a.notify(Uint8Array.of(0x01, 70)), true, 'UINT16 value truncated')
  t.equal(a.notify(new Uint8Array(0)), true, 'empty')
  t.equal(a.notify(Uint8Array.of(0x16, 75, 0x00, 0x04)), true, 'valid, one RR value')
  await sink.waitFor('one reading and three drops', () => sink.readings.length === 1 && sink.drops.length === 3)
  t.strictSame(sink.drops, ['ble_malformed', 'ble_malformed', 'ble_malformed'])
  t.match(sink.readings[0], { heart_rate: 75, rr_intervals_ms: [1000], sensor_contact: true })
  t.same(source.status(), { state: 'running', connected: 1 })
})

t.test('body sensor location is read on connect and nothing is written to the control point', async t => {
  const world = await startBleWorld(t)
  const a = world.emulator.addStrap({ address: A, location: 2 })
  const sink = new RecordingSink()
  const { captureLogger } = await import('./ble-harness.ts')
  const { logger, lines } = captureLogger('info')
  const source = new BleSource({ ...FAST, logger })
  world.onTeardown(() => source.stop())
  await source.start(new AbortController().signal, sink)
  await sink.waitFor('connected', () => source.status().connected === 1)
  const connectedLine = lines.find(l => l.msg === 'strap connected')
  t.match(connectedLine, { component: 'ble', device: A, location: 'Wrist' })
  t.same(a.controlPointWrites, [], 'the relay does not reset energy on its own')
})

t.test('battery changes reach sightings and later readings', async t => {
  const world = await startBleWorld(t)
  const a = world.emulator.addStrap({ address: A, battery: 90 })
  const sink = new RecordingSink()
  const source = new BleSource(FAST)
  world.onTeardown(() => source.stop())
  await source.start(new AbortController().signal, sink)
  await sink.waitFor('connected', () => source.status().connected === 1)
  a.setBattery(35)
  await sink.waitFor('sighting with 35 %', () => sink.sightings.some(s => s.device_id === A && s.battery_percent === 35 && s.connected))
  t.equal(a.sendHeartRate({ heart_rate: 58 }), true)
  await sink.waitFor('reading', () => sink.readings.length === 1)
  t.match(sink.readings[0], { device_id: A, heart_rate: 58, battery_percent: 35 })
})
