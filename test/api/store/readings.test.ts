// The readings store's schema-2 pieces against a real LevelDB store: hour
// rollups built by the migration from stored minute rollups, hour rollups
// pruned with their minutes, and Store.batch (abstract-level's public batch
// with a sublevel on each op) writing the prefixed keys and encoded bytes.
import t from 'tap'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { MIGRATIONS, SCHEMA_VERSION, Store } from '../../../api/store/db.ts'
import { HOUR_SUBLEVEL, Readings } from '../../../api/store/readings.ts'
import { Hub } from '../../../api/hub.ts'
import { Pipeline } from '../../../api/pipeline/ingest.ts'
import { sums } from '../../../api/stats.ts'
import type { Rollup } from '../../../api/store/rollups.ts'
import type { ReadingCaches } from '../../../api/store/readings-cache.ts'

const HOUR = 3_600_000
const DAY = 24 * HOUR
const NOW = Date.UTC(2026, 2, 10, 15, 20, 0)

async function tempDir (t: { teardown (fn: () => unknown): void }): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'hr-readings-'))
  t.teardown(async () => { await rm(dir, { recursive: true, force: true }) })
  return dir
}

function pipelineOn (store: Store, readings: Readings, clock = { now: NOW }): Pipeline {
  return new Pipeline({ readingLog: store.readingLog, readings, hub: new Hub(), users: { get: async () => ({}) }, retention: { rawDays: 35, rollupDays: 400 }, now: () => clock.now, pruneIntervalMs: 0 })
}

async function hourRows (readings: Readings, profile: string): Promise<Array<[number, Rollup]>> {
  const out: Array<[number, Rollup]> = []
  for await (const row of readings.hourRollups(profile, 0, NOW + DAY)) out.push(row)
  return out
}

t.test('migration to schema 2 builds the hour rollups from the minute rollups', async t => {
  t.equal(SCHEMA_VERSION, 2)
  t.same(MIGRATIONS.map(m => m.to), [2])
  const dir = await tempDir(t)
  let store = await Store.open(dir)
  let readings = new Readings(store, { gapMs: 5000 })
  const pipeline = pipelineOn(store, readings)
  // Two profiles, readings every 2 s from 12:59 (credited across 13:00), a 12 s gap at 13:01, two hours later
  // five more; and one late reading.
  const start = Date.UTC(2026, 2, 10, 12, 59, 0)
  for (const [profile, bpm] of [['alice', 100], ['bob', 70]] as const) {
    const jobs = []
    for (let i = 0; i < 75; i++) {
      const at = start + i * 2000 + (i >= 60 ? 10_000 : 0) + (i >= 70 ? 2 * HOUR : 0)
      jobs.push(pipeline.submit({ profile_id: profile, measured_at: at, heart_rate: bpm + (i % 5), source: 'sim' }))
    }
    await Promise.all(jobs)
  }
  await pipeline.submit({ profile_id: 'alice', measured_at: start + 1000, heart_rate: 150, source: 'sim' })
  const before = { alice: await hourRows(readings, 'alice'), bob: await hourRows(readings, 'bob') }
  t.same(before.alice.map(([h, r]) => [h, r.c]), [[Date.UTC(2026, 2, 10, 12), 31], [Date.UTC(2026, 2, 10, 13), 40], [Date.UTC(2026, 2, 10, 15), 5]], 'alice: hours 12, 13 and 15')
  t.same(before.bob.map(([h, r]) => [h, r.c]), [[Date.UTC(2026, 2, 10, 12), 30], [Date.UTC(2026, 2, 10, 13), 40], [Date.UTC(2026, 2, 10, 15), 5]])
  const statsBefore = await sums(readings, 'alice', start - HOUR, NOW)
  await pipeline.stop()

  // Turn the store back into schema 1: no hour rollups.
  const hours = store.sub(HOUR_SUBLEVEL)
  const keys: string[] = []
  for await (const k of hours.keys()) keys.push(k)
  t.equal(keys.length, 6)
  await store.batch([
    ...keys.map(key => ({ type: 'del' as const, sublevel: hours, key })),
    { type: 'put', sublevel: store.sub('meta'), key: 'schema_version', value: 1 }
  ], { sync: true })
  t.same(await hourRows(readings, 'alice'), [], 'no hour rollups in schema 1')
  await store.close()

  store = await Store.open(dir)
  t.teardown(async () => { await store.close() })
  t.equal(await store.sub<number>('meta').get('schema_version'), 2)
  readings = new Readings(store, { gapMs: 5000 })
  t.same(await hourRows(readings, 'alice'), before.alice, 'alice: the same hour rollups as written by the pipeline')
  t.same(await hourRows(readings, 'bob'), before.bob)
  t.same(await sums(readings, 'alice', start - HOUR, NOW), statsBefore, 'the same statistics')
  t.equal(statsBefore.count, 76)
})

t.test('a schema 2 store opens without running the migration again', async t => {
  const dir = await tempDir(t)
  const store = await Store.open(dir)
  const readings = new Readings(store, { gapMs: 5000 })
  const pipeline = pipelineOn(store, readings)
  await pipeline.submit({ profile_id: 'alice', measured_at: NOW - 1000, heart_rate: 80, source: 'sim' })
  await pipeline.stop()
  // An hour rollup the migration would overwrite (there is no minute rollup behind it).
  await store.batch([{ type: 'put', sublevel: readings.hours, key: `alice!${String(NOW - DAY - 20 * 60_000).padStart(13, '0')}`, value: { c: 9, s: 9, mn: 1, mx: 1, st: 0, sh: 0, f: NOW - DAY, fc: 0, fh: 1 } }], { sync: true })
  await store.close()
  const again = await Store.open(dir)
  t.teardown(async () => { await again.close() })
  t.same((await hourRows(new Readings(again, { gapMs: 5000 }), 'alice')).map(([h, r]) => [h, r.c]), [[NOW - DAY - 20 * 60_000, 9], [NOW - 20 * 60_000, 1]])
})

t.test('pruning deletes an hour rollup with the last of its minutes, and does not count it', async t => {
  const dir = await tempDir(t)
  const store = await Store.open(dir)
  const readings = new Readings(store, { gapMs: 5000 })
  const clock = { now: NOW }
  const pipeline = pipelineOn(store, readings, clock)
  t.teardown(async () => { await pipeline.stop(); await store.close() })
  const h = Math.floor((NOW - 20 * DAY) / HOUR) * HOUR
  // Minutes 10 and 50 of one hour, minute 5 of the next.
  for (const at of [h + 10 * 60_000, h + 50 * 60_000, h + HOUR + 5 * 60_000]) await pipeline.submit({ profile_id: 'alice', measured_at: at, heart_rate: 90, source: 'sim' })
  t.equal((await hourRows(readings, 'alice')).length, 2)
  // The rollup cut falls at minute 30 of the first hour: one minute goes, its hour stays.
  clock.now = h + 30 * 60_000 + 400 * DAY
  t.equal(await pipeline.pruneNow(), 4, '3 raw readings and 1 minute rollup')
  t.same((await hourRows(readings, 'alice')).map(([x]) => x), [h, h + HOUR], 'the hour with a minute left is kept')
  clock.now = h + HOUR + 400 * DAY
  t.equal(await pipeline.pruneNow(), 1, 'the other minute of that hour')
  t.same((await hourRows(readings, 'alice')).map(([x]) => x), [h + HOUR], 'its hour went with it')
  // A later reading in the kept hour still adds to its stored rollup.
  clock.now = h + HOUR + 10 * 60_000
  t.same(await pipeline.submit({ profile_id: 'alice', measured_at: h + HOUR + 6 * 60_000, heart_rate: 100, source: 'sim' }), { status: 'stored', profile_id: 'alice' })
  t.same((await hourRows(readings, 'alice')).map(([x, r]) => [x, r.c, r.s]), [[h + HOUR, 2, 190]])
})

t.test('Store.batch writes through abstract-level\'s public batch: sublevel prefix on the key, the sublevel\'s encoding on the value', async t => {
  const dir = await tempDir(t)
  const store = await Store.open(dir)
  t.teardown(async () => { await store.close() })
  const json = store.sub<{ a: number }>('t_json')
  const view = store.sub<Uint8Array>('t_view', 'view')
  await store.batch([
    { type: 'put', sublevel: json, key: 'k1', value: { a: 1 } },
    { type: 'put', sublevel: view, key: 'k2', value: new Uint8Array([1, 2, 3]) },
    { type: 'put', sublevel: json, key: 'gone', value: { a: 0 } }
  ], { sync: true })
  await store.batch([{ type: 'del', sublevel: json, key: 'gone' }])
  t.same(await json.get('k1'), { a: 1 })
  t.same([...(await view.get('k2')) ?? []], [1, 2, 3])
  t.equal(await json.get('gone'), undefined)
  const rawKeys: string[] = []
  for await (const k of store.db.keys({ gte: '!t_', lt: '!t~' })) rawKeys.push(k)
  t.same(rawKeys, ['!t_json!k1', '!t_view!k2'], 'keys carry the sublevel prefix')
  t.equal(await store.db.get('!t_json!k1', { valueEncoding: 'utf8' }), '{"a":1}')
  // A put without a value is refused as abstract-level refuses it, and writes nothing.
  await t.rejects(store.batch([{ type: 'put', sublevel: json, key: 'k3', value: { a: 3 } }, { type: 'put', sublevel: json, key: 'k4', value: undefined }]), { code: 'LEVEL_INVALID_VALUE' })
  t.equal(await json.get('k3'), undefined, 'the batch is atomic')
})

t.test('a written reading updates the cached latest record and minute rollup in place, with the new values', async t => {
  const dir = await tempDir(t)
  const store = await Store.open(dir)
  const readings = new Readings(store, { gapMs: 5000 })
  const pipeline = pipelineOn(store, readings)
  t.teardown(async () => { await pipeline.stop(); await store.close() })
  const caches = (readings as unknown as { caches: ReadingCaches }).caches
  const m = Math.floor(NOW / 60_000) * 60_000 - 5 * 60_000
  await pipeline.submit({ profile_id: 'alice', measured_at: m + 1000, heart_rate: 80, source: 'mqtt', device_id: 'strap-1' })
  const latest = readings.cachedLatest('alice')
  const minute = caches.minute.get('alice')
  const hour = caches.hour.get('alice')
  if (latest === null || latest === undefined || minute === undefined || hour === undefined) throw new Error('nothing cached after a written reading')
  const minuteRollup = minute.rollup
  await pipeline.submit({ profile_id: 'alice', measured_at: m + 2000, heart_rate: 100, source: 'mqtt', device_id: 'strap-2' })
  // The same objects (old in V8's heap: no young copy survives to the next reading), holding the second reading.
  t.equal(readings.cachedLatest('alice'), latest, 'the same latest record')
  t.same(latest, { measured_at: m + 2000, heart_rate: 100, source: 'mqtt', device_id: 'strap-2' })
  t.equal(caches.minute.get('alice'), minute, 'the same cache entry')
  t.equal(minute.rollup, minuteRollup, 'the same rollup object')
  t.same([minuteRollup.c, minuteRollup.s, minuteRollup.mn, minuteRollup.mx, minuteRollup.st, minuteRollup.f], [2, 180, 80, 100, 1000, m + 1000])
  t.same([hour.rollup.c, hour.rollup.s], [2, 180])
  // What the caches hold is what the store holds.
  t.same(await readings.minutes.get(minute.key), { ...minuteRollup })
  // A record of another shape (no device) replaces the cached one.
  await pipeline.submit({ profile_id: 'alice', measured_at: m + 3000, heart_rate: 90, source: 'sim' })
  t.not(readings.cachedLatest('alice'), latest)
  t.same(readings.cachedLatest('alice'), { measured_at: m + 3000, heart_rate: 90, source: 'sim' })
  t.same(latest, { measured_at: m + 2000, heart_rate: 100, source: 'mqtt', device_id: 'strap-2' }, 'the replaced record is left as it was')
  // A new minute starts a new entry; the rollups of the old one stay in the store.
  await pipeline.submit({ profile_id: 'alice', measured_at: m + 61_000, heart_rate: 70, source: 'sim' })
  t.not(caches.minute.get('alice'), minute)
  t.equal(caches.minute.get('alice')?.rollup.c, 1)
  t.same([hour.rollup.c, hour.rollup.s], [4, 340], 'the hour entry took all four readings in place')
  const s = await sums(readings, 'alice', m, m + 120_000)
  t.equal(s.count, 4)
})
