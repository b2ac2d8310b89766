// The operator pairs an unpaired BLE strap from the device page, in real
// Chromium, and the strap's readings then arrive under that member. The strap
// is the BlueZ emulator on a private dbus-daemon; the relay's BLE source talks
// to it through node-ble (only the radio is fake). The same for an ANT+ strap
// heard by the simulated ANT stick on a pty pair.
import t from 'tap'
import { AntTransport } from '../../../device-sim/transports/ant.ts'
import { startEmulatedBluez } from '../../helpers/bluez.ts'
import { startTestService } from '../../helpers/service.ts'
import { join } from 'node:path'
import { ARTIFACTS, launch, newPage, text, unlabelled } from '../../helpers/browser.ts'
import { eventually } from '../../helpers/wait.ts'

const ADDRESS = 'C0:FF:EE:00:00:01'

// The ANT test runs first: the file's Chromium is launched by the first test that asks, and one launched while the
// BLE test's private D-Bus is the system bus (DBUS_SYSTEM_BUS_ADDRESS) exits when that bus stops.

t.test('operator pairs an unpaired ANT+ strap, listed with its signal and battery, and its readings arrive under the member', async t => {
  // One simulated ANT USB stick on a socat pty pair, hearing one strap; the relay's ANT source opens the other end.
  const transport = new AntTransport()
  await transport.open([{ index: 0, device_id: 'ant:143417', label: 'Ana' }])
  const svc = await startTestService(t, { ant: [{ path: transport.relayPath, network_key: '0102030405060708' }] })
  // The service (and its ANT source) stops before the stick goes.
  t.teardown(async () => {
    clearInterval(feed)
    await svc.stop()
    await transport.close()
  })
  const beat = (): void => { void transport.send(0, { measured_at: Date.now(), heart_rate: 131, rr_intervals_ms: [458, 458], sensor_contact: true }) }
  beat()
  const feed = setInterval(beat, 1000)
  const [runner, , browser] = await Promise.all([svc.user('runner'), svc.user('other'), launch(t)])
  const read = await svc.token('runner', 'data:heart_rate:read')

  const errors: string[] = []
  const { page } = await newPage(browser, errors)
  await page.goto(`${svc.url}/operator/signin`)
  await page.getByLabel('Admin token').fill(svc.adminToken)
  await Promise.all([page.waitForURL(`${svc.url}/operator`), page.getByRole('button', { name: 'Sign in' }).click()])

  const ANT_ID = 'ant:143417'
  const row = page.locator(`form.pair-form[data-device-id="${ANT_ID}"]`)
  await eventually('the strap among the unpaired devices', async () => {
    await page.goto(`${svc.url}/operator/devices`)
    return await row.count() === 1 ? true : undefined
  })
  t.same(await unlabelled(page), [], 'every control on /operator/devices has a label')
  // Device, source, signal (the simulated stick puts strap 143417 at -45 - (143417 * 7) % 36 = -68 dBm), battery.
  const cells = await page.locator('tr', { has: row }).locator('td').allTextContents()
  t.same(cells.slice(0, 4), [`${ANT_ID}ANT+ strap 143417`, 'ant', '-68 dBm', '100%'])
  t.match(await page.locator('table', { hasText: 'Relay sources' }).textContent(), new RegExp(`ant:${transport.relayPath as string}\\s*running\\s*continuous scan mode`))

  await row.getByLabel(`Member for ${ANT_ID}`).selectOption('runner')
  await Promise.all([page.waitForURL(/done=paired/), row.getByRole('button', { name: 'Pair with member' }).click()])
  t.equal(await text(page, '[role=status]'), 'Device paired.')
  const paired = svc.service.services.devices.get(ANT_ID)
  t.equal(paired?.profile_id, runner)
  t.equal(paired?.kind, 'ant')

  const latest = await eventually('the reading under the member', async () => {
    const res = await fetch(`${svc.url}/api/v1/data/heart_rate/latest`, { headers: { authorization: `Bearer ${read}` } })
    const body = await res.json() as { data?: { heart_rate?: number } }
    return res.status === 200 && body.data?.heart_rate === 131 ? body : undefined
  })
  t.equal(latest.data?.heart_rate, 131)
  const pairedRow = page.locator('tr', { hasText: ANT_ID })
  await eventually('the paired row with its last reading', async () => {
    await page.goto(`${svc.url}/operator/devices`)
    return (await pairedRow.locator('.last-bpm').count()) === 1 ? true : undefined
  })
  t.equal(await pairedRow.locator('.device-state').textContent(), 'connected')
  t.equal(await pairedRow.locator('.last-bpm').textContent(), '131')
  t.match(await pairedRow.textContent(), /ant\s*runner/)
  t.same(errors, [], 'no page errors')
})

t.test('operator pairs an unpaired strap and its readings arrive under the member', async t => {
  const ble = await startEmulatedBluez()
  const strap = ble.emulator.addStrap({ address: ADDRESS, name: 'Polar H10 0001', battery: 77, rssi: -58 })
  const svc = await startTestService(t, { ble: { enabled: true, rescan_interval_ms: 200, backoff_initial_ms: 50, backoff_max_ms: 400 } })
  // The service (and its BLE source) stops before the emulator and the bus go (svc.stop() is idempotent).
  t.teardown(async () => {
    await svc.stop()
    await ble.stop()
  })
  const [rider, , browser] = await Promise.all([svc.user('rider'), svc.user('other'), launch(t)])
  const read = await svc.token('rider', 'data:heart_rate:read')

  const errors: string[] = []
  const { page } = await newPage(browser, errors)
  await page.goto(`${svc.url}/operator/signin`)
  await page.getByLabel('Admin token').fill(svc.adminToken)
  await Promise.all([page.waitForURL(`${svc.url}/operator`), page.getByRole('button', { name: 'Sign in' }).click()])
  t.match(await page.locator('table', { hasText: 'Relay sources' }).textContent(), /ble/)

  // The strap shows up in "Unpaired devices in range" (the page is reloaded until the BLE scan saw it).
  const row = page.locator(`form.pair-form[data-device-id="${ADDRESS}"]`)
  await eventually('the strap among the unpaired devices', async () => {
    await page.goto(`${svc.url}/operator/devices`)
    return await row.count() === 1 ? true : undefined
  })
  t.same(await unlabelled(page), [], 'every control on /operator/devices has a label')
  const unpairedRow = page.locator('tr', { has: row })
  t.match(await unpairedRow.textContent(), /Polar H10 0001/)
  t.match(await unpairedRow.textContent(), /ble/)
  t.equal(svc.service.services.devices.get(ADDRESS), undefined, 'not paired yet')

  await row.getByLabel(`Member for ${ADDRESS}`).selectOption('rider')
  await Promise.all([page.waitForURL(/done=paired/), row.getByRole('button', { name: 'Pair with member' }).click()])
  t.equal(await text(page, '[role=status]'), 'Device paired.')
  const paired = svc.service.services.devices.get(ADDRESS)
  t.equal(paired?.profile_id, rider)
  t.equal(paired?.kind, 'ble')
  t.equal(await page.locator(`form.pair-form[data-device-id="${ADDRESS}"]`).count(), 0, 'no longer offered for pairing')

  // The relay connects the now-paired strap and subscribes; its notifications become the rider's readings.
  await eventually('the relay subscribing to the strap', async () => strap.notifying ? true : undefined)
  const latest = await eventually('the reading under the member', async () => {
    strap.sendHeartRate({ heart_rate: 88, sensor_contact: 'detected' })
    const res = await fetch(`${svc.url}/api/v1/data/heart_rate/latest`, { headers: { authorization: `Bearer ${read}` } })
    const body = await res.json() as { data?: { heart_rate?: number } }
    return res.status === 200 && body.data?.heart_rate === 88 ? body : undefined
  })
  t.equal(latest.data?.heart_rate, 88)

  // The device page shows the paired strap connected, with battery and last reading.
  const pairedRow = page.locator('tr', { hasText: ADDRESS })
  await eventually('the paired row with its last reading', async () => {
    await page.goto(`${svc.url}/operator/devices`)
    return (await pairedRow.locator('.last-bpm').count()) === 1 ? true : undefined
  })
  t.equal(await pairedRow.locator('.device-state').textContent(), 'connected')
  t.equal(await pairedRow.locator('.last-bpm').textContent(), '88')
  t.match(await pairedRow.textContent(), /77%/)
  t.match(await pairedRow.textContent(), /rider/)
  await page.screenshot({ path: join(ARTIFACTS, 'operator-devices.png'), fullPage: true })

  // Unpairing from the page removes the pairing.
  await Promise.all([page.waitForURL(/done=unpaired/), pairedRow.getByRole('button', { name: `Unpair ${ADDRESS}` }).click()])
  t.equal(svc.service.services.devices.get(ADDRESS), undefined)
  t.same(errors, [], 'no page errors')
})

t.test('the device page shows every Bluetooth adapter and the adapter of each strap; an unplugged one stays listed', async t => {
  const ble = await startEmulatedBluez({ adapters: 2 })
  const NEAR0 = 'C0:FF:EE:00:00:10'
  const NEAR1 = 'C0:FF:EE:00:00:11'
  ble.emulator.addStrap({ address: NEAR0, rssiAt: { hci0: -50, hci1: -80 } })
  const near1 = ble.emulator.addStrap({ address: NEAR1, rssiAt: { hci0: -80, hci1: -50 } })
  const svc = await startTestService(t, {
    // The straps send nothing here: silent_after_ms is long enough that no link counts as silent however slow the machine.
    ble: { enabled: true, adapters: [{ name: 'hci0', max_connections: 1 }, { name: 'hci1', max_connections: 2 }], silent_after_ms: 3_600_000, rescan_interval_ms: 200, backoff_initial_ms: 50, backoff_max_ms: 400 }
  })
  t.teardown(async () => {
    await svc.stop()
    await ble.stop()
  })
  const [rider, other, browser] = await Promise.all([svc.user('rider'), svc.user('other'), launch(t)])
  await svc.service.services.devices.add({ device_id: NEAR0, profile_id: rider, kind: 'ble' })
  await svc.service.services.devices.add({ device_id: NEAR1, profile_id: other, kind: 'ble' })

  const errors: string[] = []
  const { page } = await newPage(browser, errors)
  await page.goto(`${svc.url}/operator/signin`)
  await page.getByLabel('Admin token').fill(svc.adminToken)
  await Promise.all([page.waitForURL(`${svc.url}/operator`), page.getByRole('button', { name: 'Sign in' }).click()])

  const adapters = page.locator('table', { hasText: 'Bluetooth adapters' })
  const rowsOf = async (): Promise<string[][]> => await adapters.locator('tbody tr').evaluateAll(rows =>
    rows.map(r => [...r.querySelectorAll('td')].map(td => (td.textContent ?? '').trim())))
  const both = await eventually('both straps connected, each through the adapter that hears it best', async () => {
    await page.goto(`${svc.url}/operator/devices`)
    const rows = await rowsOf()
    return rows.map(r => r[2]).join() === '1,1' ? rows : undefined
  })
  t.same(both, [['hci0', 'full', '1', '1', '0', '0'], ['hci1', 'up', '1', '2', '0', '0']])
  await eventually('each strap row naming its adapter', async () => {
    await page.goto(`${svc.url}/operator/devices`)
    return await page.locator('tr', { hasText: NEAR1 }).locator('.device-adapter').count() === 1 ? true : undefined
  })
  t.equal(await page.locator('tr', { hasText: NEAR0 }).locator('.device-adapter').textContent(), 'via hci0')
  t.equal(await page.locator('tr', { hasText: NEAR1 }).locator('.device-adapter').textContent(), 'via hci1')

  const health = await (await fetch(`${svc.url}/health`)).json() as { sources: Array<{ id: string, adapters?: unknown }> }
  t.same(health.sources.find(s => s.id === 'ble')?.adapters, [
    { name: 'hci0', state: 'full', connections: 1, limit: 1, silent_total: 0, refused_total: 0 },
    { name: 'hci1', state: 'up', connections: 1, limit: 2, silent_total: 0, refused_total: 0 }
  ])
  const metrics = await (await fetch(`${svc.url}/metrics`)).text()
  for (const line of [
    'hr_relay_ble_adapter_connections{adapter="hci0"} 1',
    'hr_relay_ble_adapter_max_connections{adapter="hci1"} 2',
    'hr_relay_ble_adapter_state{adapter="hci0",state="full"} 1',
    'hr_relay_ble_adapter_state{adapter="hci1",state="up"} 1',
    'hr_relay_ble_adapter_silent_total{adapter="hci1"} 0',
    'hr_relay_ble_adapter_refused_total{adapter="hci0"} 0'
  ]) t.ok(metrics.split('\n').includes(line), line)

  // hci1 is unplugged: hci0 has no room for its strap, which waits; hci1 stays listed as missing.
  ble.emulator.unplugAdapter('hci1')
  // The adapter is marked missing as it leaves D-Bus, and its strap's link is released when BlueZ reports the
  // disconnection, a moment later on a loaded machine: wait for both, and for the page to show the strap without it.
  const unplugged = await eventually('hci1 listed as missing, its strap released', async () => {
    await page.goto(`${svc.url}/operator/devices`)
    const rows = await rowsOf()
    const strapAdapters = await page.locator('tr', { hasText: NEAR1 }).locator('.device-adapter').count()
    return rows[1]?.[1] === 'missing' && rows[1]?.[2] === '0' && strapAdapters === 0 ? rows : undefined
  })
  t.same(unplugged, [['hci0', 'full', '1', '1', '0', '0'], ['hci1', 'missing', '0', '2', '0', '0']])
  t.equal(near1.connected, false)
  t.equal(await page.locator('tr', { hasText: NEAR1 }).locator('.device-adapter').count(), 0, 'no adapter shown for a strap that is not connected')
  t.same(errors, [], 'no page errors')
})
