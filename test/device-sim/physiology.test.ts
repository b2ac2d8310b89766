import t from 'tap'
import { generateSamples, makePerson } from '../../device-sim/physiology.ts'
import { deriveSeed, mulberry32 } from '../../device-sim/random.ts'
import { intensityAt, loadScenario, parseScenario, BUNDLED_SCENARIOS } from '../../device-sim/scenario.ts'
import { SimError } from '../../device-sim/errors.ts'

t.test('mulberry32 is a pure function of its seed', async t => {
  const a = mulberry32(42)
  const b = mulberry32(42)
  const xs = Array.from({ length: 5 }, () => a())
  t.same(xs, Array.from({ length: 5 }, () => b()))
  t.ok(xs.every(x => x >= 0 && x < 1))
  t.not(mulberry32(43)(), mulberry32(42)(), 'another seed, another stream')
  t.not(deriveSeed(1, 'person', 0), deriveSeed(1, 'person', 1))
})

t.test('the same seed gives the same readings; another seed gives others', async t => {
  const s = await loadScenario('spinning-class')
  const a = generateSamples(7, 0, s, 600)
  const b = generateSamples(7, 0, s, 600)
  t.same(a, b, 'identical, RR intervals and energy included')
  const c = generateSamples(8, 0, s, 600)
  t.notSame(a.map(x => x.heart_rate), c.map(x => x.heart_rate))
  t.notSame(makePerson(7, 0), makePerson(7, 1), 'each person differs')
})

t.test('bpm follows the scenario with lag; RR intervals agree with the bpm', async t => {
  const hiit = await loadScenario('hiit')
  const person = makePerson(3, 2)
  const xs = generateSamples(3, 2, hiit, 1200)
  const first = xs[0]!
  t.ok(Math.abs(first.heart_rate - person.resting_bpm) < 25, `starts near resting (${first.heart_rate} vs ${person.resting_bpm})`)
  const peak = Math.max(...xs.map(x => x.heart_rate))
  t.ok(peak > person.resting_bpm + 0.6 * (person.max_bpm - person.resting_bpm), `reaches high effort (${peak})`)
  t.ok(peak <= person.max_bpm + 6, 'never far above max')
  // 30 s into warm-up the heart rate has not jumped to the target: first-order lag.
  t.ok(Math.abs(xs[29]!.heart_rate - xs[0]!.heart_rate) < 40)
  for (const x of xs.slice(60)) {
    if (x.rr_intervals_ms.length === 0) continue
    const mean = x.rr_intervals_ms.reduce((a, b) => a + b, 0) / x.rr_intervals_ms.length
    const expected = 60000 / x.heart_rate
    t.ok(Math.abs(mean - expected) / expected < 0.2, `rr ${mean.toFixed(0)} ms vs 60000/${x.heart_rate}`)
  }
  const beats = xs.reduce((n, x) => n + x.rr_intervals_ms.length, 0)
  const meanBpm = xs.reduce((n, x) => n + x.heart_rate, 0) / xs.length
  t.ok(Math.abs(beats - meanBpm * 20) / (meanBpm * 20) < 0.05, `${beats} beats in 20 min at ${meanBpm.toFixed(0)} bpm`)
  const fast = xs.filter(x => x.heart_rate >= 150)
  t.ok(fast.length > 0 && fast.some(x => x.rr_intervals_ms.length >= 2), 'several RR per 1 s notification when the bpm is high')
  const rr = xs.flatMap(x => x.rr_intervals_ms)
  const diffs = rr.slice(1).map((v, i) => v - rr[i]!)
  t.ok(new Set(diffs).size > 10, 'beat-to-beat variability')
})

t.test('energy accumulates and the battery drains', async t => {
  const xs = generateSamples(5, 1, await loadScenario('spinning-class'), 2700)
  for (let i = 1; i < xs.length; i++) {
    t.ok(xs[i]!.energy_expended_kj >= xs[i - 1]!.energy_expended_kj)
    t.ok(xs[i]!.battery_percent <= xs[i - 1]!.battery_percent)
  }
  t.ok(xs[2699]!.energy_expended_kj > 500, `45 min class: ${xs[2699]!.energy_expended_kj} kJ`)
  t.ok(xs[2699]!.battery_percent < xs[0]!.battery_percent, 'battery went down')
})

t.test('bundled scenarios load; invalid ones are refused with every error by path', async t => {
  for (const name of BUNDLED_SCENARIOS) t.equal((await loadScenario(name)).name, name)
  const s = parseScenario({ name: 'x', phases: [{ kind: 'warmup', duration_s: 10, from: 0, intensity: 1 }, { kind: 'intervals', duration_s: 30, work: 0.9, rest: 0.1, work_s: 10, rest_s: 5 }] })
  t.equal(intensityAt(s, 5), 0.5, 'ramp is linear')
  t.equal(intensityAt(s, 12), 0.9, 'work')
  t.equal(intensityAt(s, 21), 0.1, 'rest')
  t.equal(intensityAt(s, 100), 0.1, 'holds the end level without loop')
  const err = t.throws(() => parseScenario({ name: '', phases: [{ kind: 'sprint', duration_s: -1 }], extra: 1 })) as SimError
  t.equal(err.code, 'bad_scenario')
  t.match(err.message, /\/name/)
  t.match(err.message, /\/phases\/0/)
  t.throws(() => parseScenario({ name: 'x', phases: [{ kind: 'intervals', duration_s: 10 }] }), { code: 'bad_scenario' })
  await t.rejects(loadScenario('/nonexistent/file.json'), { code: 'bad_scenario' })
})
