// The safety alert (api/classes/safety.ts): at or above 95 % of the maximum
// for 60 s. Maximum 200 bpm: the threshold is 190 bpm. Stream gap 5 s.
import t from 'tap'
import { alertOf, atAlertLevel } from '../../../api/classes/safety.ts'

const o = { gapMs: 5000 }
const series = (from: number, to: number, bpm: (s: number) => number, step = 1): Array<{ t: number, bpm: number }> => {
  const out = []
  for (let s = from; s <= to; s += step) out.push({ t: s * 1000, bpm: bpm(s) })
  return out
}

t.test('60 s at or above 95 %', async t => {
  t.equal(atAlertLevel(190, 200), true)
  t.equal(atAlertLevel(189, 200), false)
  t.equal(atAlertLevel(181, 190), true, '95 % of 190 is 180.5')
  t.equal(atAlertLevel(180, 190), false)
  const s = series(0, 60, () => 190)
  t.equal(alertOf(s.slice(0, 60), 200, 59_000, o), false, '0..59 s: 59 s')
  t.equal(alertOf(s, 200, 60_000, o), true, '0..60 s: 60 s')
  t.equal(alertOf(s, 200, 65_000, o), true, 'the last reading 5 s old')
  t.equal(alertOf(s, 200, 65_001, o), false, 'no reading for more than the stream gap: the alert ends')
})

t.test('a reading below the threshold ends the run; a reading every 5 s holds it', async t => {
  const dip = series(0, 100, x => x === 50 ? 189 : 195)
  t.equal(alertOf(dip, 200, 100_000, o), false, 'the run is 51..100 s: 49 s')
  t.equal(alertOf([...dip, ...series(101, 111, () => 195)], 200, 111_000, o), true, '51..111 s')
  t.equal(alertOf(series(0, 60, () => 192, 5), 200, 60_000, o), true)
  t.equal(alertOf(series(0, 60, () => 192, 6), 200, 60_000, o), false, '6 s between readings breaks the run')
  t.equal(alertOf([], 200, 0, o), false)
})
