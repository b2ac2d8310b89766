// The benchmark harness's own helpers: percentiles, latency joins, result
// files and the worker RPC. No timing is asserted here (figures belong to
// `npm run bench`); this keeps the harness compiling and correct.
import t from 'tap'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fmt, joinLatencies, percentile, ratio, summarize } from '../../bench/lib/stats.ts'
import { deliveryMany, deliveryOne, receiptsWhenComplete } from '../../bench/lib/latency.ts'
import type { Receipts } from '../../bench/workers/ws-viewers.ts'
import { figure, formatTable, writeResult, type ScenarioResult } from '../../bench/lib/results.ts'
import { pool } from '../../bench/lib/admin.ts'
import { bothOrNeither, reuseWorkers, stopIdleWorkers, Worker } from '../../bench/lib/proc.ts'
import { syntheticReading } from '../../bench/lib/synthetic.ts'

t.test('percentile is nearest-rank', async t => {
  const xs = Array.from({ length: 100 }, (_, i) => i + 1)
  t.equal(percentile(xs, 50), 50)
  t.equal(percentile(xs, 99), 99)
  t.equal(percentile(xs, 100), 100)
  t.equal(percentile(xs, 0), 1)
  t.equal(percentile([7], 99), 7)
  t.ok(Number.isNaN(percentile([], 50)))
  t.throws(() => percentile(xs, 101), RangeError)
})

t.test('summarize sorts numerically, not as strings', async t => {
  const s = summarize([10, 9, 100, 1, 2])
  t.same(s, { count: 5, min: 1, p50: 9, p90: 100, p99: 100, max: 100, mean: 24.4 })
  t.equal(summarize([]).count, 0)
  t.ok(Number.isNaN(summarize([]).p99))
})

t.test('ratio and fmt', async t => {
  t.equal(ratio(30, 10), 3)
  t.ok(Number.isNaN(ratio(1, 0)))
  t.equal(fmt(1234.4), '1,234')
  t.equal(fmt(12.34), '12.3')
  t.equal(fmt(1.234), '1.23')
  t.equal(fmt(0.01234), '0.0123')
})

t.test('joinLatencies pairs by key and lists the lost', async t => {
  const sent = new Map([['0:1000', 5], ['0:2000', 10], ['1:1000', 7]])
  const got = new Map([['0:1000', 6.5], ['1:1000', 9], ['9:9', 1]])
  const r = joinLatencies(sent, got)
  t.same(r.latencies, [1.5, 2])
  t.same(r.lost, ['0:2000'])
})

t.test('deliveryOne counts the first receipt; deliveryMany counts every viewer', async t => {
  const sends = new Map([['0:1000', 100], ['0:2000', 200], ['1:1000', 300]])
  const receipts = { labels: Int32Array.from([0, 0, 1]), measuredAt: Float64Array.from([1000, 1000, 1000]), heartRates: Float64Array.from([70, 70, 71]), times: Float64Array.from([101, 150, 303]), closed: 0, garbage: 0 }
  const one = deliveryOne(sends, receipts)
  t.equal(one.lost, 1)
  t.equal(one.received, 2)
  t.equal(one.summary.max, 3)
  // Two viewers of label 0, one of label 1: 0:1000 reached both, 0:2000 neither, 1:1000 its one viewer.
  const many = deliveryMany(sends, [receipts], new Map([[0, 2], [1, 1]]))
  t.equal(many.expected, 5)
  t.equal(many.received, 3)
  t.equal(many.lost, 2)
  t.same([many.summary.min, many.summary.max], [1, 50])
})

t.test('result files and tables', async t => {
  const dir = await mkdtemp(join(tmpdir(), 'bench-test-'))
  t.teardown(async () => { await rm(dir, { recursive: true, force: true }) })
  const result: ScenarioResult = {
    scenario: 'demo',
    quick: true,
    started_at: '2026-01-01T00:00:00.000Z',
    duration_s: 1,
    machine: { cores: 2, cpu: 'x', node: 'v20' },
    reference: 'nothing',
    figures: [figure('p99', 12, 'ms', { name: 'ref', value: 4 }, { text: 'p99 <= 10 ms', met: false }), figure('nan', Number.NaN, 'ms')],
    lost: 0,
    notes: ['a note']
  }
  t.equal(result.figures[0]?.ratio, 3)
  const file = await writeResult(dir, result)
  t.equal(file, join(dir, 'demo.json'))
  const back = JSON.parse(await readFile(file, 'utf8'))
  t.equal(back.figures[0].ratio, 3)
  t.equal(back.figures[1].value, null, 'NaN is written as null, keeping the file valid JSON')
  const table = formatTable(result)
  t.match(table, /== demo \(--quick\): reference = nothing/)
  t.match(table, /p99\s+12\.0\s+ms\s+4\.00 \(ref\)\s+3\.00x\s+NOT MET: p99 <= 10 ms/)
  t.match(table, /note: a note/)
  t.match(formatTable({ ...result, error: 'dependency missing: x' }), /FAILED: dependency missing: x/)
})

t.test('pool keeps order and bounds concurrency', async t => {
  let inFlight = 0; let most = 0
  const out = await pool([1, 2, 3, 4, 5, 6, 7], 3, async x => {
    inFlight++; most = Math.max(most, inFlight)
    await new Promise(resolve => setImmediate(resolve))
    inFlight--
    return x * 2
  })
  t.same(out, [2, 4, 6, 8, 10, 12, 14])
  t.equal(most, 3)
})

t.test('synthetic readings: 1 Hz with a 10 s gap each hour', async t => {
  t.same(syntheticReading('p', 1000, 0), { profile_id: 'p', measured_at: 1000, heart_rate: 55, source: 'sim' })
  t.equal(syntheticReading('p', 0, 3589)?.measured_at, 3_589_000)
  t.equal(syntheticReading('p', 0, 3590), undefined)
  t.equal(syntheticReading('p', 0, 3600)?.measured_at, 3_600_000)
})

t.test('a worker process answers calls and reports failures', async t => {
  const w = await Worker.start('workers/fastify-ref.ts')
  t.teardown(async () => { await w.stop() })
  t.ok(w.pid > 0 && w.pid !== process.pid, 'runs in its own process')
  const url = await w.call<string>('start')
  const res = await fetch(`${url}/api/v1/data/heart_rate/latest`)
  t.equal(res.status, 200)
  t.same(await res.json(), { measured_at: 1_700_000_000_000, data: { heart_rate: 72 } })
  await t.rejects(w.call('nope'), /workers\/fastify-ref\.ts\.nope: no handler nope/)
  await w.call('stop')
  await w.stop()
  await t.rejects(w.call('ping'), /not running/)
})

t.test('the ingest histogram is read from Prometheus text', async t => {
  const { parseIngestHistogram, bucketPercentile } = await import('../../bench/lib/metrics.ts')
  const text = [
    '# HELP hr_relay_ingest_latency_seconds Time from submit to durable write',
    'hr_relay_ingest_latency_seconds_bucket{le="0.001"} 10',
    'hr_relay_ingest_latency_seconds_bucket{le="0.05"} 98',
    'hr_relay_ingest_latency_seconds_bucket{le="0.1"} 100',
    'hr_relay_ingest_latency_seconds_bucket{le="+Inf"} 100',
    'hr_relay_ingest_latency_seconds_sum 1.5',
    'hr_relay_ingest_latency_seconds_count 100'
  ].join('\n')
  const h = parseIngestHistogram(text)
  t.equal(h?.count, 100)
  t.equal(h?.meanMs, 15)
  t.same(h?.buckets.map(b => b.leMs), [1, 50, 100])
  t.equal(bucketPercentile(h!, 50), 50)
  t.equal(bucketPercentile(h!, 99), 100)
  t.equal(parseIngestHistogram('nothing'), undefined)
})

t.test('--quick keeps a stopped worker that can reset and hands it to the next start of the same file', async t => {
  reuseWorkers(true)
  t.teardown(async () => { reuseWorkers(false); await stopIdleWorkers() })
  const a = await Worker.start('workers/store-loader.ts')
  await a.stop()
  const b = await Worker.start('workers/store-loader.ts')
  t.equal(b.pid, a.pid, 'the same process again')
  t.equal(await b.call('ping'), 'pong')
  const other = await Worker.start('workers/store-loader.ts')
  t.not(other.pid, b.pid, 'a worker in use is never handed out twice')
  await other.stop()
  // fastify-ref has no reset handler: stop() ends it.
  const ref = await Worker.start('workers/fastify-ref.ts')
  await ref.stop()
  await t.rejects(ref.call('ping'), /not running/)
  await b.stop()
  await b.stop() // a second stop does not keep it twice
  await stopIdleWorkers()
  await t.rejects(b.call('ping'), /not running/)
  await t.rejects(other.call('ping'), /not running/)
})

t.test('bothOrNeither stops the one that started when the other fails', async t => {
  let stopped = 0
  const ok = { stop: async () => { stopped++ } }
  await t.rejects(bothOrNeither(Promise.resolve(ok), Promise.reject(new Error('boom'))), /boom/)
  t.equal(stopped, 1)
  t.same(await bothOrNeither(Promise.resolve(ok), Promise.resolve(ok)), [ok, ok])
  t.equal(stopped, 1)
})

function receipts (n: number): Receipts {
  const xs = Array.from({ length: n }, (_, i) => i)
  return { labels: Int32Array.from(xs.map(() => 0)), measuredAt: Float64Array.from(xs), heartRates: Float64Array.from(xs), times: Float64Array.from(xs), closed: 0, garbage: 0 }
}

/** A receiver that has `arrived()` receipts so far (measured_at 0, 1, ...). */
function fakeReceiver (arrived: () => number): { worker: Worker, calls: string[] } {
  const calls: string[] = []
  const worker = { call: async (method: string) => { calls.push(method); return method === 'count' ? arrived() : receipts(arrived()) } } as unknown as Worker
  return { worker, calls }
}

t.test('the straggler wait ends once every expected receipt is in, and at its limit otherwise', async t => {
  const sends = new Map([['0:0', 0], ['0:1', 0], ['0:2', 0]])
  const missing = (rs: Receipts[]): number => deliveryOne(sends, rs[0] as Receipts).lost
  let n = 1
  const growing = fakeReceiver(() => Math.min(3, n++))
  const started = Date.now()
  const [got] = await receiptsWhenComplete([growing.worker], 3, missing, 10_000)
  t.equal(got?.times.length, 3)
  t.ok(Date.now() - started < 5000, 'did not wait for the limit')
  t.equal(growing.calls.at(-1), 'collect', 'recording stopped')
  t.equal(growing.calls.filter(c => c === 'count').length, 3)

  const stuck = fakeReceiver(() => 2)
  const t0 = Date.now()
  const [partial] = await receiptsWhenComplete([stuck.worker], 3, missing, 300)
  t.ok(Date.now() - t0 >= 300, 'waited the whole limit')
  t.equal(partial?.times.length, 2)
  t.equal(missing([partial as Receipts]), 1)
})
