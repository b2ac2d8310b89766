// Pairing a strap by holding it near the box, in real Chromium: two straps of the BlueZ emulator (on a private
// dbus-daemon, read by the relay's BLE source through node-ble) at different signal strengths. From the member's
// page, "Pair a strap" opens the nearby list with the member chosen; the list follows the straps live (no reload):
// strongest first, the clearly nearest one marked; one click pairs it and the member's page lists it. A strap paired
// elsewhere (the admin API, as the CLI does) leaves the open list by itself. And the ranking itself, by hand.
import t from 'tap'
import { join } from 'node:path'
import { startEmulatedBluez } from '../../helpers/bluez.ts'
import { startTestService } from '../../helpers/service.ts'
import { ARTIFACTS, launch, newPage, text, unlabelled, until } from '../../helpers/browser.ts'
import { nearbyUnpaired } from '../../../api/store/device-sightings.ts'

// Page-side globals of the functions sent to the browser (the project's tsconfig has no DOM lib).
interface Row { getAttribute (name: string): string | null, querySelector (s: string): { textContent: string | null } | null }
declare const document: { querySelectorAll (s: string): ArrayLike<Row>, querySelector (s: string): Row | null }

const HELD = 'C0:FF:EE:00:00:11'
const FAR = 'C0:FF:EE:00:00:12'

/** The nearby list as the page shows it: [device id, signal text, marked nearest] per row, in order. */
function rowsAre (want: string): boolean {
  const rows = Array.from(document.querySelectorAll('#desk-nearby tbody tr.nearby-row'))
  return JSON.stringify(rows.map(r => [r.getAttribute('data-device-id'), r.querySelector('td.signal')?.textContent, r.querySelector('.nearest-mark') !== null])) === want
}

t.test('hold a strap near the box: it is listed first and marked, one click pairs it with the member, all live', async t => {
  // Chromium first: it must not start while the emulator's private bus is the system bus.
  const browser = await launch(t)
  const ble = await startEmulatedBluez()
  const held = ble.emulator.addStrap({ address: HELD, name: 'Polar H10 0011', battery: 90, rssi: -44 })
  ble.emulator.addStrap({ address: FAR, name: 'Polar H10 0012', battery: 60, rssi: -79 })
  const svc = await startTestService(t, { ble: { enabled: true, rescan_interval_ms: 200, backoff_initial_ms: 50, backoff_max_ms: 400 } })
  t.teardown(async () => {
    await svc.stop()
    await ble.stop()
  })
  const pia = await svc.user('pia', { display_name: 'Pia Lund' })
  await svc.user('other')

  const errors: string[] = []
  const { page } = await newPage(browser, errors)
  await page.goto(`${svc.url}/operator/signin`)
  await page.getByLabel('Admin token').fill(svc.adminToken)
  await Promise.all([page.waitForURL(`${svc.url}/operator`), page.getByRole('button', { name: 'Sign in' }).click()])

  // From the member's page.
  await page.goto(`${svc.url}/operator/users/pia`)
  await Promise.all([page.waitForURL(`${svc.url}/operator/devices?member=pia`), page.getByRole('link', { name: 'Pair a strap' }).click()])
  const loadedAt = await page.evaluate('performance.timeOrigin')
  t.equal(await page.locator('#desk-member').inputValue(), 'pia', 'the member is chosen')
  // The straps appear as the BLE scan hears them, without a reload: the held one first and marked.
  await until(page, rowsAre, JSON.stringify([[HELD, '-44 dBm', true], [FAR, '-79 dBm', false]]))
  t.equal(await page.locator('#desk-live').getAttribute('data-state'), 'live')
  t.same(await unlabelled(page), [], 'every control on /operator/devices has a label')
  const heldRow = page.locator(`tr.nearby-row[data-device-id="${HELD}"]`)
  t.equal(await heldRow.getByLabel(`Member for ${HELD}`).inputValue(), 'pia', 'the row has the member chosen')
  // Device, source, signal, battery (BlueZ shows a strap's battery only once connected: not yet), last seen, the mark.
  t.same((await heldRow.locator('td').allTextContents()).slice(0, 6), [`${HELD}Polar H10 0011`, 'ble', '-44 dBm', '—', await heldRow.locator('td.seen').textContent(), 'Nearest the box'])
  await page.screenshot({ path: join(ARTIFACTS, 'front-desk-devices.png'), fullPage: true })

  // The other strap comes close too: the order follows, and neither is clearly nearest (4 dB apart); then it moves away.
  ble.emulator.strap(FAR)?.setRssi(-40)
  await until(page, rowsAre, JSON.stringify([[FAR, '-40 dBm', false], [HELD, '-44 dBm', false]]))
  ble.emulator.strap(FAR)?.setRssi(-79)
  await until(page, rowsAre, JSON.stringify([[HELD, '-44 dBm', true], [FAR, '-79 dBm', false]]))
  t.equal(await page.evaluate('performance.timeOrigin'), loadedAt, 'all without a reload')

  // One click pairs the marked strap with the member; back on the member's page, it is their strap.
  await Promise.all([page.waitForURL(`${svc.url}/operator/users/pia?done=paired`), heldRow.getByRole('button', { name: 'Pair with member' }).click()])
  t.equal(await text(page, '[role=status]'), 'Strap paired.')
  t.match(await page.locator('table', { hasText: 'Straps of pia' }).textContent(), new RegExp(`${HELD} Polar H10 0011ble`))
  t.match(svc.service.services.devices.get(HELD), { profile_id: pia, kind: 'ble', name: 'Polar H10 0011' })
  t.ok(held, 'the strap the member held')

  // The list without the paired strap; the other one, paired from the CLI's API, leaves the open page by itself.
  await page.goto(`${svc.url}/operator/devices`)
  // Alone, but at -79 dBm: not at the box, so not marked.
  await until(page, rowsAre, JSON.stringify([[FAR, '-79 dBm', false]]))
  const before = await page.evaluate('performance.timeOrigin')
  await svc.admin('POST', '/admin/devices', { device_id: FAR, username: 'other', kind: 'ble' })
  await until(page, rowsAre, JSON.stringify([]))
  t.equal(await text(page, '#desk-nearby tbody tr.desk-empty td'), 'nothing unpaired in range right now')
  t.equal(await page.evaluate('performance.timeOrigin'), before, 'without a reload')
  t.same(errors, [], 'no page errors')
})

t.test('nearbyUnpaired: strongest first, unknown signal last, the nearest only when clearly so and heard lately', async t => {
  const now = 1_800_000_000_000
  const s = (id: string, rssi: number | undefined, ago = 0, source: 'ble' | 'ant' = 'ble'): { device_id: string, source: 'ble' | 'ant', connected: boolean, seen_at: number, rssi?: number } =>
    ({ device_id: id, source, connected: false, seen_at: now - ago, ...(rssi === undefined ? {} : { rssi }) })
  const view = (list: ReturnType<typeof nearbyUnpaired>): Array<[string, boolean]> => list.map(d => [d.device_id, d.nearest])
  t.same(view(nearbyUnpaired([s('a', -70), s('ant:1', undefined, 0, 'ant'), s('b', -50)], now)), [['b', true], ['a', false], ['ant:1', false]], '20 dB apart: marked; the ANT strap without a signal last')
  t.same(view(nearbyUnpaired([s('a', -59), s('b', -50)], now)), [['b', false], ['a', false]], '9 dB apart: not clearly nearest')
  t.same(view(nearbyUnpaired([s('a', -60), s('b', -50)], now)), [['b', true], ['a', false]], '10 dB apart: clearly nearest')
  t.same(view(nearbyUnpaired([s('b', -50, 15_001), s('a', -70)], now)), [['b', false], ['a', true]], 'not heard for over 15 s: neither marked nor counted against another')
  t.same(view(nearbyUnpaired([s('a', -76)], now)), [['a', false]], 'alone but weaker than -75 dBm: across the room, not at the box')
  t.same(view(nearbyUnpaired([s('a', -75)], now)), [['a', true]], 'alone at -75 dBm')
  t.same(view(nearbyUnpaired([s('x', undefined, 5), s('y', undefined, 1)], now)), [['y', false], ['x', false]], 'no signal at all: most recently seen first, none marked')
  t.same(view(nearbyUnpaired([], now)), [])
})
