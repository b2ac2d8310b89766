// The stall figures of e2e-latency: hr-relay's GC and event-loop figures read
// from its own /metrics text (relay/metrics.ts, prom-client's default metrics)
// for one window only, the same figures recorded in a reference's worker, and
// its pipeline histogram for one window.
import t from 'tap'
import { Metrics } from '../../relay/metrics.ts'
import { bucketPercentile, histogramBetween, parseIngestHistogram } from '../../bench/lib/metrics.ts'
import { figure } from '../../bench/lib/results.ts'
import { parseRuntime, runtimeBetween, runtimeRecorder } from '../../bench/lib/runtime-window.ts'

/** Blocks the event loop for `ms` (a stall the loop monitors must see). */
function block (ms: number): void {
  const until = performance.now() + ms
  while (performance.now() < until) { /* busy */ }
}

/** Allocates ~64 MB of short-lived objects: more than any young generation holds, so V8 scavenges. */
function churn (): number {
  // Each object outlives its iteration (a ring of 1,000), so escape analysis cannot remove the allocation.
  const ring: Array<{ i: number, twice: number }> = new Array(1000)
  for (let i = 0; i < 2_000_000; i++) ring[i % 1000] = { i, twice: i * 2 }
  return ring.length
}

/** Lets the loop's timer tick and V8's gc performance entries reach their observers. */
const ticks = async (): Promise<void> => { for (let i = 0; i < 3; i++) await new Promise(resolve => setTimeout(resolve, 15)) }

t.test('hr-relay /metrics: the GC pauses and the event-loop lateness of one window, not of the time before it', async t => {
  const metrics = new Metrics({ defaultMetrics: true })
  await ticks()
  // Before the window, and longer than anything inside it can take even beside CPU hogs: must not show in it.
  block(1000)
  await ticks()
  const started = performance.now()
  const before = parseRuntime((await metrics.text()).body, started)
  if (before === undefined) throw new Error('no runtime figures in /metrics')
  await ticks()
  churn()
  block(40)
  await ticks()
  const ended = performance.now()
  const after = parseRuntime((await metrics.text()).body, ended)
  // No timer in the window can be later than the window is long (on a loaded machine the churn alone can take a second).
  const inWindowMs = ended - started
  if (after === undefined) throw new Error('no runtime figures in /metrics')
  const w = runtimeBetween(before, after)
  t.ok(w.gcPauses >= 1, `GC pauses in the window: ${w.gcPauses}`)
  t.ok(w.gcMs > 0, `GC time in the window: ${w.gcMs} ms`)
  t.ok(w.loopLateMaxMs >= 25, `the 40 ms block made a 10 ms timer late by ${w.loopLateMaxMs} ms`)
  // The 1000 ms block before the window would show as a timer about 1000 ms late, in a window that (on a machine
  // that is not starved) is much shorter.
  t.ok(w.loopLateMaxMs <= inWindowMs + 20, `the 1000 ms block before the window is not in it: late by ${w.loopLateMaxMs} ms in a window of ${inWindowMs.toFixed(0)} ms`)
  t.ok(w.loopLateP99Ms <= w.loopLateMaxMs)
  t.ok(w.seconds > 0.04 && w.seconds < 30, `window ${w.seconds} s`)
})

t.test('a server without the runtime figures gives none', async t => {
  t.equal(parseRuntime('# no metrics\nhr_relay_readings_stored_total 3\n', 0), undefined)
})

t.test('before its first collection a server exports the event loop and no GC sample: no pause yet', async t => {
  const loop = 'hr_relay_nodejs_eventloop_lag_max_seconds 0.014\nhr_relay_nodejs_eventloop_lag_p99_seconds 0.012\n'
  t.same(parseRuntime(loop, 5), { at: 5, gcPauses: 0, gcMs: 0, loopP99Ms: 12, loopMaxMs: 14 })
  const gc = 'hr_relay_nodejs_gc_duration_seconds_sum{kind="minor"} 0.002\nhr_relay_nodejs_gc_duration_seconds_count{kind="minor"} 3\n' +
    'hr_relay_nodejs_gc_duration_seconds_sum{kind="major"} 0.004\nhr_relay_nodejs_gc_duration_seconds_count{kind="major"} 1\n'
  t.same(parseRuntime(loop + gc, 6), { at: 6, gcPauses: 4, gcMs: 6, loopP99Ms: 12, loopMaxMs: 14 })
})

t.test('a reference worker records the same figures for its window', async t => {
  const rec = runtimeRecorder()
  rec.start()
  await ticks()
  churn()
  block(150) // far more than a quiet window's timer is late, even beside CPU hogs
  await ticks()
  const w = rec.end()
  t.ok(w.gcPauses >= 1, `GC pauses: ${w.gcPauses}`)
  t.ok(w.gcMs > 0)
  t.ok(w.loopLateMaxMs >= 130, `the 150 ms block made a 10 ms timer late by ${w.loopLateMaxMs} ms`)
  t.ok(w.seconds >= 0.04, `window ${w.seconds} s`)
  // A second window starts from nothing.
  rec.start()
  await ticks()
  const quiet = rec.end()
  t.ok(quiet.gcPauses < w.gcPauses || quiet.gcMs < w.gcMs, 'the second window does not carry the first one\'s pauses')
  t.ok(quiet.loopLateMaxMs < w.loopLateMaxMs, 'nor its lateness')
})

t.test('the pipeline histogram of one window: the observations between two scrapes', async t => {
  const metrics = new Metrics()
  for (let i = 0; i < 3; i++) metrics.observeIngestLatency(0.002)
  const a = parseIngestHistogram((await metrics.text()).body)
  metrics.observeIngestLatency(0.02)
  metrics.observeIngestLatency(0.02)
  const b = parseIngestHistogram((await metrics.text()).body)
  if (a === undefined || b === undefined) throw new Error('no ingest histogram in /metrics')
  const w = histogramBetween(a, b)
  t.equal(w.count, 2)
  t.ok(Math.abs(w.meanMs - 20) < 1e-6, `mean ${w.meanMs} ms`)
  t.equal(bucketPercentile(w, 99), 25)
  t.equal(bucketPercentile(b, 50), 2.5, 'the whole histogram still holds the earlier readings')
})

t.test('a figure against a zero reference has no ratio (not NaN)', async t => {
  const f = figure('main thread in GC pauses', 12, 'ms/s', { name: 'bare Aedes', value: 0 })
  t.equal(f.ratio, undefined)
  t.same(f.reference, { name: 'bare Aedes', value: 0 })
  t.equal(figure('x', 12, 'ms', { name: 'r', value: 4 }).ratio, 3)
})
