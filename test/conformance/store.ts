// The store conformance suite: the contract of the storage interfaces
// (api/store/types.ts), in the manner of abstract-level's compliance tests and
// aedes-persistence/abstract.js. A backend passes it by calling
// storeConformance(t, factory) from a test file with a factory that opens its
// Stores on an empty location of their own; the LevelDB backend runs it from
// test/api/store/conformance-level.test.ts.
import type { Test } from 'tap'
import type { StoredReading } from '../../api/pipeline/reading.ts'
import type { RawReading, ReadingPlan, Stores, WriteOp } from '../../api/store/types.ts'
import type { Rollup } from '../../api/store/rollups.ts'
import { UserExistsError } from '../../api/store/users.ts'
import { DeviceExistsError, InvalidDeviceIdError } from '../../api/store/devices.ts'
import { InvalidRedirectUriError } from '../../api/store/clients.ts'

export interface StoreHandle {
  /** The open stores, on an empty location of their own. */
  stores: Stores
  /** Closes the stores and opens the same location again (the data must still be there). */
  reopen (): Promise<Stores>
  /** Closes the stores (if open) and removes the location. */
  destroy (): Promise<void>
}

/** Opens a fresh, empty bundle of stores; `gapMs` is the stream gap the readings store credits time with. */
export type StoreFactory = (options: { gapMs: number }) => Promise<StoreHandle>

const GAP_MS = 5000
const SEC = 1000
const MIN = 60_000
const HOUR = 3_600_000
const DAY = 86_400_000
/** 2026-01-05 10:00:00 UTC, on an hour boundary. */
const T0 = Date.UTC(2026, 0, 5, 10, 0, 0)
const P = 'profile-p'
const Q = 'profile-q'

function r (profileId: string, at: number, bpm: number, extra: Partial<StoredReading> = {}): StoredReading {
  return { profile_id: profileId, measured_at: at, heart_rate: bpm, source: 'sim', ...extra }
}

/** Plans a group, appends its ops to the reading log and commits the plan (what the ingest pipeline does). */
async function write (stores: Stores, group: StoredReading[]): Promise<ReadingPlan> {
  const plan = await stores.readings.plan(group)
  await stores.readingLog.append(plan.ops)
  plan.commit()
  return plan
}

async function all<T> (it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = []
  for await (const x of it) out.push(x)
  return out
}

const times = (rows: RawReading[]): number[] => rows.map(x => x.measured_at - T0)

/** What a rollup must equal for the readings it summarises: count, sum, min and max of the bpm. */
function summary (rows: Array<{ heart_rate: number }>): { c: number, s: number, mn: number, mx: number } {
  const bpm = rows.map(x => x.heart_rate)
  return { c: bpm.length, s: bpm.reduce((a, b) => a + b, 0), mn: Math.min(...bpm), mx: Math.max(...bpm) }
}
const csmm = (x: Rollup): { c: number, s: number, mn: number, mx: number } => ({ c: x.c, s: x.s, mn: x.mn, mx: x.mx })

export function storeConformance (t: Test, factory: StoreFactory): void {
  /** A fresh bundle for one subtest, removed at its end. */
  const open = async (t: Test): Promise<StoreHandle> => {
    const handle = await factory({ gapMs: GAP_MS })
    t.teardown(async () => { await handle.destroy() })
    return handle
  }

  t.test('readings: written readings are read back in order with exact values', async t => {
    const { stores } = await open(t)
    t.equal(stores.readings.gapMs, GAP_MS)
    const plan = await write(stores, [
      r(P, T0 + 2 * SEC, 80, { source: 'ble', device_id: 'strap-1', rr_intervals_ms: [750, 760], energy_expended_kj: 12, sensor_contact: true }),
      r(P, T0, 70, { source: 'http' }),
      r(Q, T0 + 500, 90),
      r(P, T0 + SEC, 75, { source: 'mqtt', sensor_contact: false })
    ])
    t.same(plan.stored.map(x => [x.profile_id, x.measured_at - T0]).sort(), [[P, 0], [P, 1000], [P, 2000], [Q, 500]], 'all four stored')
    t.same(plan.duplicates, [], 'no duplicates')
    t.strictSame(await all(stores.readings.range(P, T0, T0 + 2 * SEC)), [
      { measured_at: T0, heart_rate: 70, source: 'http' },
      { measured_at: T0 + SEC, heart_rate: 75, source: 'mqtt', sensor_contact: false },
      { measured_at: T0 + 2 * SEC, heart_rate: 80, source: 'ble', rr_intervals_ms: [750, 760], energy_expended_kj: 12, sensor_contact: true }
    ], 'oldest first, every field as written, only the profile asked for')
    t.strictSame(await all(stores.readings.range(Q, 0, T0 + DAY)), [{ measured_at: T0 + 500, heart_rate: 90, source: 'sim' }])
    // A later group, partly older than what is stored: still read back in time order.
    await write(stores, [r(P, T0 + 3 * SEC, 81), r(P, T0 + 1500, 77)])
    t.same(times(await all(stores.readings.range(P, 0, T0 + DAY))), [0, 1000, 1500, 2000, 3000])
    t.same((await all(stores.readings.range(P, 0, T0 + DAY))).map(x => x.heart_rate), [70, 75, 77, 80, 81])
  })

  t.test('readings: range is [from, to], page is [from, to) with a limit, newest first with reverse; before is strictly before', async t => {
    const { stores } = await open(t)
    await write(stores, [0, 1, 2, 3, 4].map(i => r(P, T0 + i * SEC, 60 + i)))
    const rd = stores.readings
    t.same(times(await all(rd.range(P, T0 + SEC, T0 + 3 * SEC))), [1000, 2000, 3000], 'range: both bounds inclusive')
    t.same(times(await all(rd.range(P, T0 + SEC, T0 + 3 * SEC, 2))), [1000, 2000], 'range: at most limit, oldest first')
    t.same(times(await all(rd.range(P, T0 + 3 * SEC, T0 + SEC))), [], 'range: to before from is empty')
    t.same(times(await all(rd.range(P, T0 + 4 * SEC + 1, T0 + DAY))), [], 'range: nothing after the newest')
    t.same(times(await rd.page(P, T0 + SEC, T0 + 3 * SEC, 10)), [1000, 2000], 'page: end exclusive')
    t.same(times(await rd.page(P, T0, T0 + 5 * SEC, 2)), [0, 1000], 'page: the oldest `limit`')
    t.same(times(await rd.page(P, T0, T0 + 5 * SEC, 2, true)), [4000, 3000], 'page: reverse gives the newest first')
    t.same(times(await rd.page(P, T0, T0, 10)), [], 'page: empty interval')
    t.same(times(await rd.page(P, T0, T0 + 5 * SEC, 0)), [], 'page: limit 0')
    t.same(times(await rd.page(Q, 0, T0 + DAY, 10)), [], 'page: another profile has none')
    t.strictSame(await rd.before(P, T0 + 2 * SEC), { measured_at: T0 + SEC, heart_rate: 61, source: 'sim' }, 'before: the last one strictly before')
    t.equal(await rd.before(P, T0), undefined, 'before: none before the first')
    t.equal((await rd.before(P, T0 + DAY))?.measured_at, T0 + 4 * SEC, 'before: the newest when t is after it')
  })

  t.test('readings: a duplicate (same profile and measured_at) is not stored twice', async t => {
    const { stores } = await open(t)
    await write(stores, [r(P, T0, 70), r(P, T0 + 5 * SEC, 72)])
    const plan = await write(stores, [r(P, T0, 99), r(P, T0 + 5 * SEC, 98), r(P, T0 + SEC, 71), r(P, T0 + SEC, 97), r(Q, T0, 50)])
    t.same(plan.stored.map(x => [x.profile_id, x.measured_at - T0, x.heart_rate]), [[P, 1000, 71], [Q, 0, 50]], 'the first of a repeated time in a group is stored')
    t.same(plan.duplicates.map(x => [x.measured_at - T0, x.heart_rate]).sort((a, b) => (a[1] ?? 0) - (b[1] ?? 0)), [[1000, 97], [5000, 98], [0, 99]], 'the stored ones and the repeat are duplicates')
    t.same((await all(stores.readings.range(P, 0, T0 + DAY))).map(x => [x.measured_at - T0, x.heart_rate]), [[0, 70], [1000, 71], [5000, 72]], 'stored values unchanged')
    const again = await write(stores, [r(P, T0 + SEC, 55)])
    t.same(again.stored, [], 'a duplicate in a later group is not stored')
    t.equal(again.duplicates.length, 1)
    t.same((await all(stores.readings.rollups(P, T0, T0 + MIN))).map(([m, x]) => [m, csmm(x)]), [[T0, { c: 3, s: 213, mn: 70, mx: 72 }]], 'the rollup counts each reading once')
  })

  t.test('latest: the newest reading per profile', async t => {
    const { stores } = await open(t)
    t.equal(await stores.readings.latest(P), undefined, 'none before the first reading')
    await write(stores, [r(P, T0 + SEC, 80, { source: 'ble', device_id: 'strap-1' }), r(P, T0, 70), r(Q, T0 + 2 * SEC, 90)])
    t.strictSame(await stores.readings.latest(P), { measured_at: T0 + SEC, heart_rate: 80, source: 'ble', device_id: 'strap-1' })
    t.strictSame(await stores.readings.latest(Q), { measured_at: T0 + 2 * SEC, heart_rate: 90, source: 'sim' })
    await write(stores, [r(P, T0 + 500, 60)])
    t.equal((await stores.readings.latest(P))?.measured_at, T0 + SEC, 'an older reading does not replace the latest')
    await write(stores, [r(P, T0 + 10 * SEC, 100, { source: 'http' })])
    t.strictSame(await stores.readings.latest(P), { measured_at: T0 + 10 * SEC, heart_rate: 100, source: 'http' }, 'a newer one does')
    stores.readings.resetCaches()
    t.strictSame(await stores.readings.latest(P), { measured_at: T0 + 10 * SEC, heart_rate: 100, source: 'http' }, 'the same from the store after resetCaches')
  })

  t.test('rollups: minute and hour rollups equal the raw readings they summarise', async t => {
    const { stores } = await open(t)
    // 09:58:59, 09:59:58, 09:59:59 | 10:00:00, 10:00:30, 10:00:59.999, 10:01:00, 10:03:00.001
    const at = [-61 * SEC, -2 * SEC, -SEC, 0, 30 * SEC, MIN - 1, MIN, 3 * MIN + 1]
    const bpm = [90, 100, 110, 120, 60, 130, 70, 80]
    // Written in two groups, the second one older than the first.
    await write(stores, at.slice(3).map((a, i) => r(P, T0 + a, bpm[i + 3] ?? 0)))
    await write(stores, at.slice(0, 3).map((a, i) => r(P, T0 + a, bpm[i] ?? 0)))
    await write(stores, [r(Q, T0 + 10 * SEC, 200)])
    const raw = await all(stores.readings.range(P, 0, T0 + DAY))
    t.equal(raw.length, 8)

    const minutes = await all(stores.readings.rollups(P, T0 - HOUR, T0 + HOUR))
    t.same(minutes.map(([m]) => (m - T0) / MIN), [-2, -1, 0, 1, 3], 'one rollup per minute that has readings')
    for (const [m, rollup] of minutes) {
      t.same(csmm(rollup), summary(raw.filter(x => x.measured_at >= m && x.measured_at < m + MIN)), `minute ${(m - T0) / MIN} equals its readings`)
    }
    t.same(minutes.map(([, x]) => csmm(x)), [
      { c: 1, s: 90, mn: 90, mx: 90 },
      { c: 2, s: 210, mn: 100, mx: 110 },
      { c: 3, s: 310, mn: 60, mx: 130 },
      { c: 1, s: 70, mn: 70, mx: 70 },
      { c: 1, s: 80, mn: 80, mx: 80 }
    ])
    t.same((await all(stores.readings.rollups(P, T0, T0 + MIN))).map(([m]) => m), [T0], 'rollups: [from, to)')

    const hours = await all(stores.readings.hourRollups(P, T0 - 2 * HOUR, T0 + 2 * HOUR))
    t.same(hours.map(([h]) => h), [T0 - HOUR, T0], 'one rollup per hour that has readings')
    t.same(hours.map(([, x]) => csmm(x)), [
      summary(raw.filter(x => x.measured_at < T0)),
      summary(raw.filter(x => x.measured_at >= T0))
    ], 'each hour equals its readings')
    t.same(hours.map(([, x]) => csmm(x)), [{ c: 3, s: 300, mn: 90, mx: 110 }, { c: 5, s: 460, mn: 60, mx: 130 }])
    // Streamed time (gap 5 s): 09:59:59 follows 09:59:58 (1 s); 10:00:00 follows 09:59:59 (1 s); 10:01:00 follows 10:00:59.999 (1 ms).
    t.same(hours.map(([, x]) => x.st), [1000, 1001], 'streamed milliseconds per hour')
    t.same((await all(stores.readings.hourRollups(P, T0, T0 + HOUR))).map(([h]) => h), [T0], 'hourRollups: [from, to)')

    // An out-of-order reading at 10:00:29 credits its successor 10:00:30 with 1 s.
    await write(stores, [r(P, T0 + 29 * SEC, 140)])
    const hour10 = (await all(stores.readings.hourRollups(P, T0, T0 + HOUR)))[0]?.[1]
    t.same(hour10 === undefined ? undefined : [csmm(hour10), hour10.st], [{ c: 6, s: 600, mn: 60, mx: 140 }, 2001], 'the hour takes the late reading and its successor\'s credit')
    const minute10 = (await all(stores.readings.rollups(P, T0, T0 + MIN)))[0]?.[1]
    t.same(minute10 === undefined ? undefined : [csmm(minute10), minute10.st], [{ c: 4, s: 450, mn: 60, mx: 140 }, 2000])
    t.same((await all(stores.readings.rollups(Q, 0, T0 + DAY))).map(([m, x]) => [m, x.c, x.s]), [[T0, 1, 200]], 'profiles apart')
  })

  t.test('prune: removes exactly what is older than the retention', async t => {
    const { stores } = await open(t)
    const now = T0
    // raw kept for 1 day, rollups for 2: readings 3 days old, a millisecond over 1 day, exactly 1 day, and 1 s old.
    const at = [now - 3 * DAY, now - DAY - 1, now - DAY, now - SEC]
    await write(stores, at.map((a, i) => r(P, a, 70 + i)))
    await write(stores, [r(Q, now - 3 * DAY + 5 * SEC, 90)])
    const retention = { rawDays: 1, rollupDays: 2 }
    t.same([await stores.readings.prune(now, retention, 1), await stores.readings.prune(now, retention, 1)], [1, 1], 'at most `limit` per call')
    t.equal(await stores.readings.prune(now, retention, 1000), 3, 'the rest: P\'s minute 3 days old, Q\'s raw reading and minute')
    t.equal(await stores.readings.prune(now, retention, 1000), 0, 'nothing left to prune')
    t.same((await all(stores.readings.range(P, 0, now + DAY))).map(x => x.measured_at), [now - DAY, now - SEC], 'raw readings older than 1 day are gone, the one exactly 1 day old is kept')
    t.same(await all(stores.readings.range(Q, 0, now + DAY)), [])
    t.same((await all(stores.readings.rollups(P, 0, now + DAY))).map(([m, x]) => [m, x.c]), [[now - DAY - MIN, 1], [now - DAY, 1], [now - MIN, 1]], 'minute rollups younger than 2 days are kept')
    t.same((await all(stores.readings.hourRollups(P, 0, now + DAY))).map(([h, x]) => [h, x.c]), [[now - DAY - HOUR, 1], [now - DAY, 1], [now - HOUR, 1]], 'hour rollups go with their minutes')
    t.same(await all(stores.readings.rollups(Q, 0, now + DAY)), [])
    t.same(await all(stores.readings.hourRollups(Q, 0, now + DAY)), [])
    t.equal((await stores.readings.latest(P))?.measured_at, now - SEC, 'the latest reading is not pruned')
  })

  t.test('users: create, duplicate, lookup, password check, update', async t => {
    const { stores } = await open(t)
    const users = stores.users
    const alice = await users.create({ username: 'Alice', password: 'correct horse', display_name: 'Alice A.' }, T0)
    t.match(alice, { username: 'Alice', channel: 'Alice', display_name: 'Alice A.', mobile_login: false, premium: { plan: 'none', expires_at: null }, features: [], created_at: T0 })
    t.type(alice.profile_id, 'string')
    t.notOk(alice.password_hash.includes('correct horse'), 'the password is stored only hashed')
    await t.rejects(users.create({ username: 'alice', password: 'other' }), UserExistsError, 'usernames are unique, case-insensitively')
    const bob = await users.create({ username: 'bob', password: 'pw-bob', premium: 'trial' }, T0)
    t.same(bob.premium, { plan: 'trial', expires_at: T0 + 14 * DAY })
    t.not(bob.profile_id, alice.profile_id)
    t.strictSame(await users.get(alice.profile_id), alice)
    t.equal(await users.get('no-such-profile'), undefined)
    t.strictSame(await users.byUsername('ALICE'), alice)
    t.equal(await users.byUsername('carol'), undefined)
    t.equal((await users.authenticate('alice', 'correct horse'))?.profile_id, alice.profile_id, 'right password')
    t.equal(await users.authenticate('alice', 'wrong'), undefined, 'wrong password')
    t.equal(await users.authenticate('carol', 'correct horse'), undefined, 'unknown user')
    t.same((await users.list()).map(u => u.username), ['Alice', 'bob'])
    t.equal((await users.update(alice.profile_id, u => ({ ...u, display_name: 'A' })))?.display_name, 'A')
    t.equal((await users.get(alice.profile_id))?.display_name, 'A')
    t.equal(await users.update('no-such-profile', u => u), undefined)
    await users.grantFeature(bob.profile_id, 'export')
    t.same((await users.grantFeature(bob.profile_id, 'export'))?.features, ['export'], 'a feature is granted once')
    const heard: Array<boolean | undefined> = []
    const off = users.onHomeAssistantChanged(u => { heard.push(u.home_assistant) })
    await users.setHomeAssistant(bob.profile_id, true)
    off()
    await users.setHomeAssistant(bob.profile_id, false)
    t.same(heard, [true], 'listeners hear the change until they unsubscribe')
    t.equal(users.ingestionPaused(bob.profile_id, T0), false)
    await users.update(bob.profile_id, u => ({ ...u, ingestion_paused: { since: T0, until: T0 + HOUR } }))
    t.equal(users.ingestionPaused(bob.profile_id, T0 + MIN), true, 'a pause is seen at once')
    t.same(users.ingestionPause(bob.profile_id, T0 + MIN), { paused: true, until: T0 + HOUR })
    t.equal(users.ingestionPaused(bob.profile_id, T0 + HOUR), false, 'and ends at its end')
    t.equal(users.roomHidden(bob.profile_id, T0 + MIN), true, 'displays show a paused member as paused')
    t.equal(users.roomPausedUntil(bob.profile_id, T0 + MIN), T0 + HOUR)
    // A hidden period that ended (shown again, or run out) is kept: displays count readings only from its end.
    t.equal(users.roomVisibleSince(alice.profile_id, T0), 0, 'never hidden: every reading may show')
    await users.update(alice.profile_id, u => ({ ...u, room_hidden: { since: T0, until: T0 + MIN } }))
    t.equal(users.roomVisibleSince(alice.profile_id, T0 + 1), 0, 'while hidden the question does not arise')
    t.equal(users.roomVisibleSince(alice.profile_id, T0 + HOUR), T0 + MIN, 'afterwards, from the end of the hidden period')
    await users.update(alice.profile_id, u => ({ ...u, room_hidden: { since: T0, until: null } }))
    t.equal(users.roomVisibleSince(alice.profile_id, T0 + HOUR), 0, 'hidden until turned off: still hidden')
  })

  t.test('devices: pair, duplicate, lookup, owner, MQTT credentials, unpair', async t => {
    const { stores } = await open(t)
    const devices = stores.devices
    const strap = await devices.add({ device_id: 'aa:bb:cc:dd:ee:01', profile_id: P, kind: 'ble', name: 'Strap' }, T0)
    t.strictSame(strap, { device: { device_id: 'AA:BB:CC:DD:EE:01', profile_id: P, kind: 'ble', name: 'Strap', created_at: T0 }, mqtt_password: null }, 'a BLE address is normalised; no MQTT password for kind ble')
    await t.rejects(devices.add({ device_id: 'AA:BB:CC:DD:EE:01', profile_id: Q }), DeviceExistsError, 'a device is paired once')
    await t.rejects(devices.add({ device_id: 'bad id!', profile_id: Q }), InvalidDeviceIdError)
    const gym = await devices.add({ device_id: 'gym-1', profile_id: Q, kind: 'mqtt' }, T0)
    t.type(gym.mqtt_password, 'string')
    t.equal(gym.device.mqtt_username, 'gym-1')
    t.notOk(gym.device.mqtt_password_hash?.includes(gym.mqtt_password ?? '-'), 'the MQTT password is stored only hashed')
    t.equal((await devices.verifyMqtt('gym-1', gym.mqtt_password ?? ''))?.device_id, 'gym-1', 'right MQTT password')
    t.equal(await devices.verifyMqtt('gym-1', 'wrong'), undefined, 'wrong MQTT password')
    t.equal(await devices.verifyMqtt('AA:BB:CC:DD:EE:01', ''), undefined, 'a device without MQTT credentials')
    t.equal(await devices.verifyMqtt('nobody', gym.mqtt_password ?? ''), undefined, 'unknown username')
    t.equal(devices.get('aa:bb:cc:dd:ee:01')?.device_id, 'AA:BB:CC:DD:EE:01')
    t.equal(devices.get('nope'), undefined)
    t.equal(devices.ownerOf('aa:bb:cc:dd:ee:01'), P)
    t.equal(devices.ownerOf('aa:bb:cc:dd:ee:01', 'ble'), P)
    t.equal(devices.ownerOf('aa:bb:cc:dd:ee:01', 'mqtt'), undefined, 'a ble pairing does not own MQTT readings')
    t.equal(devices.ownerOf('gym-1', 'mqtt'), Q)
    t.equal(devices.ownerOf('unknown'), undefined)
    t.same(devices.list().map(d => d.device_id), ['AA:BB:CC:DD:EE:01', 'gym-1'])
    const removed: string[] = []
    devices.onRemoved(d => { removed.push(d.device_id) })
    t.equal((await devices.remove('gym-1'))?.device_id, 'gym-1')
    t.equal(await devices.remove('gym-1'), undefined, 'a second unpairing finds nothing')
    t.same(removed, ['gym-1'], 'listeners hear an unpairing once')
    t.equal(await devices.verifyMqtt('gym-1', gym.mqtt_password ?? ''), undefined, 'credentials end with the pairing')
    t.equal(devices.ownerOf('gym-1'), undefined)
    devices.sighting({ device_id: 'aa:bb:cc:dd:ee:02', source: 'ble', connected: false, seen_at: T0, rssi: -60 })
    devices.readingSeen('AA:BB:CC:DD:EE:01', 'ble', { heart_rate: 77, measured_at: T0, battery_percent: 90 }, T0 + SEC)
    t.same(devices.unpaired().map(d => d.device_id), ['AA:BB:CC:DD:EE:02'], 'seen but not paired')
    t.match(devices.stateOf('AA:BB:CC:DD:EE:01'), { seen_at: T0 + SEC, battery_percent: 90, last_reading: { heart_rate: 77, measured_at: T0 } })
  })

  t.test('clients: create, lookup, secret check', async t => {
    const { stores } = await open(t)
    const clients = stores.clients
    const app = await clients.create({ name: 'App', redirect_uris: ['https://app.example/cb'], owner: P }, T0)
    t.type(app.client_secret, 'string')
    t.match(app.client, { name: 'App', redirect_uris: ['https://app.example/cb'], owner: P, created_at: T0 })
    t.notOk(app.client.secret_hash?.includes(app.client_secret ?? '-'), 'the secret is stored only hashed')
    const pub = await clients.create({ name: 'Public', redirect_uris: ['http://127.0.0.1/cb'], public: true }, T0 + 1)
    t.equal(pub.client_secret, null)
    t.same([pub.client.secret_hash, pub.client.owner], [null, null])
    t.strictSame(await clients.get(app.client.client_id), app.client)
    t.equal(await clients.get('no-such-client'), undefined)
    t.equal(await clients.get(''), undefined)
    t.equal((await clients.authenticate(app.client.client_id, app.client_secret ?? ''))?.client_id, app.client.client_id, 'right secret')
    t.equal(await clients.authenticate(app.client.client_id, 'wrong'), undefined, 'wrong secret')
    t.equal(await clients.authenticate(pub.client.client_id, ''), undefined, 'a public client has no secret to check')
    await t.rejects(clients.create({ name: 'Bad', redirect_uris: ['javascript:alert(1)'] }), InvalidRedirectUriError)
    t.same((await clients.list()).map(c => c.name), ['App', 'Public'], 'oldest first; the rejected one was not stored')
  })

  t.test('tokens: issue, lookup, expiry, rotation, replay, revocation', async t => {
    const { stores } = await open(t)
    const tokens = stores.tokens
    const revoked: string[][] = []
    tokens.onRevoked(digests => { revoked.push([...digests]) })
    const accessOnly = { client_id: 'c1', profile_id: P, scopes: ['data:heart_rate:read'], flow: 'authorization_code' as const, expires_in: 3600 }
    const req = { ...accessOnly, refresh_expires_in: 86_400 }
    const issued = await tokens.issue(req, T0)
    t.match(issued, { access_token: /^[0-9a-f]{8}-([0-9a-f]{4}-){3}[0-9a-f]{12}$/i, refresh_token: /^[0-9a-f-]{36}$/i, expires_in: 3600, scope: 'data:heart_rate:read' })
    const found = await tokens.lookup(issued.access_token, T0 + SEC)
    t.match(found, { ok: true, token: { client_id: 'c1', profile_id: P, scopes: ['data:heart_rate:read'], flow: 'authorization_code', family: issued.family, created_at: T0, expires_at: T0 + 3600 * SEC } })
    const digest = found.ok ? found.digest : ''
    t.not(digest, issued.access_token, 'the store keys tokens by digest')
    t.same(await tokens.lookup(issued.access_token, T0 + 3600 * SEC), { ok: false, reason: 'expired' }, 'expired at expires_at')
    t.same(await tokens.lookup('00000000-0000-0000-0000-000000000000', T0), { ok: false, reason: 'not_found' })
    t.same(await tokens.lookup('', T0), { ok: false, reason: 'not_found' })
    t.equal(await tokens.isLive(digest, T0), true)
    t.equal(await tokens.isLive(digest, T0 + 3600 * SEC), false)
    t.same(await tokens.owner(issued.access_token), { kind: 'access', client_id: 'c1' })
    t.same(await tokens.owner(issued.refresh_token ?? ''), { kind: 'refresh', client_id: 'c1' })
    t.equal(await tokens.owner('unknown'), undefined)
    t.same(await tokens.grantedClients(P), ['c1'])

    t.same(await tokens.rotate(issued.refresh_token ?? '', 'c2', 3600, 86_400, T0 + SEC), { ok: false, reason: 'wrong_client' })
    const rotated = await tokens.rotate(issued.refresh_token ?? '', 'c1', 3600, 86_400, T0 + SEC)
    t.ok(rotated.ok, 'rotation')
    const next = rotated.ok ? rotated.issued : undefined
    t.equal(next?.family, issued.family, 'the new pair is in the same family')
    t.same(await tokens.lookup(issued.access_token, T0 + SEC), { ok: false, reason: 'not_found' }, 'the old access token stopped working')
    t.same(revoked, [[digest]], 'listeners heard the old access token end')
    t.equal((await tokens.lookup(next?.access_token ?? '', T0 + SEC)).ok, true)
    t.same(await tokens.rotate(issued.refresh_token ?? '', 'c1', 3600, 86_400, T0 + 2 * SEC), { ok: false, reason: 'replayed' }, 'a rotated refresh token is a replay')
    t.same(await tokens.lookup(next?.access_token ?? '', T0 + 2 * SEC), { ok: false, reason: 'not_found' }, 'a replay revokes the whole family')
    t.same(await tokens.rotate(next?.refresh_token ?? '', 'c1', 3600, 86_400, T0 + 2 * SEC), { ok: false, reason: 'not_found' })
    t.same(await tokens.grantedClients(P), [], 'no live grant left')

    const a = await tokens.issue(accessOnly, T0)
    t.equal(a.refresh_token, undefined, 'no refresh token unless asked')
    t.equal(await tokens.revoke(a.access_token), true)
    t.same(await tokens.lookup(a.access_token, T0), { ok: false, reason: 'not_found' }, 'revoked')
    t.equal(await tokens.revoke(a.access_token), false, 'a second revocation finds nothing')
    const b = await tokens.issue(req, T0)
    t.equal(await tokens.revoke(b.refresh_token ?? ''), true)
    t.same(await tokens.lookup(b.access_token, T0), { ok: false, reason: 'not_found' }, 'revoking a refresh token takes its family')

    const c = await tokens.issue(req, T0)
    const d = await tokens.issue({ ...req, client_id: 'c3' }, T0)
    t.same((await tokens.grantedClients(P)).sort(), ['c1', 'c3'])
    t.equal(await tokens.revokeGrant(P, 'c1') > 0, true)
    t.same(await tokens.lookup(c.access_token, T0), { ok: false, reason: 'not_found' }, 'disconnecting an app ends its tokens')
    t.equal((await tokens.lookup(d.access_token, T0)).ok, true, 'other apps keep working')
    t.same(await tokens.grantedClients(P), ['c3'])
    t.equal(await tokens.revokeFamily(d.family) > 0, true)
    t.same(await tokens.lookup(d.access_token, T0), { ok: false, reason: 'not_found' })

    // prepare adds a pair's writes to the caller's batch: nothing works until the bundle writes it.
    const ops: WriteOp[] = []
    const e = tokens.prepare({ ...req, client_id: 'c4', flow: 'device_code' }, ops, T0)
    t.same(await tokens.lookup(e.access_token, T0), { ok: false, reason: 'not_found' }, 'not written yet')
    await stores.batch(ops, { sync: true })
    t.match(await tokens.lookup(e.access_token, T0), { ok: true, token: { client_id: 'c4', flow: 'device_code' } }, 'written by the bundle\'s batch')
  })

  t.test('close and reopen keep the data (durability)', async t => {
    const handle = await open(t)
    let stores = handle.stores
    await write(stores, [r(P, T0, 70), r(P, T0 + SEC, 71), r(P, T0 + 2 * SEC, 72, { source: 'ble', rr_intervals_ms: [800] })])
    const user = await stores.users.create({ username: 'dora', password: 'pw' }, T0)
    await stores.users.update(user.profile_id, u => ({ ...u, ingestion_paused: { since: T0, until: null } }))
    const device = await stores.devices.add({ device_id: 'dev-9', profile_id: user.profile_id, kind: 'mqtt' }, T0)
    const client = await stores.clients.create({ name: 'Kept', redirect_uris: ['https://kept.example/cb'] }, T0)
    const token = await stores.tokens.issue({ client_id: client.client.client_id, profile_id: user.profile_id, scopes: ['data:heart_rate:read'], flow: 'manual', expires_in: 3600 }, T0)
    const minutesBefore = await all(stores.readings.rollups(P, 0, T0 + DAY))

    stores = await handle.reopen()
    t.strictSame(await all(stores.readings.range(P, 0, T0 + DAY)), [
      { measured_at: T0, heart_rate: 70, source: 'sim' },
      { measured_at: T0 + SEC, heart_rate: 71, source: 'sim' },
      { measured_at: T0 + 2 * SEC, heart_rate: 72, source: 'ble', rr_intervals_ms: [800] }
    ], 'readings')
    t.equal((await stores.readings.latest(P))?.measured_at, T0 + 2 * SEC, 'latest')
    t.same(await all(stores.readings.rollups(P, 0, T0 + DAY)), minutesBefore, 'minute rollups')
    t.same((await all(stores.readings.hourRollups(P, 0, T0 + DAY))).map(([h, x]) => [h, x.c, x.s]), [[T0, 3, 213]], 'hour rollups')
    t.strictSame(await stores.users.byUsername('dora'), { ...user, ingestion_paused: { since: T0, until: null } }, 'users')
    t.equal(stores.users.ingestionPaused(user.profile_id, T0 + DAY), true, 'member switches are loaded on open')
    t.equal(stores.devices.ownerOf('dev-9', 'mqtt'), user.profile_id, 'pairings are loaded on open')
    t.equal((await stores.devices.verifyMqtt('dev-9', device.mqtt_password ?? ''))?.device_id, 'dev-9', 'device credentials')
    t.strictSame(await stores.clients.get(client.client.client_id), client.client, 'clients')
    t.match(await stores.tokens.lookup(token.access_token, T0 + SEC), { ok: true, token: { client_id: client.client.client_id, profile_id: user.profile_id, flow: 'manual' } }, 'tokens')
    // Writing goes on where it stopped: a duplicate of a stored reading is still one.
    const plan = await write(stores, [r(P, T0 + SEC, 99), r(P, T0 + 3 * SEC, 73)])
    t.same([plan.stored.map(x => x.measured_at - T0), plan.duplicates.map(x => x.measured_at - T0)], [[3000], [1000]])
  })
}
