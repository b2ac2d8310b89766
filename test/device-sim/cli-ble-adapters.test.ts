// `hr-relay sim ble --adapters N --max-connections N --silent-above N`: the
// emulated adapters, seen from a plain dbus-next client on the printed bus.
import t from 'tap'
import { PassThrough } from 'node:stream'
import * as dbus from 'dbus-next'
import { decodeHeartRateMeasurement } from '../../firmware-protocol/ble.ts'
import { runSim } from '../../device-sim/cli.ts'
import { strapAddress } from '../../device-sim/transports/ble.ts'

function capture (): { stream: PassThrough, text: () => string, waitFor: (re: RegExp) => Promise<RegExpMatchArray> } {
  const stream = new PassThrough()
  let text = ''
  stream.on('data', c => { text += c.toString() })
  const waitFor = async (re: RegExp): Promise<RegExpMatchArray> => await new Promise((resolve, reject) => {
    const check = (): void => {
      const m = re.exec(text)
      if (m !== null) { stream.off('data', check); stream.off('end', ended); resolve(m) }
    }
    const ended = (): void => { reject(new Error(`output ended without ${String(re)}: ${text}`)) }
    stream.on('data', check)
    stream.once('end', ended)
    check()
  })
  return { stream, text: () => text, waitFor }
}

async function call (bus: dbus.MessageBus, path: string, iface: string, member: string): Promise<void> {
  await bus.call(new dbus.Message({ destination: 'org.bluez', path, interface: iface, member }))
}

async function errorOf (p: Promise<unknown>): Promise<string> {
  try { await p; return 'ok' } catch (err) { return `${(err as dbus.DBusError).type}: ${(err as dbus.DBusError).text}` }
}

const dev = (adapter: string, i: number): string => `/org/bluez/${adapter}/dev_${strapAddress(7, i).replace(/:/g, '_')}`

t.test('sim ble --adapters 2 --max-connections 2 --silent-above 1', async t => {
  const out = capture(); const err = capture()
  const stop = new AbortController()
  const run = runSim(['ble', '--count', '3', '--seed', '7', '--rate', '20', '--adapters', '2', '--max-connections', '2', '--silent-above', '1'], { out: out.stream, err: err.stream, signal: stop.signal })
  t.teardown(async () => { stop.abort(); await run })
  const address = (await out.waitFor(/DBUS_SYSTEM_BUS_ADDRESS=(unix:path=\S+)/))[1] as string
  t.match(out.text(), 'adapters hci0, hci1: at most 2 connections each, silent above 1')

  const client = dbus.sessionBus({ busAddress: address })
  t.teardown(() => { client.disconnect() })
  for (const adapter of ['hci0', 'hci1']) await call(client, `/org/bluez/${adapter}`, 'org.bluez.Adapter1', 'StartDiscovery')
  const manager = (await client.getProxyObject('org.bluez', '/')).getInterface('org.freedesktop.DBus.ObjectManager')
  const managed = manager.GetManagedObjects as () => Promise<Record<string, Record<string, unknown>>>
  const objects = await managed()
  t.same(Object.keys(objects).filter(p => 'org.bluez.Device1' in (objects[p] ?? {})).sort(), [0, 1, 2].flatMap(i => [dev('hci0', i), dev('hci1', i)]).sort(),
    'every strap under both adapters')

  // Two links through hci0; the third is refused as a full controller refuses.
  await call(client, dev('hci0', 0), 'org.bluez.Device1', 'Connect')
  await call(client, dev('hci0', 1), 'org.bluez.Device1', 'Connect')
  t.equal(await errorOf(call(client, dev('hci0', 2), 'org.bluez.Device1', 'Connect')), 'org.bluez.Error.Failed: le-connection-abort-by-local')
  await call(client, dev('hci1', 2), 'org.bluez.Device1', 'Connect')

  // The first link on hci0 delivers; the second (above 1) subscribes but never receives anything.
  const counts = [0, 0]
  const got = new PassThrough({ objectMode: true })
  for (const i of [0, 1]) {
    const char = `${dev('hci0', i)}/service000c/char000d`
    while (!('org.bluez.GattCharacteristic1' in ((await managed())[char] ?? {}))) await new Promise(resolve => setImmediate(resolve))
    const props = (await client.getProxyObject('org.bluez', char)).getInterface('org.freedesktop.DBus.Properties')
    props.on('PropertiesChanged', (_i: string, changed: Record<string, dbus.Variant>) => {
      if (changed.Value === undefined) return
      counts[i] = (counts[i] ?? 0) + 1
      got.write(decodeHeartRateMeasurement(changed.Value.value as Buffer).heart_rate)
    })
    await call(client, char, 'org.bluez.GattCharacteristic1', 'StartNotify')
  }
  for (let n = 0; n < 3; n++) await new Promise(resolve => got.once('data', resolve))
  t.ok(counts[0] !== undefined && counts[0] >= 3, `the first link delivered (${counts[0]})`)
  t.equal(counts[1], 0, 'the link above --silent-above delivered nothing')

  stop.abort()
  t.equal(await run, 0, err.text())
})

t.test('sim ble refuses bad adapter options with exit code 2', async t => {
  for (const argv of [['ble', '--adapters', '0'], ['ble', '--adapters', 'two'], ['ble', '--max-connections=-1'], ['ble', '--silent-above', '1.5']]) {
    const out = capture(); const err = capture()
    t.equal(await runSim(argv, { out: out.stream, err: err.stream }), 2, argv.join(' '))
    t.equal(err.text(), `hr-relay sim: an option is missing or out of range: ${argv.slice(1).join(' ').replace('=', ' ')}\n`)
  }
})
