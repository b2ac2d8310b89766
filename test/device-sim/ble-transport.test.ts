// The BLE transport: its own private dbus-daemon and BlueZ emulator, seen
// from a plain dbus-next client acting as the relay's GATT client.
import t from 'tap'
import * as dbus from 'dbus-next'
import { decodeHeartRateMeasurement } from '../../firmware-protocol/ble.ts'
import { BleTransport, strapAddress } from '../../device-sim/transports/ble.ts'

async function call (bus: dbus.MessageBus, path: string, iface: string, member: string): Promise<void> {
  await bus.call(new dbus.Message({ destination: 'org.bluez', path, interface: iface, member }))
}

async function errorOf (p: Promise<unknown>): Promise<string> {
  try { await p; return 'ok' } catch (err) { return (err as dbus.DBusError).type ?? String(err) }
}

t.test('straps on a private bus: notifications, garbage, drop and unplug', async t => {
  const transport = new BleTransport()
  t.teardown(() => transport.close())
  const devices = [0, 1].map(i => ({ index: i, device_id: strapAddress(7, i), label: `P${i}` }))
  t.equal(devices[0]!.device_id, 'C0:07:5E:ED:00:00')
  await transport.open(devices)
  t.match(transport.busAddress, /^unix:path=/)
  t.match(transport.describe()[0], /DBUS_SYSTEM_BUS_ADDRESS=unix:path=/)

  const client = dbus.sessionBus({ busAddress: transport.busAddress })
  t.teardown(() => client.disconnect())
  const DEV = '/org/bluez/hci0/dev_C0_07_5E_ED_00_00'
  const CHAR = `${DEV}/service000c/char000d`
  await call(client, '/org/bluez/hci0', 'org.bluez.Adapter1', 'StartDiscovery')
  await call(client, DEV, 'org.bluez.Device1', 'Connect')
  const strap = transport.strap(0)!
  while (!strap.servicesResolved) await new Promise(resolve => setImmediate(resolve))
  const props = (await client.getProxyObject('org.bluez', CHAR)).getInterface('org.freedesktop.DBus.Properties')
  const values: Buffer[] = []
  props.on('PropertiesChanged', (_i: string, changed: Record<string, dbus.Variant>) => { if (changed.Value !== undefined) values.push(changed.Value.value as Buffer) })
  await call(client, CHAR, 'org.bluez.GattCharacteristic1', 'StartNotify')

  t.equal(await transport.send(0, { measured_at: 1, heart_rate: 152, rr_intervals_ms: [395, 401], energy_expended_kj: 120, battery_percent: 80, sensor_contact: true }), true)
  t.equal(await transport.send(0, { measured_at: 2, heart_rate: 0, rr_intervals_ms: [], sensor_contact: false }), true)
  t.equal(await transport.send(1, { measured_at: 1, heart_rate: 70, rr_intervals_ms: [], sensor_contact: true }), false, 'strap 1 has no subscriber')
  t.equal(await transport.inject(0, 'garbage'), 'injected')
  t.equal(await transport.inject(0, 'oversized'), 'injected')
  t.equal(await transport.inject(0, 'bad_checksum'), 'not_applicable', 'BLE has no checksum to break')
  while (values.length < 4) await new Promise(resolve => setImmediate(resolve))
  const first = decodeHeartRateMeasurement(values[0]!)
  t.equal(first.heart_rate, 152)
  t.equal(first.sensor_contact, 'detected')
  t.equal(first.energy_expended_kj, 120)
  t.same(first.rr_intervals_ms, [395, 401])
  t.equal(strap.battery, 80, 'battery level follows the simulation')
  const second = decodeHeartRateMeasurement(values[1]!)
  t.same([second.heart_rate, second.sensor_contact], [0, 'not_detected'], 'contact lost: 0 bpm')
  t.throws(() => decodeHeartRateMeasurement(values[2]!), { code: 'odd_rr_bytes' }, 'garbage is a malformed measurement')
  t.ok(values[3]!.length > 512, 'oversized: above the ATT maximum')
  t.throws(() => decodeHeartRateMeasurement(values[3]!))

  t.equal(await transport.link(0, false, 'drop'), 'injected')
  t.equal(strap.connected, false, 'the link dropped')
  t.equal(await errorOf(call(client, DEV, 'org.bluez.Device1', 'Connect')), 'org.bluez.Error.Failed', 'out of range: reconnects fail')
  await transport.link(0, true, 'drop')
  await call(client, DEV, 'org.bluez.Device1', 'Connect')
  t.equal(strap.connected, true, 'back in range')

  await transport.link(1, false, 'unplug')
  t.equal(transport.bluez!.strap(devices[1]!.device_id), undefined, 'the strap is gone from BlueZ')
  t.equal(await errorOf(call(client, '/org/bluez/hci0/dev_C0_07_5E_ED_00_01', 'org.bluez.Device1', 'Connect')), 'org.freedesktop.DBus.Error.UnknownObject')
  await transport.link(1, true, 'unplug')
  t.not(transport.bluez!.strap(devices[1]!.device_id), undefined, 'it advertises again')
  props.removeAllListeners('PropertiesChanged')
})
