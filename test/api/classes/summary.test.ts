// Class summaries (api/classes/summary.ts): three members who took part, one
// who did not; ties share a rank. Maximum 200 bpm, stream gap 5 s.
import t from 'tap'
import { classResults, competitionRanks } from '../../../api/classes/summary.ts'
import { summarise } from '../../../api/sessions.ts'

const S = 1_700_000_040_000
const cls = { class_id: 'c1', room_id: 'r1', name: 'Spin 18:00', started_at: S }
const END = S + 180_000
const every = (from: number, to: number, bpm: number): Array<{ measured_at: number, heart_rate: number }> => {
  const out = []
  for (let s = from; s < to; s++) out.push({ measured_at: S + s * 1000, heart_rate: bpm })
  return out
}
const body = { age: 40, weight_kg: 80, sex: 'male' as const }

t.test('three members ranked, ties sharing a rank, one without readings left out', async t => {
  const a = [{ measured_at: S - 1000, heart_rate: 199 }, ...every(0, 180, 150), { measured_at: END, heart_rate: 199 }] // 75 %: zone 3, 3 × 3 points
  const b = every(0, 60, 170) // 85 %: zone 4 for minute 0 only: 4 points
  const c = every(0, 180, 150)
  const results = classResults(cls, END, [
    { profile_id: 'pb', display_name: 'Bea', readings: b, max: 200, body },
    { profile_id: 'pc', display_name: 'Cy', readings: c, max: 200, body },
    { profile_id: 'pd', display_name: 'Di', readings: [], max: 200, body },
    { profile_id: 'pa', display_name: 'Al', readings: a, max: 200, body }
  ], { streamGapMs: 5000 })
  t.same(results.map(r => [r.display_name, r.summary.effort_points, r.summary.rank, r.summary.ranked]), [['Al', 9, 1, 3], ['Cy', 9, 1, 3], ['Bea', 4, 3, 3]])
  const al = results[0]!.summary
  t.same({ ...al, calories_kcal: 0 }, {
    class_id: 'c1',
    room_id: 'r1',
    name: 'Spin 18:00',
    started_at: S,
    ended_at: END,
    duration_s: 180,
    avg_bpm: 150,
    max_bpm: 150,
    zones_s: [0, 0, 179, 0, 0], // 180 readings 1 s apart: 179 s of streamed time, all in zone 3
    calories_kcal: 0,
    effort_points: 9,
    rank: 1,
    ranked: 3,
    max_heart_rate: 200
  })
  t.equal(al.calories_kcal, summarise(every(0, 180, 150), { streamGapMs: 5000, maxHeartRate: 200, body }).kcal, 'calories as sessions count them, over the class window only')
  t.ok(al.calories_kcal > 0)
  t.same(results[2]!.summary.zones_s, [0, 0, 0, 59, 0])
  t.same(results[0]!.effort.minutes.map(m => m.zone), [3, 3, 3])
})

t.test('competition ranks', async t => {
  t.same(competitionRanks([5, 9, 9, 0, 5]), [3, 1, 1, 5, 3])
  t.same(competitionRanks([]), [])
})
