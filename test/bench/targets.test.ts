// The targets of issue 39's rows (bench/lib/targets.ts): each line, and each side of it.
import t from 'tap'
import { classStreamingTarget, fanoutTarget, ingestTarget, INGEST_PER_SECOND, latestHttpTarget, p99Target, PI_INGEST_PER_SECOND } from '../../bench/lib/targets.ts'

t.test('latest-http: at least 0.8x bare Fastify, and no failed answer', async t => {
  t.same(latestHttpTarget(80_000, 100_000, 0), { text: '>= 0.8x bare Fastify', met: true })
  t.same(latestHttpTarget(79_999, 100_000, 0), { text: '>= 0.8x bare Fastify', met: false })
  t.same(latestHttpTarget(120_000, 100_000, 1), { text: '>= 0.8x bare Fastify', met: false }, 'one non-2xx misses it')
})

t.test('ws-fanout: p99 at most 1.2x bare ws', async t => {
  t.same(fanoutTarget(12, 10), { text: 'p99 <= 1.2x bare ws', met: true })
  t.same(fanoutTarget(12.01, 10), { text: 'p99 <= 1.2x bare ws', met: false })
})

t.test('ingest: 10,000/s on 2 cores, 3,000/s on one, every acknowledged reading stored', async t => {
  t.same(ingestTarget(10_000, 0, INGEST_PER_SECOND), { text: '>= 10,000 readings/s, every one stored', met: true })
  t.same(ingestTarget(9_999, 0, INGEST_PER_SECOND), { text: '>= 10,000 readings/s, every one stored', met: false })
  t.same(ingestTarget(40_000, 1, INGEST_PER_SECOND), { text: '>= 10,000 readings/s, every one stored', met: false }, 'one lost reading misses it')
  t.same(ingestTarget(3_000, 0, PI_INGEST_PER_SECOND), { text: '>= 3,000 readings/s, every one stored', met: true })
  t.same(ingestTarget(2_999, 0, PI_INGEST_PER_SECOND), { text: '>= 3,000 readings/s, every one stored', met: false })
})

t.test('e2e at 200 devices: a p99 line in ms', async t => {
  t.same(p99Target(10, 10), { text: 'p99 <= 10 ms', met: true })
  t.same(p99Target(10.01, 10), { text: 'p99 <= 10 ms', met: false })
  t.same(p99Target(Number.NaN, 50), { text: 'p99 <= 50 ms', met: false }, 'no figure is not a pass')
})

t.test('class: all straps streaming within 30 s of pairing', async t => {
  t.same(classStreamingTarget(30, 40, 40), { text: 'all 40 within 30 s', met: true })
  t.same(classStreamingTarget(30.1, 40, 40), { text: 'all 40 within 30 s', met: false })
  t.same(classStreamingTarget(2, 39, 40), { text: 'all 40 within 30 s', met: false }, 'a strap that never streams misses it however fast the others were')
})
