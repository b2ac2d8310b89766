import t from 'tap'
import { mkdtemp, realpath, rename, rm, symlink } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { openPtyPair } from '../../../device-sim/serial/pty.ts'
import { SerialDeviceSim } from '../../../device-sim/serial/device.ts'
import { SerialSource, serialPathDeviceId } from '../../../relay/sources/serial.ts'
import { RecorderSink, rig } from './serial-recorder.ts'

const fastReopen = { initialMs: 50, maxMs: 400 }
const PRESENCE_MS = 100

t.test('unplug then plug back at the same path: degraded, then running, every line exactly once', async t => {
  const { pair, device, source, sink } = await rig(t, { format: 'framed', reopen: fastReopen, presenceCheckMs: 200 })
  await device.sendIdentity('strap-7', '1.0')
  for (const bpm of [70, 71, 72]) await device.sendReading(bpm)
  await sink.waitFor('3 readings before unplug', () => sink.readings.length >= 3)

  await pair.unplug()
  await device.close()
  await sink.waitFor('degraded', () => source.status().state === 'degraded')
  t.match(source.status(), { state: 'degraded', connected: 0, detail: /port went away|cannot open/ })
  t.match(sink.devices.at(-1), { device_id: 'strap-7', connected: false }, 'the device is reported gone')

  await pair.plug()
  await sink.waitFor('running again', () => source.status().state === 'running')
  const device2 = new SerialDeviceSim({ path: pair.devicePath, format: 'framed' })
  await device2.open()
  t.teardown(() => device2.close())
  for (const bpm of [73, 74, 75]) await device2.sendReading(bpm)
  await sink.waitFor('6 readings', () => sink.readings.length >= 6)

  t.same(sink.bpms(), [70, 71, 72, 73, 74, 75], 'each line once, in order')
  t.ok(sink.readings.every(r => r.device_id === 'strap-7'), 'the learned id is kept across the reopen')
  const states = sink.states()
  t.same(states.slice(0, 3), ['starting', 'running', 'degraded'])
  t.equal(states.at(-1), 'running')
  t.same(sink.drops, [])
})

t.test('the presence watchdog reopens when the path comes to lead to another device with no hangup', async t => {
  // serialport reports an unplug only through a read parked in poll(); when
  // that never happens (bindings-cpp issue 162), the watchdog is what notices.
  // Simulated deterministically: the configured path is a symlink that is
  // swapped from pty pair A to pair B while A stays alive, so no hangup at all.
  const a = await openPtyPair()
  t.teardown(() => a.close())
  const b = await openPtyPair()
  t.teardown(() => b.close())
  const dir = await mkdtemp(join(tmpdir(), 'hr-relay-swap-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const path = join(dir, 'ttyHR')
  await symlink(await realpath(a.relayPath), path)

  const source = new SerialSource({ path, format: 'text', reopen: fastReopen, presenceCheckMs: PRESENCE_MS })
  const sink = new RecorderSink()
  t.teardown(() => source.stop())
  await source.start(new AbortController().signal, sink)
  t.equal(source.status().state, 'running')

  await symlink(await realpath(b.relayPath), path + '.new')
  await rename(path + '.new', path)
  await sink.waitFor('running after a reopen', () => sink.states().filter(s => s === 'running').length >= 2, 10_000)
  t.same(sink.states(), ['starting', 'running', 'degraded', 'running'])
  t.match(sink.statuses[2], { detail: /now leads elsewhere/ })

  const device = new SerialDeviceSim({ path: b.devicePath, format: 'text' })
  await device.open()
  t.teardown(() => device.close())
  await device.sendReading(91)
  await sink.waitFor('1 reading from the new device', () => sink.readings.length >= 1)
  t.same(sink.bpms(), [91])
})

t.test('a missing path at start does not throw; the source retries until the port appears', async t => {
  const dir = await mkdtemp(join(tmpdir(), 'hr-relay-missing-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const source = new SerialSource({ path: join(dir, 'relay'), format: 'text', reopen: fastReopen })
  const sink = new RecorderSink()
  const ac = new AbortController()
  t.teardown(() => source.stop())
  await source.start(ac.signal, sink)
  t.match(source.status(), { state: 'degraded', detail: /cannot open .*relay/ })
  t.same(sink.readings, [])

  const pair = await openPtyPair({ dir })
  t.teardown(() => pair.close())
  await sink.waitFor('running once the port exists', () => source.status().state === 'running')
  const device = new SerialDeviceSim({ path: pair.devicePath, format: 'text' })
  await device.open()
  t.teardown(() => device.close())
  await device.sendReading(58)
  await sink.waitFor('1 reading', () => sink.readings.length >= 1)
  t.same(sink.bpms(), [58])
  t.equal(sink.readings[0]?.device_id, serialPathDeviceId(join(dir, 'relay')))
})

function timers (): number {
  return process.getActiveResourcesInfo().filter(r => r === 'Timeout').length
}

t.test('stop() clears every timer, is idempotent, and abort stops too', async t => {
  const before = timers()
  const pair = await openPtyPair()
  t.teardown(() => pair.close())
  const device = new SerialDeviceSim({ path: pair.devicePath, format: 'hrmi' })
  await device.open()
  t.teardown(() => device.close())
  const source = new SerialSource({ path: pair.relayPath, format: 'hrmi', pollIntervalMs: 20, presenceCheckMs: 20 })
  const sink = new RecorderSink()
  const ac = new AbortController()
  await source.start(ac.signal, sink)
  await device.waitForPolls(2)
  t.ok(timers() > before, 'polling and presence timers while running')
  await source.stop()
  await source.stop()
  t.equal(timers(), before, 'no timers left')
  t.equal(source.status().state, 'stopped')
  t.equal(sink.states().at(-1), 'stopped')

  // A source waiting to reopen a missing path: abort clears the reopen timer.
  const dir = await mkdtemp(join(tmpdir(), 'hr-relay-missing-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const missing = new SerialSource({ path: join(dir, 'nope'), format: 'text', reopen: { initialMs: 60_000, maxMs: 60_000 } })
  const sink2 = new RecorderSink()
  const ac2 = new AbortController()
  await missing.start(ac2.signal, sink2)
  t.equal(missing.status().state, 'degraded')
  t.equal(timers(), before + 1, 'one reopen timer')
  ac2.abort()
  await sink2.waitFor('stopped by abort', () => missing.status().state === 'stopped')
  t.equal(timers(), before, 'reopen timer cleared')
  await t.rejects(missing.start(ac2.signal, sink2), /already started/)
})
