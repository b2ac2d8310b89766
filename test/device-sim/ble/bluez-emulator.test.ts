// The BlueZ emulator alone, seen from a plain dbus-next client over a real
// private dbus-daemon: object tree, properties, signals and BlueZ's errors.
import t from 'tap'
import * as dbus from 'dbus-next'
import { startPrivateBus } from '../../../device-sim/ble/private-bus.ts'
import { BluezEmulator } from '../../../device-sim/ble/bluez-emulator.ts'
import {
  BODY_SENSOR_LOCATION_UUID,
  HEART_RATE_MEASUREMENT_UUID,
  HEART_RATE_SERVICE_UUID
} from '../../../firmware-protocol/ble.ts'

const ADDR = 'C0:FF:EE:00:00:01'
const DEV = '/org/bluez/hci0/dev_C0_FF_EE_00_00_01'
const SVC = `${DEV}/service000c`

interface World { client: dbus.MessageBus, emulator: BluezEmulator }

async function world (t: { teardown: (fn: () => Promise<void> | void) => void }): Promise<World> {
  const bus = await startPrivateBus()
  const emulator = await BluezEmulator.start({ busAddress: bus.address })
  const client = dbus.sessionBus({ busAddress: bus.address })
  client.on('error', () => {})
  t.teardown(async () => { client.disconnect(); await emulator.stop(); await bus.stop() })
  return { client, emulator }
}

async function call (client: dbus.MessageBus, path: string, iface: string, member: string, signature = '', body: unknown[] = []): Promise<unknown[]> {
  const reply = await client.call(new dbus.Message({ destination: 'org.bluez', path, interface: iface, member, signature, body }))
  return reply?.body ?? []
}

async function prop (client: dbus.MessageBus, path: string, iface: string, name: string): Promise<unknown> {
  const [v] = await call(client, path, 'org.freedesktop.DBus.Properties', 'Get', 'ss', [iface, name])
  return (v as dbus.Variant).value
}

async function errorOf (p: Promise<unknown>): Promise<string> {
  try { await p } catch (err) { return (err as dbus.DBusError).type }
  return 'no error'
}

t.test('tree by introspection: devices appear once discovery starts', async t => {
  const { client, emulator } = await world(t)
  emulator.addStrap({ address: ADDR.toLowerCase(), name: 'Polar H10', rssi: -48, battery: 90 })
  const root = await client.getProxyObject('org.bluez', '/org/bluez')
  t.same(root.nodes, ['/org/bluez/hci0'])
  t.ok('org.bluez.AgentManager1' in root.interfaces)
  const before = await client.getProxyObject('org.bluez', '/org/bluez/hci0')
  t.same(before.nodes, [], 'nothing before discovery')

  const om = (await client.getProxyObject('org.bluez', '/')).getInterface('org.freedesktop.DBus.ObjectManager')
  const added: Array<[string, Record<string, Record<string, dbus.Variant>>]> = []
  om.on('InterfacesAdded', (path: string, ifaces: Record<string, Record<string, dbus.Variant>>) => { added.push([path, ifaces]) })
  await call(client, '/org/bluez/hci0', 'org.bluez.Adapter1', 'SetDiscoveryFilter', 'a{sv}', [{ Transport: new dbus.Variant('s', 'le') }])
  await call(client, '/org/bluez/hci0', 'org.bluez.Adapter1', 'StartDiscovery')
  t.equal(await prop(client, '/org/bluez/hci0', 'org.bluez.Adapter1', 'Discovering'), true)
  t.equal(await errorOf(call(client, '/org/bluez/hci0', 'org.bluez.Adapter1', 'StartDiscovery')), 'org.bluez.Error.InProgress')
  const after = await client.getProxyObject('org.bluez', '/org/bluez/hci0')
  t.same(after.nodes, [DEV])
  t.equal(await prop(client, DEV, 'org.bluez.Device1', 'Address'), ADDR)
  t.equal(await prop(client, DEV, 'org.bluez.Device1', 'RSSI'), -48)
  t.ok((await prop(client, DEV, 'org.bluez.Device1', 'UUIDs') as string[]).includes(HEART_RATE_SERVICE_UUID))
  while (added.length === 0) await new Promise(resolve => setImmediate(resolve))
  t.equal(added[0]?.[0], DEV)
  t.equal(added[0]?.[1]['org.bluez.Device1']?.Name?.value, 'Polar H10')
  t.equal(await errorOf(prop(client, DEV, 'org.bluez.Battery1', 'Percentage')), 'org.freedesktop.DBus.Error.InvalidArgs', 'no battery before connecting')
  t.equal(await errorOf(prop(client, '/org/bluez/hci0/dev_00_00_00_00_00_00', 'org.bluez.Device1', 'Address')), 'org.freedesktop.DBus.Error.UnknownObject')
  om.removeAllListeners('InterfacesAdded')
})

t.test('connect, GATT, notifications, reads, writes and faults', async t => {
  const { client, emulator } = await world(t)
  const strap = emulator.addStrap({ address: ADDR, battery: 55, location: 1 })
  await call(client, '/org/bluez/hci0', 'org.bluez.Adapter1', 'StartDiscovery')

  strap.faults = { refuseConnect: 'Failed', refuseCount: 1 }
  t.equal(await errorOf(call(client, DEV, 'org.bluez.Device1', 'Connect')), 'org.bluez.Error.Failed')
  const events: string[] = []
  strap.on('connected', () => { events.push('connected') })
  strap.on('subscribed', () => { events.push('subscribed') })
  strap.on('disconnected', () => { events.push('disconnected') })
  await call(client, DEV, 'org.bluez.Device1', 'Connect')
  t.equal(await errorOf(call(client, DEV, 'org.bluez.Device1', 'Connect')), 'org.bluez.Error.AlreadyConnected')
  t.equal(strap.connectCalls, 3)
  while (!strap.servicesResolved) await new Promise(resolve => setImmediate(resolve))
  t.equal(await prop(client, DEV, 'org.bluez.Device1', 'ServicesResolved'), true)
  t.equal(await prop(client, DEV, 'org.bluez.Battery1', 'Percentage'), 55)
  t.same((await client.getProxyObject('org.bluez', DEV)).nodes, [SVC])
  t.same((await client.getProxyObject('org.bluez', SVC)).nodes.sort(), [`${SVC}/char000d`, `${SVC}/char0010`, `${SVC}/char0012`])
  t.equal(await prop(client, SVC, 'org.bluez.GattService1', 'UUID'), HEART_RATE_SERVICE_UUID)
  t.equal(await prop(client, `${SVC}/char000d`, 'org.bluez.GattCharacteristic1', 'UUID'), HEART_RATE_MEASUREMENT_UUID)
  t.same(await prop(client, `${SVC}/char000d`, 'org.bluez.GattCharacteristic1', 'Flags'), ['notify'])
  t.equal(await prop(client, `${SVC}/char0010`, 'org.bluez.GattCharacteristic1', 'UUID'), BODY_SENSOR_LOCATION_UUID)

  t.equal(strap.notify(Uint8Array.of(0x00, 60)), false, 'nobody subscribed yet')
  const charProps = (await client.getProxyObject('org.bluez', `${SVC}/char000d`)).getInterface('org.freedesktop.DBus.Properties')
  const values: number[][] = []
  charProps.on('PropertiesChanged', (_iface: string, changed: Record<string, dbus.Variant>) => {
    if (changed.Value !== undefined) values.push([...(changed.Value.value as Buffer)])
  })
  await call(client, `${SVC}/char000d`, 'org.bluez.GattCharacteristic1', 'StartNotify')
  t.equal(strap.notifying, true)
  t.equal(strap.sendHeartRate({ heart_rate: 72, sensor_contact: 'detected', rr_intervals: [1024] }), true)
  while (values.length === 0) await new Promise(resolve => setImmediate(resolve))
  t.same(values, [[0x16, 72, 0x00, 0x04]])
  charProps.removeAllListeners('PropertiesChanged')

  const [location] = await call(client, `${SVC}/char0010`, 'org.bluez.GattCharacteristic1', 'ReadValue', 'a{sv}', [{}])
  t.same([...(location as Buffer)], [1])
  t.equal(await errorOf(call(client, `${SVC}/char000d`, 'org.bluez.GattCharacteristic1', 'ReadValue', 'a{sv}', [{}])), 'org.bluez.Error.NotPermitted')
  await call(client, `${SVC}/char0012`, 'org.bluez.GattCharacteristic1', 'WriteValue', 'aya{sv}', [Buffer.from([0x01]), { type: new dbus.Variant('s', 'request') }])
  t.equal(await errorOf(call(client, `${SVC}/char0012`, 'org.bluez.GattCharacteristic1', 'WriteValue', 'aya{sv}', [Buffer.from([0x02]), {}])), 'org.bluez.Error.Failed')
  t.same(strap.controlPointWrites.map(w => [...w]), [[0x01], [0x02]])

  strap.dropLink()
  t.equal(strap.connected, false)
  t.equal(strap.notifying, false)
  t.equal(await prop(client, DEV, 'org.bluez.Device1', 'Connected'), false)
  t.equal(await errorOf(prop(client, SVC, 'org.bluez.GattService1', 'UUID')), 'org.freedesktop.DBus.Error.UnknownObject', 'GATT objects gone with the link')
  t.same(events, ['connected', 'subscribed', 'disconnected'])

  strap.faults = { neverResolveServices: true }
  await call(client, DEV, 'org.bluez.Device1', 'Connect')
  // Service resolution is scheduled before the Connect reply leaves the
  // emulator, so by now it has run (and, with the fault, done nothing).
  t.equal(await prop(client, DEV, 'org.bluez.Device1', 'ServicesResolved'), false)
  t.equal(await prop(client, DEV, 'org.bluez.Device1', 'Connected'), true)
  await call(client, DEV, 'org.bluez.Device1', 'Disconnect')
  t.equal(strap.connected, false)
})

t.test('removeStrap: InterfacesRemoved, then UnknownObject; power off: NotReady', async t => {
  const { client, emulator } = await world(t)
  emulator.addStrap({ address: ADDR })
  await call(client, '/org/bluez/hci0', 'org.bluez.Adapter1', 'StartDiscovery')
  await call(client, DEV, 'org.bluez.Device1', 'Connect')
  const om = (await client.getProxyObject('org.bluez', '/')).getInterface('org.freedesktop.DBus.ObjectManager')
  const removed: Array<[string, string[]]> = []
  om.on('InterfacesRemoved', (path: string, names: string[]) => { removed.push([path, names]) })
  const [managed] = await call(client, '/', 'org.freedesktop.DBus.ObjectManager', 'GetManagedObjects')
  t.ok(DEV in (managed as Record<string, unknown>), 'device in GetManagedObjects')

  emulator.removeStrap(ADDR)
  while (!removed.some(([p]) => p === DEV)) await new Promise(resolve => setImmediate(resolve))
  t.same(removed.find(([p]) => p === DEV), [DEV, ['org.bluez.Device1']])
  t.equal(await errorOf(call(client, DEV, 'org.bluez.Device1', 'Connect')), 'org.freedesktop.DBus.Error.UnknownObject')
  om.removeAllListeners('InterfacesRemoved')

  const again = emulator.addStrap({ address: ADDR })
  emulator.powerOff()
  t.equal(await prop(client, '/org/bluez/hci0', 'org.bluez.Adapter1', 'Powered'), false)
  t.equal(await prop(client, '/org/bluez/hci0', 'org.bluez.Adapter1', 'Discovering'), false)
  t.equal(await errorOf(call(client, DEV, 'org.bluez.Device1', 'Connect')), 'org.bluez.Error.NotReady')
  t.equal(await errorOf(call(client, '/org/bluez/hci0', 'org.bluez.Adapter1', 'StartDiscovery')), 'org.bluez.Error.NotReady')
  await call(client, '/org/bluez/hci0', 'org.freedesktop.DBus.Properties', 'Set', 'ssv', ['org.bluez.Adapter1', 'Powered', new dbus.Variant('b', true)])
  t.equal(emulator.powered, true, 'Powered can be set over D-Bus, as bluetoothctl does')
  await call(client, DEV, 'org.bluez.Device1', 'Connect')
  t.equal(again.connected, true)
})

t.test('a second emulator cannot own org.bluez on the same bus', async t => {
  const bus = await startPrivateBus()
  const first = await BluezEmulator.start({ busAddress: bus.address })
  t.teardown(async () => { await first.stop(); await bus.stop() })
  await t.rejects(BluezEmulator.start({ busAddress: bus.address }), /could not own org\.bluez/)
})
