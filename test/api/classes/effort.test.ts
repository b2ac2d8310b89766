// Effort points (api/classes/effort.ts) on hand-computed series: maximum
// 200 bpm and the default bounds, so zone 1 starts at 100 bpm, zone 2 at 120,
// zone 3 at 140, zone 4 at 160 and zone 5 at 180 (percent rounded as the room
// display rounds it).
import t from 'tap'
import { effortPoints, zoneMinutes, zonePoints, completedMinutes } from '../../../api/classes/effort.ts'

const S = 1_700_000_000_000
const at = (minute: number, second: number): number => S + minute * 60_000 + second * 1000

t.test('each zone, a gap and a partial minute, by hand', async t => {
  const samples = [
    { t: S - 1000, bpm: 199 }, // before the start: left out
    { t: at(0, 0), bpm: 90 }, { t: at(0, 30), bpm: 100 }, // avg 95 = 47.5 % → 48 %: below zone 1 → 0
    { t: at(1, 0), bpm: 110 }, { t: at(1, 59), bpm: 110 }, // avg 110 = 55 %: zone 1 → 1
    // minute 2: no reading → 0
    { t: at(3, 10), bpm: 125 }, { t: at(3, 20), bpm: 135 }, // avg 130 = 65 %: zone 2 → 2
    { t: at(4, 0), bpm: 150 }, // 75 %: zone 3 → 3
    { t: at(5, 0), bpm: 170 }, // 85 %: zone 4 → 4
    { t: at(6, 0), bpm: 190 }, { t: at(6, 1), bpm: 192 }, // avg 191: zone 5 → 4, as zone 4
    { t: at(7, 10), bpm: 190 } // minute 7 is not complete at 7:30: not counted
  ]
  const e = effortPoints(samples, S, at(7, 30), { max: 200 })
  t.same(e.minutes, [
    { minute: 0, avg_bpm: 95, zone: 0, points: 0 },
    { minute: 1, avg_bpm: 110, zone: 1, points: 1 },
    { minute: 2, avg_bpm: null, zone: 0, points: 0 },
    { minute: 3, avg_bpm: 130, zone: 2, points: 2 },
    { minute: 4, avg_bpm: 150, zone: 3, points: 3 },
    { minute: 5, avg_bpm: 170, zone: 4, points: 4 },
    { minute: 6, avg_bpm: 191, zone: 5, points: 4 }
  ])
  t.equal(e.total, 14)
  t.same(zoneMinutes(e.minutes), [1, 1, 1, 1, 1])
})

t.test('minute edges: a reading at a minute start belongs to that minute; a minute ending at `until` is complete', async t => {
  const samples = [{ t: at(0, 59.999), bpm: 170 }, { t: at(1, 0), bpm: 110 }]
  t.same(effortPoints(samples, S, at(1, 0), { max: 200 }).minutes, [{ minute: 0, avg_bpm: 170, zone: 4, points: 4 }])
  const two = effortPoints(samples, S, at(2, 0), { max: 200 })
  t.same(two.minutes.map(m => m.points), [4, 1])
  t.equal(two.total, 5)
  t.equal(completedMinutes(S, at(0, 59)), 0)
  t.equal(completedMinutes(S, S - 5000), 0)
})

t.test('the average, not each reading, picks the zone; avg_bpm is rounded to 0.1 bpm', async t => {
  // 100, 101, 101 → 100.666… (50.3 % → 50 %: zone 1); 119 alone is 59.5 % → 60 %: zone 2 (the display's rounding).
  const samples = [{ t: at(0, 1), bpm: 100 }, { t: at(0, 2), bpm: 101 }, { t: at(0, 3), bpm: 101 }, { t: at(1, 0), bpm: 119 }, { t: at(2, 0), bpm: 60 }, { t: at(2, 1), bpm: 250 }]
  const e = effortPoints(samples, S, at(3, 0), { max: 200 })
  t.same(e.minutes, [
    { minute: 0, avg_bpm: 100.7, zone: 1, points: 1 },
    { minute: 1, avg_bpm: 119, zone: 2, points: 2 },
    { minute: 2, avg_bpm: 155, zone: 3, points: 3 } // 60 and 250: avg 155 = 77.5 % → 78 %: zone 3
  ])
  t.equal(e.total, 6)
})

t.test('the member\'s zone bounds and maximum', async t => {
  // Maximum 180, bounds 55/65/75/85/92: 150 bpm is 83 % → zone 3 (it would be zone 4 by the default bounds).
  const e = effortPoints([{ t: at(0, 5), bpm: 150 }], S, at(1, 0), { max: 180, bounds: [55, 65, 75, 85, 92] })
  t.same(e.minutes, [{ minute: 0, avg_bpm: 150, zone: 3, points: 3 }])
  t.equal(effortPoints([{ t: at(0, 5), bpm: 150 }], S, at(1, 0), { max: 180 }).total, 4)
})

t.test('no readings: every completed minute earns nothing', async t => {
  const e = effortPoints([], S, at(3, 0), { max: 200 })
  t.equal(e.total, 0)
  t.same(e.minutes.map(m => m.avg_bpm), [null, null, null])
  t.same([0, 1, 2, 3, 4, 5].map(zonePoints), [0, 1, 2, 3, 4, 4])
})
