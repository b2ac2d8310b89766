// The PostgreSQL readings store (hub/store/pg-readings.ts) on a real PostgreSQL: the readings parts of the store
// conformance suite (test/conformance/store.ts), and what only a shared database has: several writers storing
// the same member's readings at once, the notifications every instance hears, and a box's erasure through the
// MQTT ingest's writer (hub/ingest/chain-writer.ts), which stores through the same SQL.
import t, { type Test } from 'tap'
import pg from 'pg'
import pino from 'pino'
import type { StoredReading } from '../../api/pipeline/reading.ts'
import type { Rollup } from '../../api/store/rollups.ts'
import { addReading, emptyRollup, mergeRollup, streamCredit } from '../../api/store/rollups.ts'
import type { Stores } from '../../api/store/types.ts'
import { ChainWriter } from '../../hub/ingest/chain-writer.ts'
import { migrate } from '../../hub/migrate.ts'
import { PgEvents } from '../../hub/store/pg-events.ts'
import { runOps } from '../../hub/store/pg-op.ts'
import { decodeReadingsNotice, PgReadings, READINGS_CHANNEL, ReadingsNoticeError, type ReadingsNoticeItem } from '../../hub/store/pg-readings.ts'
import { storeConformance } from '../conformance/store.ts'
import { Postgres } from '../helpers/postgres.ts'

const GAP_MS = 5000
const T0 = Date.UTC(2026, 0, 5, 10, 0, 0)
const MIN = 60_000
const HOUR = 3_600_000

const server = await Postgres.create(t)
await server.start()
let n = 0

interface Opened { url: string, pool: pg.Pool, events: PgEvents, readings: PgReadings, close: () => Promise<void> }

async function openReadings (url: string, gapMs = GAP_MS): Promise<Opened> {
  const pool = new pg.Pool({ connectionString: url, max: 4 })
  pool.on('error', () => {})
  await migrate(pool)
  const events = new PgEvents(url)
  await events.start()
  const readings = new PgReadings(pool, { gapMs, events })
  return { url, pool, events, readings, close: async () => { await events.stop(); await pool.end() } }
}

async function freshDatabase (t: Test): Promise<string> {
  const name = `readings_${++n}`
  const url = await server.createDatabase(name)
  t.teardown(async () => {
    const admin = new pg.Client({ connectionString: server.url() })
    await admin.connect()
    try { await admin.query(`DROP DATABASE ${name} WITH (FORCE)`) } finally { await admin.end() }
  })
  return url
}

/** A bundle with the readings store only: the subtests run below use nothing else. */
function readingsOnly (o: Opened): Stores {
  const partial: Pick<Stores, 'readings' | 'readingLog' | 'batch' | 'close'> = {
    readings: o.readings,
    readingLog: o.readings.readingLog,
    batch: async ops => { await runOps(o.pool, ops) },
    close: o.close
  }
  return partial as Stores
}

const READINGS_PARTS = /^(readings|latest|rollups|prune):/

t.test('store conformance: the readings parts', async t => {
  // The suite's other parts (users, devices, clients, tokens, and the durability of all of them) run in
  // store-conformance.test.ts with the whole bundle.
  const only = new Proxy(t, {
    get (target, prop, receiver) {
      if (prop !== 'test') return Reflect.get(target, prop, receiver)
      return (name: string, fn: (t: Test) => Promise<void>) => READINGS_PARTS.test(name) ? target.test(name, fn) : undefined
    }
  })
  storeConformance(only, async ({ gapMs }) => {
    const url = await freshDatabase(t)
    let opened: Opened | null = await openReadings(url, gapMs)
    return {
      get stores () {
        if (opened === null) throw new Error('closed')
        return readingsOnly(opened)
      },
      async reopen () {
        await opened?.close()
        opened = await openReadings(url, gapMs)
        return readingsOnly(opened)
      },
      async destroy () {
        await opened?.close()
        opened = null
      }
    }
  })
})

function r (profileId: string, at: number, bpm: number, extra: Partial<StoredReading> = {}): StoredReading {
  return { profile_id: profileId, measured_at: at, heart_rate: bpm, source: 'sim', ...extra }
}

async function write (readings: PgReadings, group: StoredReading[]): Promise<void> {
  const plan = await readings.plan(group)
  await readings.readingLog.append(plan.ops)
  plan.commit()
}

async function all<T> (it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = []
  for await (const x of it) out.push(x)
  return out
}

/** The minute and hour rollups of readings (sorted by time), as rollups.ts defines them. */
function expected (rows: Array<{ measured_at: number, heart_rate: number }>, gapMs: number): { minutes: Array<[number, Rollup]>, hours: Array<[number, Rollup]> } {
  const minutes = new Map<number, Rollup>()
  let prev: number | undefined
  for (const x of rows) {
    const m = Math.floor(x.measured_at / MIN) * MIN
    const rollup = minutes.get(m) ?? emptyRollup()
    addReading(rollup, x.measured_at, x.heart_rate, prev === undefined ? 0 : streamCredit(x.measured_at - prev, gapMs))
    minutes.set(m, rollup)
    prev = x.measured_at
  }
  const hours = new Map<number, Rollup>()
  for (const [m, rollup] of minutes) {
    const h = Math.floor(m / HOUR) * HOUR
    const hour = hours.get(h) ?? emptyRollup()
    mergeRollup(hour, rollup)
    hours.set(h, hour)
  }
  return { minutes: [...minutes], hours: [...hours] }
}

async function stateOf (readings: PgReadings, profileId: string): Promise<{ minutes: Array<[number, Rollup]>, hours: Array<[number, Rollup]>, raw: Array<{ measured_at: number, heart_rate: number }> }> {
  const raw = (await all(readings.range(profileId, 0, T0 + 30 * HOUR))).map(x => ({ measured_at: x.measured_at, heart_rate: x.heart_rate }))
  return { raw, minutes: await all(readings.rollups(profileId, 0, T0 + 30 * HOUR)), hours: await all(readings.hourRollups(profileId, 0, T0 + 30 * HOUR)) }
}

t.test('instances writing the same members at once, in any order, keep rollups and latest exact', async t => {
  const url = await freshDatabase(t)
  const instances = await Promise.all([0, 1, 2].map(async () => await openReadings(url)))
  t.teardown(async () => { for (const i of instances) await i.close() })
  // 3 members, 1,500 readings each about 2 s apart (some further than the gap), dealt out to the instances in
  // small shuffled groups, so that neighbours land in different instances' groups, often out of order.
  const members = ['m-a', 'm-b', 'm-c']
  let seed = 7
  const random = (): number => { seed = (seed * 1103515245 + 12345) % 2 ** 31; return seed / 2 ** 31 }
  const all: StoredReading[] = []
  for (const p of members) {
    let at = T0
    for (let k = 0; k < 1500; k++) { at += 1000 + Math.floor(random() * 5000); all.push(r(p, at, 60 + Math.floor(random() * 100))) }
  }
  for (let i = all.length - 1; i > 0; i--) { const j = Math.floor(random() * (i + 1)); [all[i], all[j]] = [all[j]!, all[i]!] }
  const groups: StoredReading[][] = []
  for (let i = 0; i < all.length; i += 1 + Math.floor(random() * 40)) groups.push(all.slice(i, i + 40))
  // Every reading once, and some again (a redelivery) in another instance's group.
  for (let i = 0; i < 50; i++) groups.push([all[Math.floor(random() * all.length)]!])
  let next = 0
  await Promise.all(instances.map(async inst => {
    while (next < groups.length) await write(inst.readings, groups[next++]!)
  }))
  for (const p of members) {
    const state = await stateOf(instances[0]!.readings, p)
    t.equal(state.raw.length, 1500, `${p}: every reading once`)
    const want = expected(state.raw, GAP_MS)
    t.same(state.minutes, want.minutes, `${p}: minute rollups equal those of the readings in order`)
    t.same(state.hours, want.hours, `${p}: hour rollups too`)
    const last = state.raw[state.raw.length - 1]
    t.match(await instances[1]!.readings.latest(p), { measured_at: last?.measured_at, heart_rate: last?.heart_rate }, `${p}: latest is the newest`)
  }
})

t.test('instances ingesting the same members at once defer what another holds, and store everything exactly once', async t => {
  const url = await freshDatabase(t)
  const instances = await Promise.all([0, 1].map(async () => await openReadings(url)))
  t.teardown(async () => { for (const i of instances) await i.close() })
  const writers = instances.map(i => new ChainWriter(i.pool, pino({ level: 'silent' }), { gapMs: GAP_MS }))
  t.teardown(async () => { for (const w of writers) await w.stop() })
  // 40 members of two boxes, 100 readings each 1 to 6 s apart, dealt out at random to the two instances (as a
  // shared subscription does), all submitted at once; 100 of them delivered twice.
  let seed = 11
  const random = (): number => { seed = (seed * 1103515245 + 12345) % 2 ** 31; return seed / 2 ** 31 }
  type Message = Parameters<ChainWriter['submit']>[0]['message']
  const messages: Message[] = []
  for (let k = 0; k < 40; k++) {
    let at = T0
    for (let i = 0; i < 100; i++) {
      at += 1000 + Math.floor(random() * 5000)
      messages.push({ kind: 'reading', box_id: k % 2 === 0 ? 'box-a' : 'box-b', profile_id: `m-${k}`, reading: { measured_at: at, heart_rate: 60 + Math.floor(random() * 100), source: 'ble' } })
    }
  }
  for (let i = 0; i < 100; i++) messages.push(messages[Math.floor(random() * 4000)]!)
  const acked = await Promise.all(messages.map(async message => {
    const writer = writers[random() < 0.5 ? 0 : 1]!
    await new Promise<void>(resolve => { writer.submit({ message, done: resolve }) })
    return 1
  }))
  t.equal(acked.length, 4100, 'every message acknowledged')
  t.comment(`readings deferred because the other instance held their member: ${writers[0]!.counts.deferred + writers[1]!.counts.deferred}`)
  t.same([writers[0]!.counts.stored + writers[1]!.counts.stored, writers[0]!.counts.duplicates + writers[1]!.counts.duplicates], [4000, 100],
    'each reading stored once, each redelivery counted a duplicate once')
  for (const k of [0, 1, 17, 39]) {
    const state = await stateOf(instances[0]!.readings, `m-${k}`)
    t.equal(state.raw.length, 100)
    const want = expected(state.raw, GAP_MS)
    t.same([state.minutes, state.hours], [want.minutes, want.hours], `m-${k}: rollups equal those of the readings in order`)
    t.equal((await instances[1]!.readings.latest(`m-${k}`))?.measured_at, state.raw[99]?.measured_at)
  }
})

t.test('every instance hears the readings stored, once committed, in notifications under 7,500 bytes', async t => {
  const url = await freshDatabase(t)
  const [a, b] = await Promise.all([openReadings(url), openReadings(url)])
  t.teardown(async () => { await a!.close(); await b!.close() })
  const heard: ReadingsNoticeItem[] = []
  const sizes: number[] = []
  await b!.events.listen(READINGS_CHANNEL, payload => { sizes.push(Buffer.byteLength(payload)) })
  const off = await b!.readings.onStored(items => { for (const x of items) heard.push(x) })
  t.teardown(off)
  const group = Array.from({ length: 400 }, (_, i) => r(`member-with-a-longish-profile-id-${i % 7}`, T0 + i, 70 + (i % 50), { source: 'ble', device_id: 'C8:2F:9A:00:00:01' }))
  group.push(r('m-x', T0, 99, { source: 'http' }))
  await write(a!.readings, [...group, group[0]!])
  const until = Date.now() + 10_000
  while (heard.length < group.length && Date.now() < until) await new Promise(resolve => setTimeout(resolve, 20))
  t.equal(heard.length, group.length, 'each stored reading once (not the duplicate)')
  t.ok(sizes.length > 1 && sizes.every(s => s < 7500), `${sizes.length} notifications of ${Math.max(...sizes)} bytes at most`)
  t.strictSame(heard.find(x => x.profile_id === 'm-x'), { profile_id: 'm-x', measured_at: T0, heart_rate: 99, source: 'http' })
  t.strictSame(heard.find(x => x.measured_at === T0 + 3), { profile_id: 'member-with-a-longish-profile-id-3', measured_at: T0 + 3, heart_rate: 73, source: 'ble', device_id: 'C8:2F:9A:00:00:01' })
  t.throws(() => decodeReadingsNotice('[["p", "1", 70, "ble", null]]'), ReadingsNoticeError)
  t.throws(() => decodeReadingsNotice('{}'), ReadingsNoticeError)
})

t.test('the MQTT ingest stores through the same path; an erasure makes rollups and latest again from what is left', async t => {
  const url = await freshDatabase(t)
  const inst = await openReadings(url)
  t.teardown(async () => { await inst.close() })
  const writer = new ChainWriter(inst.pool, pino({ level: 'silent' }), { gapMs: GAP_MS })
  t.teardown(async () => { await writer.stop() })
  const send = async (messages: Parameters<ChainWriter['submit']>[0]['message'][]): Promise<void> => {
    await Promise.all(messages.map(async message => { await new Promise<void>(resolve => { writer.submit({ message, done: resolve }) }) }))
  }
  const reading = (box: string, p: string, at: number, bpm: number): Parameters<ChainWriter['submit']>[0]['message'] =>
    ({ kind: 'reading', box_id: box, profile_id: p, reading: { measured_at: at, heart_rate: bpm, source: 'ble' } })
  // Member p trains at box A, then at box B, alternating every 2 s; q only at box A.
  const messages = []
  for (let k = 0; k < 60; k++) messages.push(reading(k % 2 === 0 ? 'box-a' : 'box-b', 'p', T0 + 2000 * k, 70 + k))
  messages.push(reading('box-a', 'q', T0, 80))
  await send(messages)
  await send([reading('box-b', 'p', T0 + 2000, 1)])
  t.same([writer.counts.stored, writer.counts.duplicates], [61, 1], 'a reading held already is a duplicate')
  const before = await stateOf(inst.readings, 'p')
  t.same(before.minutes, expected(before.raw, GAP_MS).minutes, 'ingested readings have their rollups')
  t.equal((await inst.readings.latest('p'))?.measured_at, T0 + 2000 * 59)

  await send([{ kind: 'erasure', box_id: 'box-b', profile_id: 'p', erased_at: T0 + HOUR }])
  const after = await stateOf(inst.readings, 'p')
  t.same(after.raw.map(x => x.measured_at), Array.from({ length: 30 }, (_, k) => T0 + 4000 * k), 'only box A\'s readings are left')
  const want = expected(after.raw, GAP_MS)
  t.same(after.minutes, want.minutes, 'minute rollups made again from what is left')
  t.same(after.hours, want.hours, 'hour rollups too')
  t.strictSame(await inst.readings.latest('p'), { measured_at: T0 + 4000 * 29, heart_rate: 128, source: 'ble' }, 'the latest is the newest reading left')
  t.equal(after.raw.length + (await all(inst.readings.range('q', 0, T0 + HOUR))).length, 31, 'q kept its reading')

  await send([reading('box-b', 'p', T0 + 2000, 70)])
  t.equal((await all(inst.readings.range('p', T0 + 2000, T0 + 2000))).length, 0, 'a redelivery from the box that erased the member is not stored')
  await send([reading('box-b', 'p', T0 + 2000 * 70, 90)])
  t.equal(writer.counts.erasures, 1)

  await send([{ kind: 'erasure', box_id: 'box-a', profile_id: 'p', erased_at: T0 + HOUR }])
  t.same(await stateOf(inst.readings, 'p'), { raw: [], minutes: [], hours: [] }, 'erased at both boxes: nothing left')
  t.equal(await inst.readings.latest('p'), undefined, 'nor a latest record')
})
