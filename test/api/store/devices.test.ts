// The device registry over a real LevelDB store: pairing, hashed credentials,
// in-memory owner lookup across reopen, and the bounded list of sightings.
import t from 'tap'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Store } from '../../../api/store/db.ts'
import { DeviceExistsError, Devices, InvalidAntDeviceIdError, InvalidDeviceIdError, MAX_SIGHTINGS } from '../../../api/store/devices.ts'

async function open (t: { teardown (fn: () => unknown): void }, dir?: string): Promise<{ store: Store, devices: Devices, dir: string }> {
  const d = dir ?? await mkdtemp(join(tmpdir(), 'hr-relay-devices-'))
  const store = await Store.open(d)
  const devices = new Devices(store)
  await devices.load()
  t.teardown(async () => { await store.close() })
  if (dir === undefined) t.teardown(async () => { await rm(d, { recursive: true, force: true }) })
  return { store, devices, dir: d }
}

t.test('add issues MQTT credentials once, stores only a SHA-256 digest, and verifyMqtt checks them', async t => {
  const { store, devices } = await open(t)
  const { device, mqtt_password: password } = await devices.add({ device_id: 'esp32-01', profile_id: 'p1', name: 'Bike 3' }, 1000)
  t.match(password, /^[A-Za-z0-9_-]{32}$/)
  t.same({ ...device, mqtt_password_hash: undefined }, { device_id: 'esp32-01', profile_id: 'p1', kind: 'any', name: 'Bike 3', mqtt_username: 'esp32-01', mqtt_password_hash: undefined, created_at: 1000 })
  const raw = await store.sub<Record<string, unknown>>('devices').get('esp32-01')
  t.match(raw?.mqtt_password_hash, /^sha256\$[0-9a-f]{64}$/)
  t.notOk(JSON.stringify(raw).includes(password ?? '-'), 'the password is not stored')
  t.equal((await devices.verifyMqtt('esp32-01', password ?? ''))?.device_id, 'esp32-01')
  t.equal(await devices.verifyMqtt('esp32-01', 'wrong'), undefined)
  t.equal(await devices.verifyMqtt('nobody', password ?? ''), undefined)
})

t.test('ownerOf: from memory, after reopen, BLE addresses case-insensitive, kind restricts the source', async t => {
  const first = await open(t)
  await first.devices.add({ device_id: 'c8:2f:9a:11:22:33', profile_id: 'p1', kind: 'ble' })
  await first.devices.add({ device_id: 'serial-7', profile_id: 'p2', kind: 'serial' })
  await first.store.close()
  const { devices } = await open(t, first.dir)
  t.equal(devices.ownerOf('C8:2F:9A:11:22:33'), 'p1')
  t.equal(devices.ownerOf('c8:2f:9a:11:22:33', 'ble'), 'p1')
  t.equal(devices.ownerOf('C8:2F:9A:11:22:33', 'mqtt'), undefined, 'a BLE pairing does not own MQTT readings')
  t.equal(devices.ownerOf('serial-7', 'serial'), 'p2')
  t.equal(devices.ownerOf('SERIAL-7'), undefined, 'other ids are case-sensitive')
  t.same(devices.list().map(d => [d.device_id, d.kind, d.mqtt_username ?? null]), [['C8:2F:9A:11:22:33', 'ble', null], ['serial-7', 'serial', null]])
})

t.test('an ANT+ strap is paired as ant:<device number 1..1048575>, with no MQTT credentials; other ant: ids are refused', async t => {
  const { store, devices } = await open(t)
  const added = await devices.add({ device_id: 'ant:143417', profile_id: 'p1', kind: 'ant' }, 5)
  t.same(added, { device: { device_id: 'ant:143417', profile_id: 'p1', kind: 'ant', created_at: 5 }, mqtt_password: null })
  t.equal(devices.ownerOf('ant:143417'), 'p1')
  t.equal(devices.ownerOf('ant:143417', 'ant'), 'p1')
  t.equal(devices.ownerOf('ant:143417', 'ble'), undefined, 'an ANT pairing does not own BLE readings')
  for (const [id, kind] of [['ant:0', 'ant'], ['ant:1048576', 'ant'], ['ant:0143417', 'ant'], ['esp32-01', 'ant'], ['ant:x1', 'any'], ['ant:0', 'mqtt']] as const) {
    await t.rejects(devices.add({ device_id: id, profile_id: 'p2', kind }), new InvalidAntDeviceIdError(id), `${id} (${kind})`)
  }
  t.same(devices.list().map(d => d.device_id), ['ant:143417'], 'nothing else stored')
  t.same([...(await store.sub('devices').keys().all())], ['ant:143417'])
})

t.test('duplicates and bad ids are refused; remove unpairs and tells listeners', async t => {
  const { devices } = await open(t)
  await devices.add({ device_id: 'hr-01', profile_id: 'p1' })
  await t.rejects(devices.add({ device_id: 'hr-01', profile_id: 'p2' }), DeviceExistsError)
  await t.rejects(devices.add({ device_id: 'a/b', profile_id: 'p2' }), InvalidDeviceIdError)
  await t.rejects(devices.add({ device_id: '', profile_id: 'p2' }), InvalidDeviceIdError)
  const removed: string[] = []
  const off = devices.onRemoved(d => { removed.push(d.device_id) })
  t.equal((await devices.remove('hr-01'))?.device_id, 'hr-01')
  t.equal(await devices.remove('hr-01'), undefined)
  off()
  t.same(removed, ['hr-01'])
  t.equal(devices.ownerOf('hr-01'), undefined)
  t.equal(await devices.verifyMqtt('hr-01', 'x'), undefined)
})

t.test('sightings: merged per device, unpaired ones listed newest first, bounded', async t => {
  const { devices } = await open(t)
  await devices.add({ device_id: 'AA:AA:AA:AA:AA:01', profile_id: 'p1', kind: 'ble' })
  devices.sighting({ device_id: 'aa:aa:aa:aa:aa:01', source: 'ble', connected: true, seen_at: 10 })
  devices.sighting({ device_id: 'AA:AA:AA:AA:AA:02', source: 'ble', name: 'Polar H9', rssi: -70, connected: false, seen_at: 20 })
  devices.sighting({ device_id: 'AA:AA:AA:AA:AA:02', source: 'ble', battery_percent: 80, connected: false, seen_at: 30 })
  devices.readingSeen('mqtt-x', 'mqtt', { heart_rate: 90, measured_at: 25, battery_percent: 50 }, 25)
  t.same(devices.unpaired(), [
    { device_id: 'AA:AA:AA:AA:AA:02', source: 'ble', name: 'Polar H9', rssi: -70, battery_percent: 80, connected: false, seen_at: 30 },
    { device_id: 'mqtt-x', source: 'mqtt', connected: true, seen_at: 25, battery_percent: 50, last_reading: { heart_rate: 90, measured_at: 25 } }
  ])
  t.equal(devices.stateOf('AA:AA:AA:AA:AA:01')?.connected, true)
  for (let i = 0; i < MAX_SIGHTINGS + 10; i++) devices.sighting({ device_id: `dev-${i}`, source: 'sim', connected: false, seen_at: 100 + i })
  const list = devices.unpaired()
  t.equal(list.length, MAX_SIGHTINGS)
  t.equal(list[0]?.device_id, `dev-${MAX_SIGHTINGS + 9}`)
  t.equal(devices.stateOf('dev-0'), undefined, 'the oldest were forgotten')
})

t.test('paired devices keep their live state however many there are; a device paired or unpaired keeps what was seen of it', async t => {
  const { devices } = await open(t)
  devices.sighting({ device_id: 'strap-0', source: 'ble', name: 'Polar H10', connected: false, seen_at: 5 })
  const paired = MAX_SIGHTINGS + 100
  for (let i = 0; i < paired; i++) await devices.add({ device_id: `strap-${i}`, profile_id: 'p1', kind: 'mqtt' })
  for (let i = 0; i < paired; i++) devices.readingSeen(`strap-${i}`, 'mqtt', { heart_rate: 60 + (i % 100), measured_at: 1000 + i }, 2000 + i)
  for (let i = 0; i < MAX_SIGHTINGS + 10; i++) devices.sighting({ device_id: `stranger-${i}`, source: 'sim', connected: false, seen_at: 100 + i })
  t.same(devices.stateOf('strap-0'), { device_id: 'strap-0', source: 'mqtt', name: 'Polar H10', connected: false, seen_at: 2000, last_reading: { heart_rate: 60, measured_at: 1000 } })
  t.equal(devices.stateOf(`strap-${paired - 1}`)?.last_reading?.measured_at, 1000 + paired - 1)
  t.equal(devices.unpaired().length, MAX_SIGHTINGS, 'only unpaired sightings are bounded')
  t.equal(devices.unpaired().some(s => s.device_id.startsWith('strap-')), false)
  devices.readingSeen('strap-1', 'mqtt', { heart_rate: 99, measured_at: 5000 }, 6000)
  t.same(devices.stateOf('strap-1')?.last_reading, { heart_rate: 99, measured_at: 5000 })
  await devices.remove('strap-1')
  t.equal(devices.unpaired()[0]?.device_id, 'strap-1', 'an unpaired device is listed with what was seen of it')
  t.equal(devices.unpaired().length, MAX_SIGHTINGS)
})

t.test('a verified password is remembered (digest in memory) until the pairing is removed', async t => {
  const { devices } = await open(t)
  const { mqtt_password: password } = await devices.add({ device_id: 'hr-09', profile_id: 'p1' })
  t.equal((await devices.verifyMqtt('hr-09', password ?? ''))?.device_id, 'hr-09')
  t.equal((await devices.verifyMqtt('hr-09', password ?? ''))?.device_id, 'hr-09', 'second time from the cache')
  t.equal(await devices.verifyMqtt('hr-09', (password ?? '') + 'x'), undefined, 'a wrong password still fails')
  await devices.remove('hr-09')
  t.equal(await devices.verifyMqtt('hr-09', password ?? ''), undefined)
  const again = await devices.add({ device_id: 'hr-09', profile_id: 'p2' })
  t.equal(await devices.verifyMqtt('hr-09', password ?? ''), undefined, 'the old password does not open the new pairing')
  t.equal((await devices.verifyMqtt('hr-09', again.mqtt_password ?? ''))?.profile_id, 'p2')
})
