// BleSource over several adapters, each with a limit: the adapter that hears a
// strap best and has room takes it; an adapter that refuses (BlueZ's Failed
// "le-connection-abort-by-local") or accepts but stays silent hands the strap
// to another; an unplugged adapter hands its straps over and is used again
// when it is back. Real node-ble, real dbus-daemon, emulated radio.
import t from 'tap'
import { BleSource, type BleSourceOptions } from '../../../relay/sources/ble.ts'
import type { EmulatedStrap } from '../../../device-sim/ble/bluez-emulator.ts'
import { captureLogger, FAST, once, RecordingSink, startBleWorld, type Teardownable } from './ble-harness.ts'

const A = 'AA:BB:CC:00:00:01'
const B = 'AA:BB:CC:00:00:02'
const C = 'AA:BB:CC:00:00:03'
const D = 'AA:BB:CC:00:00:04'

const TWO = [{ name: 'hci0', maxConnections: 7 }, { name: 'hci1', maxConnections: 7 }]

async function started (t: Teardownable, world: Awaited<ReturnType<typeof startBleWorld>>, options: BleSourceOptions) {
  const sink = new RecordingSink()
  const { logger, lines } = captureLogger('info')
  const source = new BleSource({ ...FAST, logger, ...options })
  world.onTeardown(() => source.stop())
  await source.start(new AbortController().signal, sink)
  return { sink, source, lines }
}

const via = (source: BleSource, address: string): string | undefined =>
  source.diagnostics().links.find(l => l.address === address && l.connected)?.adapter

/**
 * Runs `add` (which adds a strap to the emulator) when the source next reports a sighting of `known`: sightings are
 * reported after every adapter of a rescan was scanned, so the strap is in every adapter's list at the next scan.
 */
async function addBetweenScans<T> (sink: RecordingSink, known: string, add: () => T): Promise<T> {
  const report = sink.device.bind(sink)
  return await new Promise<T>(resolve => {
    sink.device = sighting => {
      report(sighting)
      if (sighting.device_id !== known) return
      sink.device = report
      resolve(add())
    }
  })
}

/** Sends one reading each time the strap subscribes through `adapter` (the relay then has had its first notification). */
function answerOn (strap: EmulatedStrap, adapter: string, bpm: number): void {
  strap.on('subscribed', () => { if (strap.connectedVia === adapter) strap.sendHeartRate({ heart_rate: bpm }) })
}

t.test('each strap goes to the adapter that hears it best and has room', async t => {
  const world = await startBleWorld(t, { adapters: 2 })
  t.same(world.emulator.adapterNames, ['hci0', 'hci1'])
  const a = world.emulator.addStrap({ address: A, rssiAt: { hci0: -80, hci1: -50 } })
  const b = world.emulator.addStrap({ address: B, rssiAt: { hci0: -50, hci1: -80 } })
  const c = world.emulator.addStrap({ address: C, rssiAt: { hci0: -55, hci1: -60 } })
  const { sink, source } = await started(t, world, { adapters: [{ name: 'hci0', maxConnections: 2 }, { name: 'hci1', maxConnections: 2 }] })
  await sink.waitFor('three connected', () => source.status().connected === 3)
  t.same([a.connectedVia, b.connectedVia, c.connectedVia], ['hci1', 'hci0', 'hci0'])
  // hci0 hears D best but is at its max_connections: D goes to hci1.
  const d = world.emulator.addStrap({ address: D, rssiAt: { hci0: -40, hci1: -90 } })
  await sink.waitFor('four connected', () => source.status().connected === 4)
  t.equal(d.connectedVia, 'hci1')
  t.equal(d.connectCalls, 1, 'no attempt through the full adapter')
  t.same(source.adapters(), [
    { name: 'hci0', state: 'full', connections: 2, limit: 2, silent_total: 0, refused_total: 0 },
    { name: 'hci1', state: 'full', connections: 2, limit: 2, silent_total: 0, refused_total: 0 }
  ])
  t.same(source.diagnostics().links.map(l => [l.address, l.adapter]).sort(), [[A, 'hci1'], [B, 'hci0'], [C, 'hci0'], [D, 'hci1']])
  await sink.waitFor('sighting of D naming its adapter', () => sink.sightings.some(s => s.device_id === D && s.connected && s.adapter === 'hci1'))
  t.match(sink.sightings.filter(s => s.device_id === D).at(-1), { device_id: D, connected: true, adapter: 'hci1', rssi: -40 })
})

t.test('an adapter that refuses while it holds links is full for the hold time; the strap connects through another', async t => {
  const world = await startBleWorld(t, { adapters: 2 })
  world.emulator.setLimits('hci0', { maxConnections: 2 })
  let now = 1_000_000
  const a = world.emulator.addStrap({ address: A, rssiAt: { hci1: -80 }, rssi: -50 })
  const b = world.emulator.addStrap({ address: B, rssiAt: { hci1: -80 }, rssi: -50 })
  const { sink, source, lines } = await started(t, world, { adapters: TWO, now: () => now })
  await sink.waitFor('A and B connected', () => source.status().connected === 2)
  t.same([a.connectedVia, b.connectedVia], ['hci0', 'hci0'])
  // C appears between two scans (while a scan reports A): the next scan hears it through both adapters. Added at
  // an arbitrary moment, it could appear after hci0's scan and before hci1's, and be heard (and taken) by hci1 alone.
  const c = await addBetweenScans(sink, A, () => world.emulator.addStrap({ address: C, rssiAt: { hci1: -80 }, rssi: -50 }))
  answerOn(c, 'hci1', 66)
  await sink.waitFor('C connected', () => source.status().connected === 3)
  t.equal(c.connectedVia, 'hci1')
  t.equal(c.connectCalls, 2, 'refused once through hci0, then connected through hci1 at once')
  t.same(lines.filter(l => l.msg === 'adapter refused a connection while holding others; holding it full').map(l => [l.device, l.adapter, l.err]),
    [[C, 'hci0', 'org.bluez.Error.Failed: le-connection-abort-by-local']])
  t.same(source.adapters(), [
    { name: 'hci0', state: 'full', connections: 2, limit: 2, silent_total: 0, refused_total: 1 },
    { name: 'hci1', state: 'up', connections: 1, limit: 7, silent_total: 0, refused_total: 0 }
  ])
  await sink.waitFor('C reading', () => sink.readingsOf(C).length === 1)
  t.equal(sink.readingsOf(C)[0]?.heart_rate, 66)
  // A fourth strap while hci0 is held full: straight to hci1, no attempt through hci0.
  const d = await addBetweenScans(sink, A, () => world.emulator.addStrap({ address: D, rssiAt: { hci1: -80 }, rssi: -50 }))
  await sink.waitFor('D connected', () => source.status().connected === 4)
  t.same([d.connectedVia, d.connectCalls], ['hci1', 1])
  now += 30_000
  t.same(source.adapters()[0], { name: 'hci0', state: 'up', connections: 2, limit: 7, silent_total: 0, refused_total: 1 }, 'after 30 s the hold is over')
})

t.test('a link that connects and subscribes but stays silent moves to another adapter and is counted', async t => {
  const world = await startBleWorld(t, { adapters: 2 })
  world.emulator.setLimits('hci0', { silentAbove: 1 })
  const a = world.emulator.addStrap({ address: A, rssiAt: { hci1: -80 }, rssi: -50 })
  answerOn(a, 'hci0', 70)
  const { sink, source, lines } = await started(t, world, { adapters: TWO, silentAfterMs: 400 })
  await sink.waitFor('A reading', () => sink.readingsOf(A).length === 1)
  t.equal(a.connectedVia, 'hci0')
  const b = world.emulator.addStrap({ address: B, rssiAt: { hci1: -80 }, rssi: -50 })
  // hci1 hears B only once B is linked through hci0: with one adapter's discovery in, the relay links a strap
  // through that adapter, and on a loaded machine hci1's could come in first.
  b.vanish('hci1')
  answerOn(b, 'hci0', 90)
  answerOn(b, 'hci1', 71)
  await once(b, 'connected', 'B linked through hci0')
  t.equal(b.connectedVia, 'hci0')
  t.equal(b.silent, true, 'the emulator delivers nothing from the second link on hci0')
  b.appear('hci1')
  await sink.waitFor('B reading through hci1', () => sink.readingsOf(B).length === 1 && source.status().connected === 2)
  t.equal(b.connectedVia, 'hci1')
  t.same(sink.readingsOf(B).map(r => r.heart_rate), [71], 'nothing came through the silent link')
  t.equal(b.connectCalls, 2)
  t.same(lines.filter(l => l.msg === 'strap connected and subscribed but silent; trying another adapter').map(l => [l.device, l.adapter, l.silent_ms]),
    [[B, 'hci0', 400]])
  t.same(source.adapters().map(s => [s.name, s.state, s.connections, s.limit, s.silent_total]), [['hci0', 'full', 1, 1, 1], ['hci1', 'up', 1, 7, 0]])
  t.equal(a.connectedVia, 'hci0', 'A, which delivered, stays')
  t.equal(via(source, A), 'hci0')
})

t.test('an unplugged adapter hands its straps to the others, stays listed, and is used again when back', async t => {
  const world = await startBleWorld(t, { adapters: 2 })
  const a = world.emulator.addStrap({ address: A, rssiAt: { hci0: -50, hci1: -80 } })
  const b = world.emulator.addStrap({ address: B, rssiAt: { hci0: -80, hci1: -50 } })
  const { sink, source, lines } = await started(t, world, { adapters: TWO })
  await sink.waitFor('both connected', () => source.status().connected === 2)
  t.same([a.connectedVia, b.connectedVia], ['hci0', 'hci1'])
  answerOn(a, 'hci1', 75)

  world.emulator.unplugAdapter('hci0')
  await sink.waitFor('A through hci1', () => sink.readingsOf(A).length === 1 && source.status().connected === 2)
  t.equal(a.connectedVia, 'hci1')
  t.same(source.status(), { state: 'degraded', detail: 'adapter hci0 is not there', connected: 2 })
  t.same(source.adapters(), [
    { name: 'hci0', state: 'missing', connections: 0, limit: 7, silent_total: 0, refused_total: 0 },
    { name: 'hci1', state: 'up', connections: 2, limit: 7, silent_total: 0, refused_total: 0 }
  ])
  t.equal(lines.filter(l => l.msg === 'adapter went away; moving its straps to the other adapters' && l.adapter === 'hci0').length, 1)

  world.emulator.plugAdapter('hci0')
  await sink.waitFor('running again', () => source.status().state === 'running')
  t.equal(world.emulator.adapterNamed('hci0').discovering, true, 'discovery restarted on hci0')
  const c = world.emulator.addStrap({ address: C, rssiAt: { hci0: -50, hci1: -80 } })
  await sink.waitFor('C connected', () => source.status().connected === 3)
  t.equal(c.connectedVia, 'hci0', 'the adapter that is back takes the strap it hears best')
  t.same(source.adapters().map(s => [s.name, s.state, s.connections]), [['hci0', 'up', 1], ['hci1', 'up', 2]])
})

t.test('the old single adapter: one adapter with the default limit of 7', async t => {
  const world = await startBleWorld(t)
  world.emulator.addStrap({ address: A })
  const { sink, source } = await started(t, world, { adapter: 'hci0' })
  await sink.waitFor('connected', () => source.status().connected === 1)
  t.same(source.adapters(), [{ name: 'hci0', state: 'up', connections: 1, limit: 7, silent_total: 0, refused_total: 0 }])
})
