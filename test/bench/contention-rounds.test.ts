// e2e-latency's contention rounds: hr-relay and the reference in alternating
// order, each window with every process of the other side stopped, and the
// round whose p99 ratio is the median reported. The sides here are real
// processes (`sleep`) whose state is read from /proc during each window.
import t from 'tap'
import { spawn, type ChildProcess } from 'node:child_process'
import { processState } from '../../bench/lib/cpu.ts'
import { once } from 'node:events'
import { contentionRounds, type Measured, type RefDelivery, type Side } from '../../bench/e2e-latency.ts'
import type { Delivery } from '../../bench/lib/latency.ts'
import type { PublishReport } from '../../bench/workers/mqtt-devices.ts'

/** The state letter of a process that must still be there. */
async function stateOf (pid: number): Promise<string> {
  const state = await processState(pid)
  if (state === undefined) throw new Error(`process ${pid} is gone`)
  return state
}

async function sleeper (): Promise<ChildProcess> {
  const child = spawn('sleep', ['60'], { stdio: 'ignore' })
  await once(child, 'spawn')
  return child
}

const delivery = (p99: number): Delivery => ({ summary: { count: 100, min: 0, p50: p99 / 2, p90: p99, p99, max: p99, mean: p99 / 2 }, lost: 0, expected: 100, received: 100 })
const report = { sent: 100, acked: 100, failed: 0, unacked: 0, ackLatencies: new Float64Array(), sends: new Map(), disconnects: 0, achievedRate: 100, maxLagMs: 0 } as unknown as PublishReport

t.test('contention rounds alternate the sides, stop the other side during each window and report the median round', async t => {
  const procs = await Promise.all([sleeper(), sleeper(), sleeper(), sleeper()])
  t.teardown(() => { for (const p of procs) { p.kill('SIGCONT'); p.kill('SIGKILL') } })
  const pids = procs.map(p => p.pid as number)
  const oursPids = pids.slice(0, 2)
  const refPids = pids.slice(2)
  const calls: string[] = []
  const seen: string[] = []
  // p99 per call: hr-relay 10, 50, 20; the reference 10 each: ratios 1, 5, 2 (the median round is the third).
  const oursP99 = [10, 50, 20]
  const refP99 = [10, 10, 10]
  const states = async (own: number[], other: number[]): Promise<string> =>
    `${(await Promise.all(own.map(stateOf))).map(s => s === 'T' ? 'T' : 'run').join(',')} / ${(await Promise.all(other.map(stateOf))).map(s => s === 'T' ? 'T' : 'run').join(',')}`
  const ours: Side<Measured> = {
    pid: oursPids[0] as number,
    pids: oursPids,
    async window (windowMs, placement) {
      t.equal(windowMs, 250); t.same(placement, { hog: true })
      calls.push('ours'); seen.push(await states(oursPids, refPids))
      return { d: delivery(oursP99.shift() as number), report }
    },
    async close () {}
  }
  const ref: Side<RefDelivery> = {
    pid: refPids[0] as number,
    pids: refPids,
    async window () {
      calls.push('ref'); seen.push(await states(refPids, oursPids))
      return delivery(refP99.shift() as number)
    },
    async close () {}
  }
  const logged: string[] = []
  const out = await contentionRounds({ quick: false, log: line => { logged.push(line) } }, { ours, ref }, 200, 3, 250)
  t.same(calls, ['ours', 'ref', 'ref', 'ours', 'ours', 'ref'], 'ABBA: neither side always goes first')
  t.same(seen, Array(6).fill('run,run / T,T'), 'in every window its own processes run and every process of the other side is stopped')
  t.same(await Promise.all(pids.map(stateOf)).then(s => s.map(x => x === 'T' ? 'T' : 'run')), ['run', 'run', 'run', 'run'], 'every process runs again afterwards')
  t.same(out.ratios, [1, 5, 2])
  t.equal(out.median, 2, 'the round whose ratio is the median')
  t.equal(out.ours[out.median]?.d.summary.p99, 20)
  t.equal(out.ref[out.median]?.summary.p99, 10)
  t.equal(logged.length, 3)
  t.match(logged[1], /round 2\/3 \(bare Aedes, then hr-relay\)/)
  t.same(out.durable, [])
})

t.test('with bare Aedes + sync batch, three sides in an order that turns round every round, two stopped in each window', async t => {
  const procs = await Promise.all([sleeper(), sleeper(), sleeper()])
  t.teardown(() => { for (const p of procs) { p.kill('SIGCONT'); p.kill('SIGKILL') } })
  const [a, b, c] = procs.map(p => p.pid as number) as [number, number, number]
  const calls: string[] = []
  const check = async (own: number, others: number[]): Promise<void> => {
    t.not(await stateOf(own), 'T')
    for (const pid of others) t.equal(await stateOf(pid), 'T')
  }
  const ours: Side<Measured> = { pid: a, pids: [a], async window () { calls.push('ours'); await check(a, [b, c]); return { d: delivery(30), report } }, async close () {} }
  const ref: Side<RefDelivery> = { pid: b, pids: [b], async window () { calls.push('ref'); await check(b, [a, c]); return delivery(10) }, async close () {} }
  const durable: Side<RefDelivery> = { pid: c, pids: [c], async window () { calls.push('sync'); await check(c, [a, b]); return delivery(20) }, async close () {} }
  const out = await contentionRounds({ quick: false, log: () => {} }, { ours, ref, durable }, 2000, 3, 100)
  t.same(calls, ['ours', 'ref', 'sync', 'sync', 'ref', 'ours', 'ours', 'ref', 'sync'])
  t.equal(out.durable.length, 3)
  t.same(out.ratios, [3, 3, 3], 'the ratio is hr-relay against bare Aedes')
})

t.test('a window that fails still lets the other side go on', async t => {
  const procs = await Promise.all([sleeper(), sleeper()])
  t.teardown(() => { for (const p of procs) { p.kill('SIGCONT'); p.kill('SIGKILL') } })
  const [a, b] = procs.map(p => p.pid as number) as [number, number]
  const ours: Side<Measured> = { pid: a, pids: [a], async window () { throw new Error('server gone') }, async close () {} }
  const ref: Side<RefDelivery> = { pid: b, pids: [b], async window () { return delivery(10) }, async close () {} }
  await t.rejects(contentionRounds({ quick: true, log: () => {} }, { ours, ref }, 25, 1, 100), /server gone/)
  t.not(await stateOf(b), 'T', 'the reference was continued after the failed window')
})
