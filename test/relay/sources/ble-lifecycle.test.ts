// BleSource lifecycle: no bus, no BlueZ on the bus, stop() and the abort signal.
import { spawn } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { startPrivateBus } from '../../../device-sim/ble/private-bus.ts'
import { BluezEmulator } from '../../../device-sim/ble/bluez-emulator.ts'
import { BleSource } from '../../../relay/sources/ble.ts'
import { captureLogger, FAST, RecordingSink, startBleWorld } from './ble-harness.ts'

t.test('no system bus: unavailable, logged exactly once while it retries', async t => {
  const dir = await mkdtemp(join(tmpdir(), 'hr-relay-nobus-'))
  t.teardown(async () => { await rm(dir, { recursive: true, force: true }) })
  const socket = join(dir, 'missing.sock')
  process.env.DBUS_SYSTEM_BUS_ADDRESS = `unix:path=${socket}`
  const { logger, lines, waitForLines } = captureLogger('debug')
  const sink = new RecordingSink()
  const source = new BleSource({ ...FAST, logger })
  t.teardown(() => source.stop())
  await source.start(new AbortController().signal, sink)
  const expected = { state: 'unavailable', detail: `no BlueZ on the system bus (connect ENOENT ${socket})`, connected: 0 }
  t.same(source.status(), expected)
  await waitForLines('four quiet retries', l => l.filter(x => x.msg === 'BlueZ still unreachable').length >= 4)
  const loud = lines.filter(l => typeof l.level === 'number' && l.level >= 30)
  t.equal(loud.length, 1, 'one line at info or above')
  t.match(loud[0], { level: 50, component: 'ble', msg: 'BLE unavailable; retrying quietly with backoff', detail: expected.detail })
  t.same(sink.statuses, [{ state: 'starting', connected: 0 }, expected], 'status reported on change only')
  await source.stop()
  t.same(source.status(), { state: 'stopped', connected: 0 })
})

t.test('a bus without BlueZ is unavailable; BlueZ appearing later is picked up', async t => {
  const bus = await startPrivateBus()
  t.teardown(() => bus.stop())
  process.env.DBUS_SYSTEM_BUS_ADDRESS = bus.address
  const { logger, lines } = captureLogger('info')
  const sink = new RecordingSink()
  const source = new BleSource({ ...FAST, logger })
  // eslint-disable-next-line prefer-const -- the teardown registered below reads it
  let emulator: BluezEmulator | undefined
  t.teardown(async () => { await source.stop(); await emulator?.stop() })
  await source.start(new AbortController().signal, sink)
  t.match(source.status(), { state: 'unavailable', detail: /^no BlueZ on the system bus \(org\.freedesktop\.DBus\.Error\.ServiceUnknown/ })
  emulator = await BluezEmulator.start({ busAddress: bus.address })
  const strap = emulator.addStrap({ address: 'AA:BB:CC:00:00:09' })
  await sink.waitFor('connected after BlueZ appeared', () => source.status().connected === 1)
  t.equal(strap.connected, true)
  t.same(lines.map(l => l.msg).filter(m => m === 'BLE unavailable; retrying quietly with backoff' || m === 'BlueZ reachable again'),
    ['BLE unavailable; retrying quietly with backoff', 'BlueZ reachable again'])
})

t.test('an adapter name BlueZ does not have is degraded, not unavailable', async t => {
  await startBleWorld(t)
  const sink = new RecordingSink()
  const source = new BleSource({ ...FAST, adapter: 'hci7' })
  t.teardown(() => source.stop())
  await source.start(new AbortController().signal, sink)
  t.same(source.status(), { state: 'degraded', detail: 'the Bluetooth adapter is not there (hci7; BlueZ lists hci0)', connected: 0 })
})

t.test('stop() disconnects, stops discovery and is idempotent; aborting the start signal stops too', async t => {
  const world = await startBleWorld(t)
  const a = world.emulator.addStrap({ address: 'AA:BB:CC:00:00:01' })
  const sink = new RecordingSink()
  const source = new BleSource(FAST)
  world.onTeardown(() => source.stop())
  const controller = new AbortController()
  await source.start(controller.signal, sink)
  await sink.waitFor('connected', () => source.status().connected === 1)
  controller.abort()
  await sink.waitFor('stopped', () => sink.lastStatus?.state === 'stopped')
  t.same(source.status(), { state: 'stopped', connected: 0 })
  t.equal(a.connected, false, 'strap disconnected')
  t.equal(a.notifying, false, 'notifications stopped')
  t.equal(world.emulator.discovering, false, 'discovery stopped')
  t.equal(source.diagnostics().signalListeners, 0)
  await source.stop()
  t.equal(sink.statuses.filter(s => s.state === 'stopped').length, 1, 'second stop() reports nothing new')
})

t.test('after stop() the process exits on its own (no timers or sockets left)', async t => {
  const fixture = fileURLToPath(new URL('./fixtures/ble-stop-exits.ts', import.meta.url))
  const child = spawn(process.execPath, ['--import', fileURLToPath(new URL('../../../scripts/ts-loader.mjs', import.meta.url)), fixture], { stdio: ['ignore', 'pipe', 'pipe'] })
  let out = ''
  let err = ''
  child.stdout.on('data', (c: Buffer) => { out += c.toString() })
  child.stderr.on('data', (c: Buffer) => { err += c.toString() })
  const timer = setTimeout(() => { child.kill('SIGKILL') }, 60_000)
  t.teardown(() => { clearTimeout(timer); child.kill('SIGKILL') })
  const code = await new Promise<number | null>(resolve => child.once('exit', resolve))
  clearTimeout(timer)
  t.equal(code, 0, `child exited by itself (stderr: ${err.trim()})`)
  t.same(JSON.parse(out.trim()), {
    status: { state: 'stopped', connected: 0 },
    connected: [false, false],
    notifying: [false, false],
    discovering: false,
    signalListeners: 0,
    timers: 0
  })
})
