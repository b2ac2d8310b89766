// Sessions and HRV (api/sessions.ts): a hand-checked RR series, a reference
// computation written out plainly against the module on series with
// artefacts, session splitting and the per-session summary.
import t from 'tap'
import fc from 'fast-check'
import { hrv, splitSessions, summarise, zoneIndex, type SessionReading } from '../../api/sessions.ts'
import { kcal } from '../../api/stats.ts'

/** The definition, step by step: flag each RR, then use flags of neighbours in the original order. */
function reference (rr: number[]): { rmssd: number | null, sdnn: number | null, dropped: number } {
  const ok: boolean[] = []
  let lastAccepted: number | null = null
  for (const v of rr) {
    let good = v >= 300 && v <= 2000
    if (good && lastAccepted !== null && Math.abs(v - lastAccepted) > 0.2 * lastAccepted) good = false
    ok.push(good)
    if (good) lastAccepted = v
  }
  const accepted = rr.filter((_v, i) => ok[i])
  const diffs: number[] = []
  for (let i = 1; i < rr.length; i++) if (ok[i] === true && ok[i - 1] === true) diffs.push(rr[i]! - rr[i - 1]!)
  const mean = accepted.reduce((a, b) => a + b, 0) / accepted.length
  const variance = accepted.map(v => (v - mean) ** 2).reduce((a, b) => a + b, 0) / accepted.length
  return {
    rmssd: diffs.length === 0 ? null : Math.sqrt(diffs.map(d => d * d).reduce((a, b) => a + b, 0) / diffs.length),
    sdnn: accepted.length < 2 ? null : Math.sqrt(variance),
    dropped: rr.length - accepted.length
  }
}

t.test('a small series by hand', async t => {
  // 250 is below 300 ms, 1000 differs from 820 by 180 > 20 % of 820 (164).
  // Accepted 800 810 820 830 845; pairs 800-810 (10) and 830-845 (15); 810-820 and 820-830 had a dropped RR between.
  // RMSSD = sqrt((10² + 15²) / 2) = sqrt(162.5) = 12.75; mean 821, SDNN = sqrt((21²+11²+1²+9²+24²) / 5) = sqrt(244) = 15.62.
  t.same(hrv([800, 810, 250, 820, 1000, 830, 845]), { rmssd_ms: 12.75, sdnn_ms: 15.62, rr_count: 5, rr_dropped: 2 })
  t.same(hrv([]), { rmssd_ms: null, sdnn_ms: null, rr_count: 0, rr_dropped: 0 })
  t.same(hrv([2500, 100]), { rmssd_ms: null, sdnn_ms: null, rr_count: 0, rr_dropped: 2 })
  t.same(hrv([1000, 1200, 1440]), { rmssd_ms: 220.91, sdnn_ms: 179.88, rr_count: 3, rr_dropped: 0 }, 'a change of exactly 20 % is kept')
  t.same(hrv([1000, 1200, 1441]), { rmssd_ms: 200, sdnn_ms: 100, rr_count: 2, rr_dropped: 1 }, '241 ms is more than 20 % of 1200: dropped')
})

t.test('the module agrees with the reference on series with artefacts', async t => {
  // A fixed series: a steady rhythm with ectopic beats, missed beats and out-of-range values.
  const fixed: number[] = []
  for (let i = 0; i < 400; i++) {
    const base = 800 + 40 * Math.sin(i / 7)
    fixed.push(i % 37 === 5 ? Math.round(base / 2) : i % 53 === 9 ? Math.round(base * 2) : i % 71 === 3 ? 250 : i % 89 === 4 ? 2400 : Math.round(base))
  }
  const want = reference(fixed)
  const got = hrv(fixed)
  t.ok(want.dropped > 10, `${want.dropped} artefacts in the fixed series`)
  t.equal(got.rr_dropped, want.dropped)
  t.equal(got.rmssd_ms, Math.round(want.rmssd! * 100) / 100)
  t.equal(got.sdnn_ms, Math.round(want.sdnn! * 100) / 100)
  fc.assert(fc.property(fc.array(fc.integer({ min: 100, max: 2600 }), { maxLength: 60 }), rr => {
    const r = reference(rr)
    const h = hrv(rr)
    const r2 = (v: number | null): number | null => v === null ? null : Math.round(v * 100) / 100
    return h.rr_dropped === r.dropped && h.rmssd_ms === r2(r.rmssd) && h.sdnn_ms === r2(r.sdnn)
  }), { seed: 13 })
})

t.test('sessions split at gaps longer than the session gap', async t => {
  const at = (...ts: number[]): Array<{ measured_at: number }> => ts.map(measured_at => ({ measured_at }))
  t.same(splitSessions(at(0, 1000, 301_000, 601_001, 602_000), 300_000).map(s => s.map(r => r.measured_at)), [[0, 1000, 301_000], [601_001, 602_000]], 'exactly the gap stays in the session; 1 ms more starts a new one')
  t.same(splitSessions([], 300_000), [])
})

t.test('a session summary', async t => {
  // Max heart rate 200: 100 bpm is 50 % (zone 1), 150 is 75 % (zone 3), 185 is 93 % (zone 5), 90 is 45 % (no zone).
  const rs: SessionReading[] = [
    { measured_at: 10_000, heart_rate: 90 },
    { measured_at: 11_000, heart_rate: 100, rr_intervals_ms: [600] },
    { measured_at: 12_000, heart_rate: 100, rr_intervals_ms: [610, 620] },
    { measured_at: 14_000, heart_rate: 150 },
    { measured_at: 34_000, heart_rate: 185 },
    { measured_at: 35_000, heart_rate: 185 }
  ]
  const body = { age: 20, weight_kg: 70, sex: 'female' as const }
  const s = summarise(rs, { streamGapMs: 5000, maxHeartRate: 200, body })
  // Credits: 0, 1 s, 1 s, 2 s, 0 (20 s > stream gap), 1 s.
  t.same(s.zones_s, [2, 0, 2, 0, 1])
  t.equal(s.kcal, Math.round(kcal(5000, 100 * 1000 + 100 * 1000 + 150 * 2000 + 185 * 1000, body) * 10) / 10)
  t.same({ id: s.id, start: s.start, end: s.end, duration_s: s.duration_s, readings: s.readings, avg: s.avg, min: s.min, max: s.max }, { id: '10000', start: 10_000, end: 35_000, duration_s: 25, readings: 6, avg: 135, min: 90, max: 185 })
  t.same({ rmssd: s.rmssd_ms, sdnn: s.sdnn_ms, dropped: s.rr_dropped }, { rmssd: 10, sdnn: 8.16, dropped: 0 })
  t.equal(zoneIndex(98, 200), 0, '49 %: below zone 1')
  t.equal(zoneIndex(99, 200), 1, '49.5 % rounds to 50 %, as on the room display')
  t.equal(zoneIndex(179, 200), 5, '89.5 % rounds to 90 %')
})
