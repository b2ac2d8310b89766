// From ANT+ heart-rate pages to readings: one reading per strap per second at most, the RR intervals of the new
// beats (differences of event times in 1/1024 s, across the 16-bit wrap), nothing while the count stands still,
// and no RR value for beats the count says were missed. Expected values are worked out by hand in the comments.
import t from 'tap'
import { encodeHeartRatePage, type HeartRatePageInput } from '../../firmware-protocol/ant.ts'
import { AntHeartRateBeats, eventTimeDiff } from '../../firmware-protocol/ant-heart-rate.ts'

function feed (beats: AntHeartRateBeats, p: HeartRatePageInput, now: number): ReturnType<AntHeartRateBeats['page']> {
  return beats.payload(encodeHeartRatePage(p), now)
}

t.test('event-time differences across the 16-bit wrap', async t => {
  t.equal(eventTimeDiff(1024, 0), 1024)
  t.equal(eventTimeDiff(100, 65_000), 636, '65536 - 65000 + 100')
  t.equal(eventTimeDiff(0, 0), 0)
})

t.test('the first page only sets the state; a new beat then gives its RR and the computed rate', async t => {
  const b = new AntHeartRateBeats()
  t.equal(feed(b, { page: 0, eventTime: 1000, beatCount: 10, heartRate: 60 }, 0), undefined)
  // Beat 11 at 2024: 1024 ticks = 1000 ms.
  t.same(feed(b, { page: 0, eventTime: 2024, beatCount: 11, heartRate: 60 }, 1000), { heart_rate: 60, rr_intervals_ms: [1000] })
})

t.test('repeated pages with the same count add nothing and store nothing', async t => {
  const b = new AntHeartRateBeats()
  feed(b, { page: 0, eventTime: 1000, beatCount: 10, heartRate: 60 }, 0)
  for (let i = 1; i <= 12; i++) t.equal(feed(b, { page: 0, eventTime: 1000, beatCount: 10, heartRate: 60 }, i * 246), undefined, `page ${i}`)
})

t.test('at most one reading a second, carrying every new beat of that second', async t => {
  const b = new AntHeartRateBeats()
  feed(b, { page: 4, eventTime: 0, beatCount: 0, heartRate: 150, previousEventTime: 0 }, 0)
  // 150 bpm: a beat every 409.6 ticks (400 ms); pages at 4 Hz.
  t.same(feed(b, { page: 4, eventTime: 410, beatCount: 1, heartRate: 150, previousEventTime: 0 }, 1100), { heart_rate: 150, rr_intervals_ms: [400] }, '410 ticks = 400.4 ms')
  t.equal(feed(b, { page: 4, eventTime: 819, beatCount: 2, heartRate: 150, previousEventTime: 410 }, 1350), undefined, 'within the second: held')
  t.equal(feed(b, { page: 4, eventTime: 1229, beatCount: 3, heartRate: 151, previousEventTime: 819 }, 1600), undefined)
  t.equal(feed(b, { page: 4, eventTime: 1229, beatCount: 3, heartRate: 151, previousEventTime: 819 }, 1850), undefined)
  // 409 ticks = 399.4 ms, 410 ticks = 400.4 ms.
  t.same(feed(b, { page: 4, eventTime: 1229, beatCount: 3, heartRate: 151, previousEventTime: 819 }, 2100), { heart_rate: 151, rr_intervals_ms: [399, 400] })
})

t.test('RR across the event-time wrap', async t => {
  const b = new AntHeartRateBeats()
  feed(b, { page: 0, eventTime: 65_000, beatCount: 200, heartRate: 90 }, 0)
  // 65000 → 100 is 636 ticks = 621.1 ms; the count wraps too (255 → 0 is one beat further on below).
  t.same(feed(b, { page: 0, eventTime: 100, beatCount: 201, heartRate: 90 }, 1000), { heart_rate: 90, rr_intervals_ms: [621] })
  const c = new AntHeartRateBeats()
  feed(c, { page: 0, eventTime: 65_500, beatCount: 255, heartRate: 90 }, 0)
  t.same(feed(c, { page: 0, eventTime: 600, beatCount: 0, heartRate: 90 }, 1000), { heart_rate: 90, rr_intervals_ms: [621] }, '255 → 0 is one beat; 65500 → 600 is 636 ticks')
})

t.test('missed beats give no RR value; page 4 still gives the last beat\'s own', async t => {
  const plain = new AntHeartRateBeats()
  feed(plain, { page: 0, eventTime: 0, beatCount: 0, heartRate: 120 }, 0)
  // Three beats in one step (two missed pages): no RR can be computed from page 0.
  t.same(feed(plain, { page: 0, eventTime: 1536, beatCount: 3, heartRate: 120 }, 1500), { heart_rate: 120, rr_intervals_ms: [] })
  const p4 = new AntHeartRateBeats()
  feed(p4, { page: 4, eventTime: 0, beatCount: 0, heartRate: 120, previousEventTime: 0 }, 0)
  // Page 4: the previous beat was at 1024, so the last beat's RR is 512 ticks = 500 ms; the two before were missed.
  t.same(feed(p4, { page: 4, eventTime: 1536, beatCount: 3, heartRate: 120, previousEventTime: 1024 }, 1500), { heart_rate: 120, rr_intervals_ms: [500] })
})

t.test('page 7\'s battery level rides on the readings', async t => {
  const b = new AntHeartRateBeats()
  feed(b, { page: 7, eventTime: 0, beatCount: 0, heartRate: 70, batteryPercent: 64, batteryStatus: 3 }, 0)
  t.equal(b.batteryPercent, 64)
  t.same(feed(b, { page: 0, eventTime: 878, beatCount: 1, heartRate: 70 }, 1000), { heart_rate: 70, rr_intervals_ms: [857], battery_percent: 64 }, '878 ticks = 857.4 ms')
})

t.test('a strap heard again after a long silence starts over instead of taking a stale difference', async t => {
  const b = new AntHeartRateBeats()
  feed(b, { page: 0, eventTime: 1000, beatCount: 10, heartRate: 60 }, 0)
  t.equal(feed(b, { page: 0, eventTime: 2024, beatCount: 11, heartRate: 60 }, 70_000), undefined, 'the first page after 70 s only sets the state')
  t.same(feed(b, { page: 0, eventTime: 3048, beatCount: 12, heartRate: 60 }, 71_000), { heart_rate: 60, rr_intervals_ms: [1000] })
})

t.test('a computed rate of 0 (invalid) makes no reading and drops its beats', async t => {
  const b = new AntHeartRateBeats()
  feed(b, { page: 0, eventTime: 0, beatCount: 0, heartRate: 0 }, 0)
  t.equal(feed(b, { page: 0, eventTime: 1024, beatCount: 1, heartRate: 0 }, 1000), undefined)
  t.same(feed(b, { page: 0, eventTime: 2048, beatCount: 2, heartRate: 61 }, 2000), { heart_rate: 61, rr_intervals_ms: [1000] })
})

t.test('a reading carries at most the contract\'s 64 RR values, the newest', async t => {
  const b = new AntHeartRateBeats(50_000)
  feed(b, { page: 0, eventTime: 0, beatCount: 0, heartRate: 100 }, 0)
  // The first beat makes a reading at once; then 70 beats held by a long interval.
  feed(b, { page: 0, eventTime: 600, beatCount: 1, heartRate: 100 }, 1)
  let r
  for (let i = 2; i <= 71; i++) r = feed(b, { page: 0, eventTime: 600 * i + (i === 71 ? 14 : 0), beatCount: i, heartRate: 100 }, i < 71 ? i : 60_000)
  t.equal(r?.rr_intervals_ms.length, 64)
  t.equal(r?.rr_intervals_ms.at(-1), 600, 'the last beat: 614 ticks = 599.6 ms')
})
