// ws-fanout: one user streaming at 1 Hz to many WebSocket viewers, and 10
// users to 100 viewers each. A reading enters as a device's MQTT publish;
// latency is publish → receipt at every viewer. Reference: a bare `ws` server
// forwarding the same payloads from a publisher socket to the same viewers;
// in full runs also bare ws + sync batch, which stores each payload in a
// LevelDB sync batch before it forwards it (what durability alone costs).
import { fleet, freshCopy } from './lib/fleet.ts'
import { syncFigure } from './lib/disk.ts'
import { deliveryMany, receiptsWhenComplete, type Delivery } from './lib/latency.ts'
import { bothOrNeither, Worker } from './lib/proc.ts'
import { figure, type Figure } from './lib/results.ts'
import { fanoutTarget } from './lib/targets.ts'
import { type Context, type Outcome, type Scenario } from './lib/scenario.ts'
import { requireMqtt, startServer } from './lib/server.ts'
import { openViewers, viewersFor } from './lib/viewers.ts'
import type { PublishReport } from './workers/mqtt-devices.ts'
import type { Receipts, Viewer } from './workers/ws-viewers.ts'

interface Case { users: number, viewersPerUser: number }
const cases = (quick: boolean): Case[] => quick ? [{ users: 1, viewersPerUser: 100 }] : [{ users: 1, viewersPerUser: 1000 }, { users: 10, viewersPerUser: 100 }]

/** Viewer workers: two processes share 1000 connections (--quick: one process holds its 100). */
async function viewerPool (viewers: Viewer[], open: (w: Worker, vs: Viewer[]) => Promise<void>): Promise<Worker[]> {
  const n = viewers.length > 200 ? 2 : 1
  const workers = await Promise.all(Array.from({ length: n }, async () => await Worker.start('workers/ws-viewers.ts')))
  await Promise.all(workers.map(async (w, k) => { await open(w, viewers.filter((_, i) => i % workers.length === k)) }))
  return workers
}

/** Every viewer's receipts once all arrived, waiting at most min(1.5 s, half the window) for stragglers. */
async function stragglers (viewers: Worker[], sends: ReadonlyMap<string, number>, c: Case, windowMs: number): Promise<Receipts[]> {
  const expected = sends.size * c.viewersPerUser
  return await receiptsWhenComplete(viewers, expected, rs => deliveryMany(sends, rs, perLabel(c)).lost, Math.min(1500, windowMs / 2))
}

function perLabel (c: Case): Map<number, number> {
  return new Map(Array.from({ length: c.users }, (_, i) => [i, c.viewersPerUser]))
}

async function hrRelay (ctx: Context, c: Case, windowMs: number): Promise<Delivery> {
  const f = await fleet(c.users, ctx.log)
  // Viewers of one user share its token; the per-token limit (default 20/s) would refuse their handshakes with 429.
  const dataDir = await freshCopy(f)
  const [server, devices] = await bothOrNeither(
    startServer({ dataDir, removeDataDir: true, config: { http: { rate_limit_per_second: 1_000_000 } }, ...(ctx.cpuProfileDir === undefined ? {} : { cpuProfileDir: ctx.cpuProfileDir }) }),
    Worker.start('workers/mqtt-devices.ts'))
  let viewers: Worker[] = []
  try {
    const port = requireMqtt(server)
    viewers = await viewerPool(viewersFor(server.url, f.users.slice(0, c.users), c.viewersPerUser), openViewers)
    await devices.call('connect', port, f.devices.slice(0, c.users))
    await devices.call('publish', { rate: c.users, durationMs: Math.min(1000, windowMs / 4), qos: 1, recordSends: false, measuredAt: 'clock', drainMs: 5000 })
    await Promise.all(viewers.map(async w => await w.call('start')))
    const report = await devices.call<PublishReport>('publish', { rate: c.users, durationMs: windowMs, qos: 1, recordSends: true, measuredAt: 'clock', drainMs: 10_000 })
    const receipts = await stragglers(viewers, report.sends, c, windowMs)
    await devices.call('close')
    return deliveryMany(report.sends, receipts, perLabel(c))
  } finally {
    await devices.stop()
    for (const w of viewers) await w.stop()
    await server.stop()
  }
}

/** The same viewers through bare ws; `durable`: through bare ws + sync batch (each message stored before it is forwarded). */
async function reference (c: Case, windowMs: number, durable = false): Promise<Delivery & { perBatch?: number }> {
  const [server, pub] = await bothOrNeither(Worker.start('workers/ws-broadcast-ref.ts'), Worker.start('workers/ws-publisher.ts'))
  let viewers: Worker[] = []
  try {
    const port = await server.call<number>('start', { durable })
    const vs: Viewer[] = []
    for (let u = 0; u < c.users; u++) for (let k = 0; k < c.viewersPerUser; k++) vs.push({ url: `ws://127.0.0.1:${port}/view/${u}`, label: u })
    viewers = await viewerPool(vs, async (w, part) => { await w.call('open', part) })
    await pub.call('open', port, c.users)
    await pub.call('publish', 1, Math.min(1000, windowMs / 4))
    await Promise.all(viewers.map(async w => await w.call('start')))
    const { sends } = await pub.call<{ sends: Map<string, number> }>('publish', 1, windowMs)
    const receipts = await stragglers(viewers, sends, c, windowMs)
    await pub.call('close')
    const { batches, stored } = await server.call<{ batches: number, stored: number }>('counts')
    return { ...deliveryMany(sends, receipts, perLabel(c)), ...(durable && batches > 0 ? { perBatch: stored / batches } : {}) }
  } finally {
    await pub.stop()
    for (const w of viewers) await w.stop()
    await server.stop()
  }
}

export const wsFanout: Scenario = {
  name: 'ws-fanout',
  reference: 'a bare `ws` server forwarding the same payloads from a publisher socket to the same viewers',
  fleetSize: quick => Math.max(...cases(quick).map(c => c.users)),
  async run (ctx: Context): Promise<Outcome> {
    const windowMs = ctx.quick ? 1000 : 20_000
    const figures: Figure[] = []
    const notes: string[] = []
    let lost = 0
    for (const c of cases(ctx.quick)) {
      const label = `${c.users} user${c.users > 1 ? 's' : ''} × ${c.viewersPerUser} viewers`
      ctx.log(`ws-fanout: ${label} through hr-relay`)
      const d = await hrRelay(ctx, c, windowMs)
      ctx.log(`ws-fanout: ${label} through bare ws`)
      const ref = await reference(c, windowMs)
      // Full runs: what storing each reading before the fan-out costs with no other work (bare ws + sync batch).
      if (!ctx.quick) ctx.log(`ws-fanout: ${label} through bare ws + sync batch`)
      const durable = ctx.quick ? undefined : await reference(c, windowMs, true)
      figures.push(figure(`p50 delivery, ${label}`, d.summary.p50, 'ms', { name: 'bare ws', value: ref.summary.p50 }))
      figures.push(figure(`p99 delivery, ${label}`, d.summary.p99, 'ms', { name: 'bare ws', value: ref.summary.p99 }, fanoutTarget(d.summary.p99, ref.summary.p99)))
      figures.push(figure(`deliveries lost, ${label}`, d.lost, 'messages', undefined, { text: 'zero lost', met: d.lost === 0 }))
      if (durable !== undefined) {
        const name = 'bare ws + sync batch'
        figures.push(figure(`${name}: p99 delivery, ${label}`, durable.summary.p99, 'ms', { name: 'bare ws', value: ref.summary.p99 }))
        figures.push(figure(`hr-relay p99 delivery against ${name}, ${label}`, d.summary.p99, 'ms', { name, value: durable.summary.p99 }))
        notes.push(`${name}, ${label}: ${durable.expected} deliveries expected, ${durable.received} received (lost ${durable.lost}); p50 ${durable.summary.p50.toFixed(2)} ms; ${durable.perBatch === undefined ? 'no sync batch counted' : `${durable.perBatch.toFixed(2)} messages per sync batch`}`)
      }
      notes.push(`${label}: ${d.expected} deliveries expected in ${windowMs / 1000} s, ${d.received} received; reference lost ${ref.lost}. Latency includes hr-relay's MQTT ingest and fsync before the fan-out.`)
      lost += d.lost
    }
    figures.push(await syncFigure(ctx.quick ? 100 : 500))
    // 10 users at 1 Hz: a reading every 100 ms, each waiting for its own sync batch on a disk and thread pool that idled in between.
    figures.push(await syncFigure(ctx.quick ? 10 : 50, undefined, 100))
    return { figures, lost, notes }
  }
}
