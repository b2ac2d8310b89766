// BleSource recovery: link drops, refused connects, services that never
// resolve, straps that vanish, the adapter powered off, and listener hygiene
// over reconnects. Real node-ble, real dbus-daemon, emulated radio.
import t from 'tap'
import * as dbus from 'dbus-next'
import { BleSource } from '../../../relay/sources/ble.ts'
import { captureLogger, FAST, once, RecordingSink, startBleWorld, type Teardownable } from './ble-harness.ts'

const A = 'AA:BB:CC:00:00:01'
const B = 'AA:BB:CC:00:00:02'

async function started (t: Teardownable, options: ConstructorParameters<typeof BleSource>[0] = {}) {
  const world = await startBleWorld(t)
  const sink = new RecordingSink()
  const { logger, lines } = captureLogger('info')
  const source = new BleSource({ ...FAST, logger, ...options })
  world.onTeardown(() => source.stop())
  return { world, sink, source, lines, go: async () => { await source.start(new AbortController().signal, sink) } }
}

/** MatchRules of one connection, from dbus-daemon's org.freedesktop.DBus.Debug.Stats. */
async function matchRules (busAddress: string, name: string): Promise<number> {
  const client = dbus.sessionBus({ busAddress })
  client.on('error', () => {})
  try {
    const reply = await client.call(new dbus.Message({
      destination: 'org.freedesktop.DBus',
      path: '/org/freedesktop/DBus',
      interface: 'org.freedesktop.DBus.Debug.Stats',
      member: 'GetConnectionStats',
      signature: 's',
      body: [name]
    }))
    const stats = reply?.body[0] as Record<string, dbus.Variant> | undefined
    return stats?.MatchRules?.value as number
  } finally {
    client.disconnect()
  }
}

const connectionsOf = (source: BleSource, address: string): number =>
  source.diagnostics().links.find(l => l.address === address)?.connections ?? 0

t.test('a dropped link reconnects and readings resume', async t => {
  const { world, sink, source, lines, go } = await started(t)
  const a = world.emulator.addStrap({ address: A })
  await go()
  await sink.waitFor('connected', () => source.status().connected === 1)
  t.equal(a.sendHeartRate({ heart_rate: 70 }), true)
  await sink.waitFor('first reading', () => sink.readings.length === 1)

  a.dropLink()
  t.equal(a.connected, false)
  await sink.waitFor('reconnected', () => connectionsOf(source, A) === 2 && source.status().connected === 1)
  t.ok(sink.statuses.some(s => s.state === 'running' && s.connected === 0), 'status went through connected: 0')
  t.equal(a.connected, true)
  t.equal(a.sendHeartRate({ heart_rate: 71 }), true)
  await sink.waitFor('second reading', () => sink.readings.length === 2)
  t.same(sink.readings.map(r => r.heart_rate), [70, 71])
  t.equal(lines.filter(l => l.msg === 'strap link dropped').length, 1)
})

t.test('Connect refused with Failed, and another with InProgress, then both connect', async t => {
  const { world, sink, source, lines, go } = await started(t)
  const a = world.emulator.addStrap({ address: A })
  const b = world.emulator.addStrap({ address: B })
  a.faults = { refuseConnect: 'Failed', refuseCount: 2 }
  b.faults = { refuseConnect: 'InProgress', refuseCount: 1 }
  await go()
  await sink.waitFor('both connected', () => source.status().connected === 2)
  t.equal(a.connectCalls, 3, 'A: two refusals, then success')
  t.equal(b.connectCalls, 2, 'B: one refusal, then success')
  const failures = lines.filter(l => l.msg === 'strap connection attempt failed')
  t.same(failures.filter(l => l.device === A).map(l => l.err), [
    'org.bluez.Error.Failed: Software caused connection abort',
    'org.bluez.Error.Failed: Software caused connection abort'
  ])
  t.same(failures.filter(l => l.device === B).map(l => l.err), ['org.bluez.Error.InProgress: In Progress'])
  t.equal(a.sendHeartRate({ heart_rate: 80 }) && b.sendHeartRate({ heart_rate: 81 }), true)
  await sink.waitFor('two readings', () => sink.readings.length === 2)
  t.same(sink.readings.map(r => [r.device_id, r.heart_rate]).sort(), [[A, 80], [B, 81]])
})

t.test('services that never resolve time out, the link is reset, and it retries', async t => {
  const { world, sink, source, lines, go } = await started(t, { gattTimeoutMs: 600 })
  const a = world.emulator.addStrap({ address: A })
  a.faults = { neverResolveServices: true }
  let connects = 0
  let disconnects = 0
  a.on('connected', () => { connects++ })
  a.on('disconnected', () => { disconnects++ })
  await go()
  while (connects < 2) await once(a, 'connected', 'a second Connect after the timeout')
  t.ok(disconnects >= 1, 'the relay disconnected the half-open link before retrying')
  t.equal(source.status().connected, 0)
  t.ok(lines.some(l => l.msg === 'strap connection attempt failed' && l.device === A &&
    l.err === 'BlueZ did not answer in time (ServicesResolved after 600 ms)'), 'timeout logged')
  a.faults = {}
  await sink.waitFor('connected once services resolve', () => source.status().connected === 1)
  t.equal(a.sendHeartRate({ heart_rate: 90 }), true)
  await sink.waitFor('reading', () => sink.readings.length === 1)
})

t.test('a strap that vanishes and comes back is reconnected', async t => {
  const { world, sink, source, go } = await started(t)
  world.emulator.addStrap({ address: A })
  await go()
  await sink.waitFor('connected', () => source.status().connected === 1)
  world.emulator.removeStrap(A)
  await sink.waitFor('disconnected', () => source.status().connected === 0)
  const again = world.emulator.addStrap({ address: A, name: 'back again' })
  t.equal(again.visible, true, 'appears at once while discovery runs')
  await sink.waitFor('reconnected', () => source.status().connected === 1)
  t.equal(again.connected, true)
  t.equal(again.sendHeartRate({ heart_rate: 64 }), true)
  await sink.waitFor('reading', () => sink.readings.length === 1)
  t.equal(sink.readings[0]?.heart_rate, 64)
  await sink.waitFor('sighted again with its new name', () => sink.sightings.some(s => s.device_id === A && s.name === 'back again'))
  t.match(sink.sightings[sink.sightings.length - 1], { device_id: A, name: 'back again' })
})

t.test('adapter powered off and on: degraded, then running, discovery and links restored', async t => {
  const { world, sink, source, go } = await started(t)
  const a = world.emulator.addStrap({ address: A })
  await go()
  await sink.waitFor('connected', () => source.status().connected === 1)
  world.emulator.powerOff()
  await sink.waitFor('degraded', () => source.status().state === 'degraded')
  t.same(source.status(), { state: 'degraded', detail: 'adapter hci0 is powered off', connected: 0 })
  t.equal(world.emulator.discovering, false)
  world.emulator.powerOn()
  await sink.waitFor('running again', () => source.status().state === 'running' && source.status().connected === 1)
  t.equal(world.emulator.discovering, true, 'discovery restarted')
  t.equal(a.sendHeartRate({ heart_rate: 77 }), true)
  await sink.waitFor('reading', () => sink.readings.length === 1)
  t.same(sink.statuses.map(s => s.state).filter((s, i, all) => s !== all[i - 1]), ['starting', 'running', 'degraded', 'running'])
})

t.test('listener counts stay bounded over 5 reconnects', async t => {
  const { world, sink, source, go } = await started(t)
  const a = world.emulator.addStrap({ address: A })
  await go()
  await sink.waitFor('connected', () => source.status().connected === 1)
  const baseline = source.diagnostics().signalListeners
  t.ok(baseline > 0, `a connected strap holds some signal listeners (${baseline})`)
  const busName = source.diagnostics().busName
  t.type(busName, 'string')
  const rulesBefore = await matchRules(world.bus.address, busName ?? '')
  for (let i = 2; i <= 6; i++) {
    a.dropLink()
    await sink.waitFor(`connection ${i}`, () => connectionsOf(source, A) === i && source.status().connected === 1)
  }
  t.equal(source.diagnostics().signalListeners, baseline, 'same number of dbus-next signal listeners as after the first connect')
  // The daemon's own count: dbus-next never sends RemoveMatch by itself, and
  // the system bus allows 512 rules per connection.
  t.equal(await matchRules(world.bus.address, busName ?? ''), rulesBefore, 'same number of match rules in dbus-daemon')
  t.equal(a.sendHeartRate({ heart_rate: 100 }), true)
  await sink.waitFor('reading', () => sink.readings.length === 1)
  t.equal(sink.readings.length, 1, 'one notification gives one reading (no duplicate valuechanged listeners)')
})
