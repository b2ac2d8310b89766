// The ingest pipeline against a real LevelDB store: steps, drop reasons,
// group commit, atomic failure, order, stop, owner resolution, hub fan-out,
// retention. Where a test holds or fails a write, it wraps the store's reading
// log (the pipeline's seam); the writes themselves go to LevelDB.
import t from 'tap'
import { Writable } from 'node:stream'
import pino from 'pino'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Store } from '../../../api/store/db.ts'
import { Readings, type Plan } from '../../../api/store/readings.ts'
import { Hub } from '../../../api/hub.ts'
import { Pipeline, PipelineStoppedError, type PipelineOptions } from '../../../api/pipeline/ingest.ts'
import { decodeRaw, encodeRaw } from '../../../api/pipeline/codec.ts'
import { sums } from '../../../api/stats.ts'
import type { StoredReading } from '../../../api/pipeline/reading.ts'
import type { ReadingLog } from '../../../api/store/reading-log.ts'

const DAY = 86_400_000
const NOW = Date.UTC(2026, 5, 1, 10, 0, 0)

/** A pipeline on a fresh store; `wrap` may put a test's reading log around the store's. */
async function setup (t: { teardown (fn: () => unknown): void }, extra: Partial<PipelineOptions> = {}, clock = { now: NOW }, wrap = (log: ReadingLog): ReadingLog => log) {
  const dir = await mkdtemp(join(tmpdir(), 'hr-ingest-'))
  const store = await Store.open(dir)
  const readings = new Readings(store, { gapMs: 5000 })
  const hub = new Hub()
  const known = new Set(['alice', 'bob'])
  const pipeline = new Pipeline({
    readingLog: wrap(store.readingLog), readings, hub,
    users: { get: async (id: string) => known.has(id) ? { profile_id: id } : undefined },
    retention: { rawDays: 35, rollupDays: 400 },
    now: () => clock.now,
    pruneIntervalMs: 0,
    ...extra
  })
  t.teardown(async () => { await pipeline.stop(); await store.close(); await rm(dir, { recursive: true, force: true }) })
  return { store, readings, hub, pipeline, clock }
}

async function all (readings: Readings, profile: string): Promise<Array<[number, number]>> {
  const out: Array<[number, number]> = []
  for await (const r of readings.range(profile, 0, 9_999_999_999_999)) out.push([r.measured_at, r.heart_rate])
  return out
}

t.test('clock skew: up to max_clock_skew_ms ahead is stored at receive time and counted by source; further ahead is refused', async t => {
  const { pipeline, readings, hub } = await setup(t)
  const published: StoredReading[] = []
  hub.subscribeAll(r => { published.push(r) })
  t.same(await pipeline.submit({ profile_id: 'alice', measured_at: NOW + 30_000, heart_rate: 70, source: 'mqtt' }), { status: 'stored', profile_id: 'alice' }, 'default allowance: 30 s')
  t.same(await pipeline.submit({ profile_id: 'bob', measured_at: NOW + 10_000.7, heart_rate: 71, source: 'http' }), { status: 'stored', profile_id: 'bob' })
  t.same(await pipeline.submit({ profile_id: 'alice', measured_at: NOW + 30_001, heart_rate: 72, source: 'mqtt' }), { status: 'dropped', reason: 'out_of_range' })
  t.same(await pipeline.submit({ profile_id: 'alice', measured_at: NOW - 1000, heart_rate: 73, source: 'mqtt' }), { status: 'stored', profile_id: 'alice' }, 'not ahead: kept as sent')
  t.same(await all(readings, 'alice'), [[NOW - 1000, 73], [NOW, 70]], 'stored at the receive time')
  t.same(await all(readings, 'bob'), [[NOW, 71]])
  t.same(published.map(r => r.measured_at), [NOW, NOW, NOW - 1000], 'published with the corrected time')
  t.same(pipeline.counters.clock_skew_corrected, { mqtt: 1, http: 1 })
  t.equal(pipeline.counters.dropped.out_of_range, 1)
})

t.test('clock skew: readings corrected within one millisecond are all stored, in order, never as duplicates', async t => {
  const { pipeline, readings } = await setup(t)
  t.same(await pipeline.submit({ profile_id: 'alice', measured_at: NOW, heart_rate: 70, source: 'mqtt' }), { status: 'stored', profile_id: 'alice' }, 'at the clock')
  const ahead = await Promise.all([1, 2, 3].map(async i => await pipeline.submit({ profile_id: 'alice', measured_at: NOW + i * 1000, heart_rate: 70 + i, source: 'mqtt' })))
  t.same(ahead, [1, 2, 3].map(() => ({ status: 'stored', profile_id: 'alice' })))
  t.same(await all(readings, 'alice'), [[NOW, 70], [NOW + 1, 71], [NOW + 2, 72], [NOW + 3, 73]])
  t.equal(pipeline.counters.dropped.duplicate, 0)
})

t.test('clock skew: maxClockSkewMs 0 refuses any reading ahead of the clock', async t => {
  const { pipeline } = await setup(t, { maxClockSkewMs: 0 })
  t.same(await pipeline.submit({ profile_id: 'alice', measured_at: NOW + 1, heart_rate: 70, source: 'mqtt' }), { status: 'dropped', reason: 'out_of_range' })
  t.same(await pipeline.submit({ profile_id: 'alice', measured_at: NOW, heart_rate: 70, source: 'mqtt' }), { status: 'stored', profile_id: 'alice' })
  t.same(pipeline.counters.clock_skew_corrected, {})
})

t.test('paused: a paused member\'s reading is acknowledged as paused, not stored nor published; other drops keep their reason', async t => {
  const clock = { now: NOW }
  const known = new Set(['alice', 'bob'])
  const pausedUntil = NOW + 60_000
  const { pipeline, readings, hub } = await setup(t, {
    users: { get: async (id: string) => known.has(id) ? { profile_id: id } : undefined, ingestionPaused: (id, now) => id === 'alice' && now < pausedUntil }
  }, clock)
  const published: StoredReading[] = []
  hub.subscribeAll(r => { published.push(r) })
  t.same(await pipeline.submit({ profile_id: 'alice', measured_at: NOW, heart_rate: 70, source: 'mqtt' }), { status: 'dropped', reason: 'paused' })
  t.same(await pipeline.submit({ profile_id: 'alice', measured_at: NOW, heart_rate: 0, source: 'mqtt' }), { status: 'dropped', reason: 'non_positive' })
  t.same(await pipeline.submit({ profile_id: 'alice', measured_at: NOW + 31_000, heart_rate: 70, source: 'mqtt' }), { status: 'dropped', reason: 'out_of_range' }, 'still refused')
  t.same(await pipeline.submit({ profile_id: 'bob', measured_at: NOW, heart_rate: 80, source: 'mqtt' }), { status: 'stored', profile_id: 'bob' })
  clock.now = pausedUntil
  t.same(await pipeline.submit({ profile_id: 'alice', measured_at: NOW + 60_000, heart_rate: 71, source: 'mqtt' }), { status: 'stored', profile_id: 'alice' }, 'after expiry')
  t.same(await all(readings, 'alice'), [[NOW + 60_000, 71]])
  t.same(published.map(r => [r.profile_id, r.heart_rate]), [['bob', 80], ['alice', 71]])
  t.same(pipeline.counters.dropped.paused, 1)
})

t.test('drop reasons and counters', async t => {
  const { pipeline, readings } = await setup(t)
  const cases: Array<[string, any, string]> = [
    ['zero', { profile_id: 'alice', measured_at: NOW, heart_rate: 0, source: 'ble' }, 'non_positive'],
    ['negative', { profile_id: 'alice', measured_at: NOW, heart_rate: -1, source: 'ble' }, 'non_positive'],
    ['device only, no pairing', { device_id: 'AA:BB', measured_at: NOW, heart_rate: 70, source: 'ble' }, 'unpaired'],
    ['unknown profile', { profile_id: 'mallory', measured_at: NOW, heart_rate: 70, source: 'http' }, 'unknown_profile'],
    ['no owner at all', { measured_at: NOW, heart_rate: 70, source: 'http' }, 'invalid'],
    ['NaN time', { profile_id: 'alice', measured_at: Number.NaN, heart_rate: 70, source: 'http' }, 'invalid'],
    ['fractional bpm', { profile_id: 'alice', measured_at: NOW, heart_rate: 70.5, source: 'http' }, 'invalid'],
    ['bpm as string', { profile_id: 'alice', measured_at: NOW, heart_rate: '70', source: 'http' }, 'invalid'],
    ['bad RR', { profile_id: 'alice', measured_at: NOW, heart_rate: 70, source: 'ble', rr_intervals_ms: [800, -1] }, 'invalid'],
    ['too old', { profile_id: 'alice', measured_at: NOW - 36 * DAY, heart_rate: 70, source: 'http' }, 'out_of_range'],
    ['far future', { profile_id: 'alice', measured_at: NOW + 11 * 60_000, heart_rate: 70, source: 'http' }, 'out_of_range']
  ]
  for (const [name, reading, reason] of cases) {
    t.same(await pipeline.submit(reading), { status: 'dropped', reason }, name)
  }
  t.same(await pipeline.submit({ profile_id: 'alice', measured_at: NOW, heart_rate: 70, source: 'ble', rr_intervals_ms: [850, 870], energy_expended_kj: 12, sensor_contact: true }), { status: 'stored', profile_id: 'alice' })
  t.same(await pipeline.submit({ profile_id: 'alice', measured_at: NOW, heart_rate: 71, source: 'ble' }), { status: 'dropped', reason: 'duplicate' })
  t.same(pipeline.counters, {
    received: 13, stored: 1, batches: 2, failed_groups: 0, clock_skew_corrected: {},
    dropped: { non_positive: 2, unpaired: 1, duplicate: 1, invalid: 5, unknown_profile: 1, out_of_range: 2, paused: 0, no_consent: 0 }
  })
  const stored = []
  for await (const r of readings.range('alice', 0, NOW)) stored.push(r)
  t.same(stored, [{ measured_at: NOW, heart_rate: 70, source: 'ble', sensor_contact: true, energy_expended_kj: 12, rr_intervals_ms: [850, 870] }])
})

t.test('the reading contract: up to 64 RR intervals and 300 bpm are stored whole, one more is invalid', async t => {
  const { pipeline, readings } = await setup(t)
  const rr40 = Array.from({ length: 40 }, (_, i) => 700 + i)
  const rr64 = Array.from({ length: 64 }, (_, i) => 1 + i * 1000)
  t.same(await pipeline.submit({ profile_id: 'alice', measured_at: NOW - 2000, heart_rate: 72, source: 'mqtt', rr_intervals_ms: rr40 }), { status: 'stored', profile_id: 'alice' })
  t.same(await pipeline.submit({ profile_id: 'alice', measured_at: NOW - 1000, heart_rate: 300, source: 'mqtt', rr_intervals_ms: rr64 }), { status: 'stored', profile_id: 'alice' })
  const stored = []
  for await (const r of readings.range('alice', 0, NOW)) stored.push([r.heart_rate, r.rr_intervals_ms])
  t.same(stored, [[72, rr40], [300, rr64]])
  const refused: Array<[string, any]> = [
    ['65 RR', { rr_intervals_ms: [...rr64, 800] }],
    ['RR of 0 ms', { rr_intervals_ms: [0] }],
    ['fractional RR', { rr_intervals_ms: [800.5] }],
    ['301 bpm', { heart_rate: 301 }],
    ['energy above 65535', { energy_expended_kj: 65536 }],
    ['battery above 100', { battery_percent: 101 }],
    ['measured_at before 2000', { measured_at: 946_684_799_999 }]
  ]
  for (const [name, extra] of refused) {
    t.same(await pipeline.submit({ profile_id: 'alice', measured_at: NOW, heart_rate: 70, source: 'mqtt', ...extra }), { status: 'dropped', reason: 'invalid' }, name)
  }
})

t.test('a group of readings is one public abstract-level batch with sync', async t => {
  const { pipeline, store } = await setup(t)
  const calls: unknown[] = []
  const batch = store.db.batch.bind(store.db) as (...args: unknown[]) => Promise<void>
  ;(store.db as unknown as { batch: (...args: unknown[]) => Promise<void> }).batch = async (...args: unknown[]) => { calls.push(args[1]); await batch(...args) }
  const results = await Promise.all([0, 1, 2].map(async i => await pipeline.submit({ profile_id: 'alice', measured_at: NOW - i * 1000, heart_rate: 70 + i, source: 'sim' })))
  t.same(results.map(r => r.status), ['stored', 'stored', 'stored'])
  t.same(calls, [{ sync: true }], 'one batch, one sync')
})

t.test('device readings are owned through the injected pairing', async t => {
  const { pipeline, hub } = await setup(t, { resolveOwner: async d => d === 'AA:BB:CC:DD:EE:FF' ? 'bob' : undefined })
  const seen: StoredReading[] = []
  hub.subscribeAll(r => { seen.push(r) })
  t.same(await pipeline.submit({ device_id: 'AA:BB:CC:DD:EE:FF', measured_at: NOW, heart_rate: 80, source: 'ble' }), { status: 'stored', profile_id: 'bob' })
  t.same(await pipeline.submit({ device_id: '11:22:33:44:55:66', measured_at: NOW, heart_rate: 80, source: 'ble' }), { status: 'dropped', reason: 'unpaired' })
  pipeline.setResolveOwner(async () => 'alice')
  t.same(await pipeline.submit({ device_id: '11:22:33:44:55:66', measured_at: NOW, heart_rate: 81, source: 'ble' }), { status: 'stored', profile_id: 'alice' })
  t.same(seen, [
    { profile_id: 'bob', measured_at: NOW, heart_rate: 80, source: 'ble', device_id: 'AA:BB:CC:DD:EE:FF' },
    { profile_id: 'alice', measured_at: NOW, heart_rate: 81, source: 'ble', device_id: '11:22:33:44:55:66' }
  ])
})

t.test('concurrent readings are written as one group; duplicates inside a group count once', async t => {
  const { pipeline, readings, hub } = await setup(t)
  const published: number[] = []
  hub.subscribeProfile('alice', r => { published.push(r.measured_at) })
  const results = await Promise.all(Array.from({ length: 200 }, async (_, i) =>
    await pipeline.submit({ profile_id: i % 2 === 0 ? 'alice' : 'bob', measured_at: NOW - 200_000 + Math.floor(i / 4) * 1000, heart_rate: 60 + (i % 7), source: 'sim' })))
  t.equal(results.filter(r => r.status === 'stored').length, 100)
  t.equal(results.filter(r => r.status === 'dropped' && r.reason === 'duplicate').length, 100)
  t.ok(pipeline.counters.batches <= 3, `200 concurrent readings in ${pipeline.counters.batches} batch(es)`)
  t.equal((await all(readings, 'alice')).length, 50)
  t.equal(published.length, 50, 'each stored reading published once')
  const s = await sums(readings, 'alice', NOW - DAY, NOW)
  t.equal(s.count, 50)
  t.equal(s.streamedMs, 49_000, '1 s apart: 49 credited seconds')
})

t.test('a failed write stores nothing and rejects every reading of the group', async t => {
  let fail = false
  const { readings, pipeline } = await setup(t, {}, undefined, log => ({
    append: async ops => { if (fail) { fail = false; throw new Error('disk full') } await log.append(ops) }
  }))
  await pipeline.submit({ profile_id: 'alice', measured_at: NOW - 10_000, heart_rate: 60, source: 'sim' })
  fail = true
  const results = await Promise.allSettled([
    pipeline.submit({ profile_id: 'alice', measured_at: NOW - 9000, heart_rate: 61, source: 'sim' }),
    pipeline.submit({ profile_id: 'alice', measured_at: NOW - 12_000, heart_rate: 62, source: 'sim' })
  ])
  t.same(results.map(r => r.status === 'rejected' ? (r.reason as Error).message : r.status), ['disk full', 'disk full'])
  t.equal(pipeline.counters.failed_groups, 1)
  t.equal(pipeline.counters.stored, 1, 'none of the failed group counted as stored')
  t.same(await all(readings, 'alice'), [[NOW - 10_000, 60]], 'nothing of the failed group was stored')
  t.same((await readings.latest('alice'))?.measured_at, NOW - 10_000, 'latest unchanged')
  t.same(await pipeline.submit({ profile_id: 'alice', measured_at: NOW - 9000, heart_rate: 61, source: 'sim' }), { status: 'stored', profile_id: 'alice' })
  const s = await sums(readings, 'alice', NOW - DAY, NOW)
  t.same(s, { count: 2, sum: 121, min: 60, max: 61, streamedMs: 1000, bpmMs: 61_000 }, 'rollups count the retried reading once')
})

/** A reading log around the store's whose appends are counted in `events`, the first one held until `release()`. */
function heldFirstAppend (events: string[]): { wrap: (log: ReadingLog) => ReadingLog, entered: Promise<void>, release: () => void } {
  let release!: () => void
  const gate = new Promise<void>(resolve => { release = resolve })
  let entered!: () => void
  const writing = new Promise<void>(resolve => { entered = resolve })
  let calls = 0
  const wrap = (log: ReadingLog): ReadingLog => ({
    append: async ops => {
      events.push(`append ${++calls}`)
      if (calls === 1) { entered(); await gate }
      await log.append(ops)
    }
  })
  return { wrap, entered: writing, release }
}

t.test('a failed speculative plan is logged (warn, what failed) and the group is planned again after the write in flight', async t => {
  const lines: Array<Record<string, unknown>> = []
  let warned!: () => void
  const warning = new Promise<void>(resolve => { warned = resolve })
  const log = pino({ level: 'debug' }, new Writable({
    write (chunk: Buffer, _enc, cb) {
      const line = JSON.parse(chunk.toString('utf8')) as Record<string, unknown>
      lines.push(line)
      if (line.level === 40) warned()
      cb()
    }
  }))
  const batches: string[] = []
  const held = heldFirstAppend(batches)
  const { readings, pipeline } = await setup(t, { log }, undefined, held.wrap)
  const realPlan = readings.plan.bind(readings)
  readings.plan = (async (group: StoredReading[], base?: Plan) => {
    if (base !== undefined) throw new Error('plan on top broke')
    return await realPlan(group)
  }) as Readings['plan']
  // The first group's write waits until the second reading has been planned (and failed) on top of it.
  const first = pipeline.submit({ profile_id: 'alice', measured_at: NOW - 2000, heart_rate: 61, source: 'sim' })
  await held.entered
  const second = pipeline.submit({ profile_id: 'alice', measured_at: NOW - 1000, heart_rate: 62, source: 'sim' })
  await warning
  held.release()
  t.same(await Promise.all([first, second]), [{ status: 'stored', profile_id: 'alice' }, { status: 'stored', profile_id: 'alice' }])
  t.same(await all(readings, 'alice'), [[NOW - 2000, 61], [NOW - 1000, 62]], 'the fallback plan stored the second reading')
  t.same(batches, ['append 1', 'append 2'], 'two groups')
  const warns = lines.filter(l => l.level === 40)
  t.equal(warns.length, 1)
  t.match(warns[0], {
    msg: 'planning readings on top of the group in flight failed; they are planned again after it is written',
    readings: 1,
    err: { message: 'plan on top broke' }
  })
  t.equal(pipeline.counters.failed_groups, 0)
})

t.test('out-of-order readings into closed minutes update both rollups', async t => {
  const { pipeline, readings } = await setup(t)
  const m = Math.floor((NOW - 3_600_000) / 60_000) * 60_000
  await pipeline.submit({ profile_id: 'alice', measured_at: m - 2000, heart_rate: 100, source: 'sim' })
  await pipeline.submit({ profile_id: 'alice', measured_at: m + 2000, heart_rate: 120, source: 'sim' })
  let s = await sums(readings, 'alice', NOW - DAY, NOW)
  t.equal(s.streamedMs, 4000)
  // Arrives late, between the two: splits the 4 s interval (the later reading's credit drops to 2 s).
  await pipeline.submit({ profile_id: 'alice', measured_at: m, heart_rate: 110, source: 'sim' })
  s = await sums(readings, 'alice', NOW - DAY, NOW)
  t.same(s, { count: 3, sum: 330, min: 100, max: 120, streamedMs: 4000, bpmMs: 110 * 2000 + 120 * 2000 })
  const rollups = []
  for await (const r of readings.rollups('alice', m - 60_000, m + 60_000)) rollups.push([r[0], r[1].c, r[1].st])
  t.same(rollups, [[m - 60_000, 1, 0], [m, 2, 4000]])
})

t.test('retention prunes raw readings and rollups in bounded steps', async t => {
  const clock = { now: NOW }
  const { pipeline, readings } = await setup(t, {}, clock)
  for (let i = 0; i < 30; i++) await pipeline.submit({ profile_id: 'alice', measured_at: NOW - 30 * DAY + i * 61_000, heart_rate: 70, source: 'sim' })
  await pipeline.submit({ profile_id: 'alice', measured_at: NOW, heart_rate: 75, source: 'sim' })
  clock.now = NOW + 6 * DAY // the 30 old readings are now 36 days old
  const deleted = await pipeline.pruneNow(7)
  t.equal(deleted, 30, 'raw readings past 35 days deleted')
  t.same(await all(readings, 'alice'), [[NOW, 75]])
  let rollups = 0
  for await (const _ of readings.rollups('alice', 0, NOW + DAY)) rollups++
  t.equal(rollups, 31, 'rollups are kept for 400 days')
  clock.now = NOW + 401 * DAY
  t.equal(await pipeline.pruneNow(), 32, 'rollups and the last raw reading pruned')
})

t.test('hub: a throwing subscriber does not affect others or the pipeline', async t => {
  const { pipeline, hub } = await setup(t)
  const got: number[] = []
  hub.subscribeAll(() => { throw new Error('boom') })
  const off = hub.subscribeProfile('alice', r => { got.push(r.heart_rate) })
  t.same(await pipeline.submit({ profile_id: 'alice', measured_at: NOW, heart_rate: 90, source: 'sim' }), { status: 'stored', profile_id: 'alice' })
  off()
  await pipeline.submit({ profile_id: 'alice', measured_at: NOW + 1, heart_rate: 91, source: 'sim' })
  t.same(got, [90])
  t.equal(hub.counters.listenerErrors, 2)
  t.equal(hub.profileSubscribers('alice'), 0)
})

t.test('raw value codec', async t => {
  const plain = encodeRaw({ heart_rate: 72, source: 'http' })
  t.same([...plain], [0, 72, 0], 'a plain reading is 3 bytes')
  const full = { heart_rate: 300, source: 'mqtt' as const, sensor_contact: false, energy_expended_kj: 513, rr_intervals_ms: [1000, 65535] }
  const bytes = encodeRaw(full)
  t.same([...bytes], [0x03 | 0x08 | 0x20 | 0x40, 0x2c, 0x01, 0x01, 0x02, 2, 0xe8, 0x03, 0xff, 0xff])
  t.same(decodeRaw(bytes), full)
  t.throws(() => decodeRaw(new Uint8Array([0x40, 1, 0, 3, 1])), { name: 'RawDecodeError' })
  t.throws(() => decodeRaw(new Uint8Array([7, 1, 0])), { name: 'RawDecodeError' })
  t.throws(() => decodeRaw(new Uint8Array([0])), { name: 'RawDecodeError' })
})

t.test('readings that arrive during a write form the next group, written before the first group is acknowledged and published', async t => {
  const events: string[] = []
  const held = heldFirstAppend(events)
  const { hub, pipeline } = await setup(t, {}, undefined, held.wrap)
  hub.subscribeAll(r => { events.push(`publish ${r.heart_rate}`) })
  const first = pipeline.submit({ profile_id: 'alice', measured_at: NOW - 3000, heart_rate: 61, source: 'mqtt' })
  first.then(() => { events.push('ack 61') }, () => {})
  await held.entered
  const more = [2000, 1000].map(async (ago, i) => await pipeline.submit({ profile_id: 'alice', measured_at: NOW - ago, heart_rate: 62 + i, source: 'mqtt' }))
  await new Promise(resolve => setImmediate(resolve))
  t.same(events, ['append 1'], 'the next readings wait while the first group is written')
  held.release()
  t.same(await Promise.all([first, ...more]), [61, 62, 63].map(() => ({ status: 'stored', profile_id: 'alice' })))
  t.same(events.slice(0, 4), ['append 1', 'append 2', 'publish 61', 'ack 61'], 'the durable group is published and acknowledged while the next one is written')
  t.same(events.slice(4), ['publish 62', 'publish 63'], 'then the second group, as one')
  t.equal(pipeline.counters.batches, 2)
})

t.test('groups are acknowledged in the order they were written', async t => {
  const order: number[] = []
  const { pipeline } = await setup(t)
  const submits = []
  for (let round = 0; round < 5; round++) {
    for (let i = 0; i < 10; i++) {
      const n = round * 10 + i
      submits.push(pipeline.submit({ profile_id: 'alice', measured_at: NOW - 100_000 + n * 1000, heart_rate: 60 + n, source: 'mqtt' }).then(r => { order.push(n); return r }))
    }
    await new Promise(resolve => setImmediate(resolve))
  }
  const results = await Promise.all(submits)
  t.equal(results.filter(r => r.status === 'stored').length, 50)
  t.same(order, Array.from({ length: 50 }, (_, n) => n), 'every reading acknowledged in the order it came')
  t.ok(pipeline.counters.batches >= 2 && pipeline.counters.batches <= 5, `50 readings in ${pipeline.counters.batches} groups`)
})

t.test('stop writes and acknowledges every reading already taken, then refuses new ones', async t => {
  const events: string[] = []
  const held = heldFirstAppend(events)
  const { pipeline, readings } = await setup(t, {}, undefined, held.wrap)
  const taken = [1, 2, 3].map(async i => await pipeline.submit({ profile_id: 'alice', measured_at: NOW - 10_000 + i * 1000, heart_rate: 60 + i, source: 'mqtt' }))
  await held.entered
  const more = pipeline.submit({ profile_id: 'alice', measured_at: NOW - 1000, heart_rate: 70, source: 'mqtt' })
  let stopped = false
  const stopping = pipeline.stop().then(() => { stopped = true })
  await t.rejects(pipeline.submit({ profile_id: 'alice', measured_at: NOW, heart_rate: 71, source: 'mqtt' }), PipelineStoppedError, 'a reading after stop() is refused')
  t.equal(stopped, false, 'stop waits for the group being written')
  held.release()
  await stopping
  t.same(await Promise.all([...taken, more]), [1, 2, 3, 4].map(() => ({ status: 'stored', profile_id: 'alice' })))
  t.same((await all(readings, 'alice')).map(([at]) => at), [NOW - 9000, NOW - 8000, NOW - 7000, NOW - 1000])
  t.same(events, ['append 1', 'append 2'])
})
