// Statistics from rollups (+ raw edge minutes) against a brute-force
// computation over the same random readings: gaps, out-of-order and duplicate
// timestamps, arbitrary range edges. Runs against the real LevelDB store.
import t from 'tap'
import fc from 'fast-check'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Store } from '../../api/store/db.ts'
import { Readings } from '../../api/store/readings.ts'
import { Hub } from '../../api/hub.ts'
import { Pipeline } from '../../api/pipeline/ingest.ts'
import { finish, kcal, keytel, sums, type Sums } from '../../api/stats.ts'
import { emptyRollup, mergeRollup, type Rollup } from '../../api/store/rollups.ts'

const GAP = 5000
const NOW = Date.UTC(2026, 0, 15, 12, 0, 30, 250)

async function open (t: { teardown (fn: () => unknown): void }): Promise<{ store: Store, readings: Readings, pipeline: Pipeline }> {
  const dir = await mkdtemp(join(tmpdir(), 'hr-stats-'))
  const store = await Store.open(dir)
  const readings = new Readings(store, { gapMs: GAP })
  const pipeline = new Pipeline({ readingLog: store.readingLog, readings, hub: new Hub(), users: { get: async () => ({}) }, retention: { rawDays: 35, rollupDays: 400 }, now: () => NOW, pruneIntervalMs: 0 })
  t.teardown(async () => { await pipeline.stop(); await store.close(); await rm(dir, { recursive: true, force: true }) })
  return { store, readings, pipeline }
}

/** The definition, computed directly over the unique readings (first stored wins). */
function brute (series: Array<{ t: number, hr: number }>, from: number, to: number): Sums {
  const s: Sums = { count: 0, sum: 0, min: 0, max: 0, streamedMs: 0, bpmMs: 0 }
  const sorted = [...series].sort((a, b) => a.t - b.t)
  let first = true
  for (let i = 0; i < sorted.length; i++) {
    const r = sorted[i]!
    if (r.t < from || r.t > to) continue
    const pred = sorted[i - 1]
    let credit = pred !== undefined && r.t - pred.t <= GAP ? r.t - pred.t : 0
    if (first) { credit = Math.min(credit, r.t - from); first = false }
    s.min = s.count === 0 ? r.hr : Math.min(s.min, r.hr)
    s.max = s.count === 0 ? r.hr : Math.max(s.max, r.hr)
    s.count++
    s.sum += r.hr
    s.streamedMs += credit
    s.bpmMs += r.hr * credit
  }
  return s
}

const step = fc.oneof(
  { weight: 6, arbitrary: fc.integer({ min: 1, max: 3000 }) },
  { weight: 2, arbitrary: fc.integer({ min: 3000, max: 8000 }) },
  { weight: 1, arbitrary: fc.integer({ min: 8000, max: 200_000 }) },
  { weight: 1, arbitrary: fc.constant(0) } // a duplicate timestamp
)

/**
 * Submits the items in chunks (a chunk concurrently: one group) and returns the
 * unique series (first submitted wins). With `overlap`, a chunk is submitted
 * one event-loop turn after the previous one instead of after its writes, so
 * it arrives while that batch is being written (planned on top of it).
 */
async function ingest (pipeline: Pipeline, profile: string, items: Array<{ t: number, hr: number }>, chunkSizes: number[], seed: number, overlap = false, shuffle = true): Promise<Array<{ t: number, hr: number }>> {
  // Shuffle deterministically (out-of-order arrival).
  let x = seed >>> 0
  for (let i = shuffle ? items.length - 1 : 0; i > 0; i--) { x = (x * 1103515245 + 12345) >>> 0; const j = x % (i + 1); [items[i], items[j]] = [items[j]!, items[i]!] }
  // Submit in chunks: a chunk is submitted concurrently (one group), chunks one after another.
  const firstSeen = new Map<number, { hr: number, chunk: number }>()
  const overlapping: Array<Promise<unknown>> = []
  let i = 0
  let chunk = 0
  while (i < items.length) {
    const size = chunkSizes[chunk % chunkSizes.length]!
    const part = items.slice(i, i + size)
    for (const r of part) {
      const seen = firstSeen.get(r.t)
      if (seen === undefined) firstSeen.set(r.t, { hr: r.hr, chunk })
      else if (seen.chunk === chunk) r.hr = seen.hr // same group: same value, so "first" is unambiguous
    }
    const submitted = Promise.all(part.map(async r => await pipeline.submit({ profile_id: profile, measured_at: r.t, heart_rate: r.hr, source: 'sim' })))
    if (overlap) {
      overlapping.push(submitted)
      await new Promise(resolve => setImmediate(resolve))
    } else await submitted
    i += size
    chunk++
  }
  await Promise.all(overlapping)
  return [...firstSeen].map(([tt, v]) => ({ t: tt, hr: v.hr }))
}

async function compare (readings: Readings, profile: string, series: Array<{ t: number, hr: number }>, ranges: Array<[number, number]>, start: number): Promise<void> {
  for (const [a, len] of ranges) {
    const got = await sums(readings, profile, a, a + len)
    const want = brute(series, a, a + len)
    if (JSON.stringify(got) !== JSON.stringify(want)) {
      throw new Error(`range [${a - start}, +${len}] got ${JSON.stringify(got)} want ${JSON.stringify(want)}`)
    }
  }
}

/** Every stored hour rollup is the merge of its stored minute rollups (and there is no other). */
async function hoursMatchMinutes (readings: Readings, profile: string): Promise<void> {
  const merged = new Map<number, Rollup>()
  for await (const [m, r] of readings.rollups(profile, 0, NOW + 86_400_000)) {
    const h = Math.floor(m / 3_600_000) * 3_600_000
    const into = merged.get(h) ?? emptyRollup()
    mergeRollup(into, r)
    merged.set(h, into)
  }
  const hours = new Map<number, Rollup>()
  for await (const [h, r] of readings.hourRollups(profile, 0, NOW + 86_400_000)) hours.set(h, r)
  if (JSON.stringify([...hours]) !== JSON.stringify([...merged])) {
    throw new Error(`hour rollups ${JSON.stringify([...hours])} differ from the merged minutes ${JSON.stringify([...merged])}`)
  }
}

t.test('rollup statistics equal the brute-force definition', async t => {
  const { readings, pipeline } = await open(t)
  let run = 0
  await fc.assert(fc.asyncProperty(
    fc.integer({ min: 0, max: 40 * 60_000 }),
    fc.array(fc.record({ step, hr: fc.integer({ min: 1, max: 230 }) }), { minLength: 1, maxLength: 120 }),
    fc.array(fc.integer({ min: 1, max: 25 }), { minLength: 1, maxLength: 10 }),
    fc.integer(),
    fc.array(fc.tuple(fc.integer({ min: -120_000, max: 50 * 60_000 }), fc.integer({ min: 0, max: 50 * 60_000 })), { minLength: 1, maxLength: 6 }),
    async (startBack, steps, chunkSizes, seed, ranges) => {
      const profile = `p${run++}`
      const start = NOW - startBack - 45 * 60_000
      let tNow = start
      const items = steps.map(x => { tNow += x.step; return { t: Math.min(tNow, NOW), hr: x.hr } })
      const series = await ingest(pipeline, profile, items, chunkSizes, seed)
      await compare(readings, profile, series, [[NOW - 86_400_000, 86_400_000], ...ranges.map(([off, len]) => [start + off, len] as [number, number])], start)
      await hoursMatchMinutes(readings, profile)
    }
  ), { numRuns: 60, seed: Number(process.env.FC_SEED ?? Date.now() % 2 ** 31) })
  t.pass('60 random series agree')
})

// Series over several days with runs of seconds and jumps of hours, so ranges
// cover whole hours (hour rollups) between partial edge hours (minute rollups)
// and partial edge minutes (raw readings), and readings near hour boundaries.
const HOUR = 3_600_000
const longStep = fc.oneof(
  { weight: 8, arbitrary: fc.integer({ min: 1, max: 3000 }) },
  { weight: 2, arbitrary: fc.integer({ min: 3000, max: 8000 }) },
  { weight: 2, arbitrary: fc.integer({ min: 8000, max: 2 * HOUR }) },
  { weight: 1, arbitrary: fc.integer({ min: 2 * HOUR, max: 20 * HOUR }) },
  { weight: 1, arbitrary: fc.constant(0) }
)

t.test('statistics over several days (hour rollups) equal the brute-force definition', async t => {
  const { readings, pipeline } = await open(t)
  let run = 0
  await fc.assert(fc.asyncProperty(
    fc.integer({ min: 0, max: 6 * HOUR }),
    fc.integer({ min: -5000, max: 5000 }),
    fc.array(fc.record({ step: longStep, hr: fc.integer({ min: 1, max: 230 }) }), { minLength: 1, maxLength: 300, size: 'large' }),
    fc.array(fc.integer({ min: 1, max: 40 }), { minLength: 1, maxLength: 6 }),
    fc.integer(),
    fc.array(fc.tuple(fc.integer({ min: -2 * HOUR, max: 5 * 24 * HOUR }), fc.integer({ min: 0, max: 6 * 24 * HOUR }), fc.boolean()), { minLength: 1, maxLength: 8 }),
    fc.constantFrom('sequential', 'overlapping', 'overlapping in order'),
    async (startBack, skew, steps, chunkSizes, seed, ranges, arrival) => {
      const profile = `d${run++}`
      // Start a few seconds around an hour boundary, 4 to 4.25 days back.
      const start = Math.floor((NOW - 4 * 24 * HOUR - startBack) / HOUR) * HOUR + skew
      let tNow = start
      const items = steps.map(x => { tNow += x.step; return { t: Math.min(tNow, NOW), hr: x.hr } })
      const series = await ingest(pipeline, profile, items, chunkSizes, seed, arrival !== 'sequential', arrival !== 'overlapping in order')
      // Ranges start anywhere or exactly on an hour (then also end on one).
      const rs = ranges.map(([off, len, aligned]) => aligned
        ? [Math.floor((start + off) / HOUR) * HOUR, Math.floor(len / HOUR) * HOUR - 1] as [number, number]
        : [start + off, len] as [number, number])
      await compare(readings, profile, series, [[NOW - 30 * 24 * HOUR, 30 * 24 * HOUR], [NOW - 7 * 24 * HOUR, 7 * 24 * HOUR], ...rs], start)
      await hoursMatchMinutes(readings, profile)
    }
  ), { numRuns: 60, seed: Number(process.env.FC_SEED ?? Date.now() % 2 ** 31) })
  t.pass('60 random multi-day series agree')
  t.ok(pipeline.counters.batches < pipeline.counters.received, `${pipeline.counters.received} readings in ${pipeline.counters.batches} groups`)
})

t.test('zeros when there is no data', async t => {
  const { readings } = await open(t)
  t.same(finish(await sums(readings, 'nobody', NOW - 86_400_000, NOW), {}), {
    maximum_beats_per_minute: 0, minimum_beats_per_minute: 0, average_beats_per_minute: 0, streamed_duration_in_seconds: 0, calories_burned_in_kcal: 0
  })
})

t.test('Keytel 2005 equation and defaults', async t => {
  // Male, 30 years, 75 kg, 150 bpm for one minute: -55.0969 + 94.635 + 14.91 + 6.051 = 60.4991 kJ = 14.4596 kcal.
  t.equal(Math.round(kcal(60_000, 150 * 60_000, { sex: 'male', age: 30, weight_kg: 75 }) * 1e4) / 1e4, 14.4596)
  // Female, 40 years, 60 kg, 120 bpm, 2 minutes: (-20.4022 + 53.664 - 7.578 + 2.96) × 2 = 57.2876 kJ = 13.6921 kcal.
  t.equal(Math.round(kcal(120_000, 120 * 120_000, { sex: 'female', age: 40, weight_kg: 60 }) * 1e4) / 1e4, 13.6921)
  // Unknown sex, defaults (30 y, 75 kg): the mean of both equations.
  const m = keytel({ sex: 'male', age: 30, weight_kg: 75 })
  const f = keytel({ sex: 'female', age: 30, weight_kg: 75 })
  t.same(keytel({}), { intercept: (m.intercept + f.intercept) / 2, slope: (m.slope + f.slope) / 2 })
  // A resting heart rate that gives a negative estimate clamps to 0.
  t.equal(kcal(60_000, 40 * 60_000, { sex: 'male', age: 20, weight_kg: 50 }), 0)
})
