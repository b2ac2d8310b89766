// prepareDemo: the demo's BLE straps run on a private dbus-daemon only where
// that cannot take real straps away from the relay, its serial sensors on
// real socat ptys; every part that cannot start is skipped with one info line.
import t from 'tap'
import { existsSync } from 'node:fs'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import * as dbus from 'dbus-next'
import pino from 'pino'
import { validateConfig, type Config } from '../../relay/config.ts'
import { BluezEmulator } from '../../device-sim/ble/bluez-emulator.ts'
import { startPrivateBus } from '../../device-sim/ble/private-bus.ts'
import { DEMO_ANT_NETWORK_KEY, DEMO_BLE_STRAPS, demoAntId, demoSerialId, demoStrapAddress, prepareDemo } from '../../device-sim/demo-hardware.ts'

interface Line { level: number, msg: string, component?: string }

function capture (): { log: pino.Logger, lines: Line[] } {
  const lines: Line[] = []
  const log = pino({ level: 'info' }, { write (s: string) { lines.push(JSON.parse(s) as Line) } })
  return { log, lines }
}

function baseConfig (): Config {
  return validateConfig({ data_dir: '/nonexistent', log_level: 'silent' })
}

// prepareDemo reads and sets DBUS_SYSTEM_BUS_ADDRESS in this process: start every test without it.
const saved = process.env.DBUS_SYSTEM_BUS_ADDRESS
t.beforeEach(() => { delete process.env.DBUS_SYSTEM_BUS_ADDRESS })
t.teardown(() => { if (saved === undefined) delete process.env.DBUS_SYSTEM_BUS_ADDRESS; else process.env.DBUS_SYSTEM_BUS_ADDRESS = saved })

async function ownsBluez (address: string): Promise<boolean> {
  const bus = dbus.sessionBus({ busAddress: address })
  try {
    const reply = await bus.call(new dbus.Message({ destination: 'org.freedesktop.DBus', path: '/org/freedesktop/DBus', interface: 'org.freedesktop.DBus', member: 'NameHasOwner', signature: 's', body: ['org.bluez'] }))
    return reply?.body[0] === true
  } finally { bus.disconnect() }
}

t.test('no system bus: BLE straps on a private bus, two serial ptys, all stopped again', async t => {
  const { log, lines } = capture()
  const input = baseConfig()
  const hw = await prepareDemo(input, log, { systemBusSocket: '/nonexistent/system_bus_socket' })
  t.teardown(() => hw.stop())
  t.not(hw.ble, null, 'the BLE part started')
  const address = hw.ble!.busAddress
  t.equal(process.env.DBUS_SYSTEM_BUS_ADDRESS, address, 'node-ble in this process will open the private bus')
  t.match(address, /^unix:path=\/.+\/bus\.sock$/)
  t.equal(await ownsBluez(address), true, 'the emulator owns org.bluez on it')
  t.same(hw.ble!.straps, [0, 1, 2, 3].map(member => ({ member, address: demoStrapAddress(member) })))
  t.equal(DEMO_BLE_STRAPS, 4)
  t.equal(demoStrapAddress(0), 'C7:E8:5E:ED:00:00', 'derived from the demo seed, the same on every start')
  t.equal(hw.config.ble.enabled, true)
  t.equal(hw.config.ble.rescan_interval_ms, 1000)
  t.same(hw.config.ble.allow, [])

  t.equal(hw.serial.length, 2)
  t.same(hw.serial.map(p => [p.member, p.format, p.device_id]), [[4, 'framed', demoSerialId(4)], [5, 'text', demoSerialId(5)]])
  t.equal(demoSerialId(4), 'demo-2024-serial-5')
  t.same(hw.config.serial, [
    { path: hw.serial[0]!.pair.relayPath, baud_rate: 115200, format: 'framed', poll_interval_ms: 1000 },
    { path: hw.serial[1]!.pair.relayPath, baud_rate: 115200, format: 'text', poll_interval_ms: 1000, device_id: 'demo-2024-serial-6' }
  ], 'the framed sensor says its id ($ID); the text sensor has it configured')
  for (const p of hw.serial) t.ok(existsSync(p.pair.relayPath), `${p.pair.relayPath} exists`)
  t.same(input.serial, [], 'the input configuration is not changed')
  t.equal(input.ble.rescan_interval_ms, 5000)

  t.same(hw.ant?.straps, [8, 9, 10].map(member => ({ member, device_id: demoAntId(member) })))
  t.same([8, 9, 10].map(demoAntId), ['ant:978945', 'ant:978946', 'ant:978947'], 'extended 20-bit device numbers from the demo seed')
  t.same(hw.config.ant, [{ path: hw.ant!.pair.relayPath, baud_rate: 115200, network_key: DEMO_ANT_NETWORK_KEY }], 'one stick, with a placeholder network key')
  t.ok(existsSync(hw.ant!.pair.relayPath))
  t.same(input.ant, [])
  t.same(lines.filter(l => l.level === 30).map(l => l.msg), [
    'demo: BLE straps on the BlueZ emulator (private D-Bus)',
    'demo: serial sensors on pty pairs',
    'demo: ANT+ straps on a simulated ANT stick (pty pair)'
  ])

  await hw.stop()
  t.equal(process.env.DBUS_SYSTEM_BUS_ADDRESS, undefined, 'the variable is removed again')
  t.equal(existsSync(address.slice('unix:path='.length)), false, 'the bus socket is gone')
  for (const p of hw.serial) t.equal(existsSync(p.pair.relayPath), false, `${p.pair.relayPath} is gone`)
  t.equal(existsSync(hw.ant!.pair.relayPath), false, 'the stick\'s pty is gone')
  await hw.stop() // idempotent
})

t.test('BlueZ on the system bus: the demo leaves BLE to the real straps', async t => {
  // A stand-in for a Pi's system bus: a bus where org.bluez is owned.
  const system = await startPrivateBus()
  t.teardown(() => system.stop())
  const bluez = await BluezEmulator.start({ busAddress: system.address })
  t.teardown(() => bluez.stop())
  const { log, lines } = capture()
  const input = baseConfig()
  const hw = await prepareDemo(input, log, { systemBusSocket: system.address.slice('unix:path='.length) })
  t.teardown(() => hw.stop())
  t.equal(hw.ble, null)
  t.equal(process.env.DBUS_SYSTEM_BUS_ADDRESS, undefined, 'the relay keeps reading the system bus')
  t.same(hw.config.ble, input.ble, 'BLE configuration untouched')
  t.equal(hw.serial.length, 2, 'serial sensors still run')
  t.match(lines.find(l => l.msg.startsWith('demo: no BLE straps'))?.msg, /their members use MQTT: BlueZ runs on this machine's system bus/)
})

t.test('a system bus without BlueZ: the private bus is used', async t => {
  const system = await startPrivateBus()
  t.teardown(() => system.stop())
  const { log } = capture()
  const hw = await prepareDemo(baseConfig(), log, { systemBusSocket: system.address.slice('unix:path='.length) })
  t.teardown(() => hw.stop())
  t.not(hw.ble, null)
  t.not(hw.ble!.busAddress, system.address, 'its own bus, not the system one')
  t.equal(await ownsBluez(system.address), false, 'nothing was registered on the system bus')
})

t.test('a user-set DBUS_SYSTEM_BUS_ADDRESS, or a system bus that cannot be asked, turns the BLE part off', async t => {
  const dir = await mkdtemp(join(tmpdir(), 'hr-relay-demohw-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  process.env.DBUS_SYSTEM_BUS_ADDRESS = 'unix:path=/run/user-chosen.sock'
  const a = capture()
  const hw1 = await prepareDemo(baseConfig(), a.log, { systemBusSocket: '/nonexistent/system_bus_socket' })
  t.teardown(() => hw1.stop())
  t.equal(hw1.ble, null)
  await hw1.stop()
  t.equal(process.env.DBUS_SYSTEM_BUS_ADDRESS, 'unix:path=/run/user-chosen.sock', 'left as the user set it')
  t.match(a.lines.find(l => l.msg.startsWith('demo: no BLE straps'))?.msg, /DBUS_SYSTEM_BUS_ADDRESS is set \(unix:path=\/run\/user-chosen\.sock\)/)

  delete process.env.DBUS_SYSTEM_BUS_ADDRESS
  const notABus = join(dir, 'system_bus_socket')
  await writeFile(notABus, 'not a socket')
  const b = capture()
  const hw2 = await prepareDemo(baseConfig(), b.log, { systemBusSocket: notABus })
  t.teardown(() => hw2.stop())
  t.equal(hw2.ble, null)
  t.equal(process.env.DBUS_SYSTEM_BUS_ADDRESS, undefined)
  t.match(b.lines.find(l => l.msg.startsWith('demo: no BLE straps'))?.msg, /cannot ask the system bus/)
})

t.test('without dbus-daemon and socat: every part skipped with one info line each, configuration unchanged', async t => {
  const empty = await mkdtemp(join(tmpdir(), 'hr-relay-emptypath-'))
  t.teardown(() => rm(empty, { recursive: true, force: true }))
  const path = process.env.PATH
  process.env.PATH = empty
  t.teardown(() => { process.env.PATH = path })
  const { log, lines } = capture()
  const input = baseConfig()
  const hw = await prepareDemo(input, log, { systemBusSocket: '/nonexistent/system_bus_socket' })
  process.env.PATH = path
  t.equal(hw.ble, null)
  t.same(hw.serial, [])
  t.equal(hw.ant, null)
  t.same(hw.config, input)
  t.equal(process.env.DBUS_SYSTEM_BUS_ADDRESS, undefined)
  t.same(lines.map(l => [l.level, l.msg]), [
    [30, 'demo: no BLE straps, their members use MQTT: dbus-daemon is not installed'],
    [30, 'demo: no serial sensors, their members use MQTT: socat is not installed'],
    [30, 'demo: no ANT+ straps, their members use MQTT: socat is not installed']
  ])
  await hw.stop()
})
