// The maximum that learns (api/classes/learn-max.ts): the 30 s rule and the
// highest 30-second average, by hand. Maximum 180 bpm, stream gap 5 s.
import t from 'tap'
import { learnedMax } from '../../../api/classes/learn-max.ts'

const o = { gapMs: 5000 }
/** One reading a second from `from` to `to` seconds (inclusive) at bpm(second). */
const series = (from: number, to: number, bpm: (s: number) => number): Array<{ t: number, bpm: number }> => {
  const out = []
  for (let s = from; s <= to; s++) out.push({ t: s * 1000, bpm: bpm(s) })
  return out
}

t.test('29 s above the maximum is not enough; 30 s is', async t => {
  t.equal(learnedMax(series(0, 29, () => 190), 180, o), null, 'readings from 0 to 29 s span 29 s')
  t.equal(learnedMax(series(0, 30, () => 190), 180, o), 190, 'readings from 0 to 30 s span 30 s: the window [0, 30 s) averages 190')
})

t.test('the highest 30-second average, rounded', async t => {
  // 181 for 0..9 s, 200 for 10..19 s, 186 for 20..40 s. Windows start at 0..10 s (the run ends at 40 s).
  // [0, 30): (10·181 + 10·200 + 10·186) / 30 = 188.9; [10, 40): (10·200 + 20·186) / 30 = 190.67 → 191.
  const s = series(0, 40, x => x < 10 ? 181 : x < 20 ? 200 : 186)
  t.equal(learnedMax(s, 180, o), 191)
})

t.test('readings at the maximum, or a gap longer than the stream gap, break the hold', async t => {
  const dip = series(0, 40, x => x === 15 ? 180 : 190) // runs 0..14 s and 16..40 s: 14 s and 24 s
  t.equal(learnedMax(dip, 180, o), null)
  const gap = [...series(0, 20, () => 190), ...series(26, 45, () => 190)] // 6 s without a reading at 20..26 s
  t.equal(learnedMax(gap, 180, o), null)
  const sparse = [0, 5, 10, 15, 20, 25, 30].map(s => ({ t: s * 1000, bpm: 185 })) // a reading every 5 s holds
  t.equal(learnedMax(sparse, 180, o), 185)
  const later = [...series(0, 10, () => 150), ...series(11, 60, x => x < 41 ? 183 : 200)] // best window [30, 60): 11·183 + 19·200
  t.equal(learnedMax(later, 180, o), Math.round((11 * 183 + 19 * 200) / 30))
  t.equal(learnedMax([], 180, o), null)
})
