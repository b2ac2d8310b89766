// e2e-latency: N MQTT devices at 1 Hz (QoS 1), one WebSocket subscriber per
// user; time from the device's PUBLISH to the subscriber's receipt of the
// reading. Reference: the same generator and the same N devices publishing
// through a bare Aedes broker to one MQTT subscriber (no auth, storage or API).
import { fleet, freshCopy } from './lib/fleet.ts'
import { syncFigure } from './lib/disk.ts'
import { deliveryOne, receiptsWhenComplete, type Delivery } from './lib/latency.ts'
import { bothOrNeither, Worker } from './lib/proc.ts'
import { figure, type Figure } from './lib/results.ts'
import { type Context, type Outcome, type Scenario } from './lib/scenario.ts'
import { requireMqtt, startServer } from './lib/server.ts'
import { openViewers, viewersFor } from './lib/viewers.ts'
import type { PublishReport } from './workers/mqtt-devices.ts'
import type { Receipts } from './workers/ws-viewers.ts'

const sizes = (quick: boolean): number[] => quick ? [25] : [200, 2000]

async function measure (devices: Worker, receivers: Worker, rate: number, windowMs: number): Promise<{ report: PublishReport, delivery: Delivery }> {
  // Warm-up (JIT, connection buffers), not recorded: a quarter of the window, at most a second.
  await devices.call('publish', { rate, durationMs: Math.min(1000, windowMs / 4), qos: 1, recordSends: false, measuredAt: 'clock', drainMs: 5000 })
  await receivers.call('start')
  const report = await devices.call<PublishReport>('publish', { rate, durationMs: windowMs, qos: 1, recordSends: true, measuredAt: 'clock', drainMs: 10_000 })
  // Stragglers: until every reading arrived, at most min(1.5 s, half the window).
  const [receipts] = await receiptsWhenComplete([receivers], report.sends.size, rs => deliveryOne(report.sends, rs[0] as Receipts).lost, Math.min(1500, windowMs / 2))
  return { report, delivery: deliveryOne(report.sends, receipts as Receipts) }
}

async function throughHrRelay (ctx: Context, devices: Worker, n: number, windowMs: number): Promise<{ d: Delivery, report: PublishReport }> {
  const f = await fleet(n, ctx.log)
  const dataDir = await freshCopy(f)
  const [server, viewers] = await bothOrNeither(
    startServer({ dataDir, removeDataDir: true, ...(ctx.cpuProfileDir === undefined ? {} : { cpuProfileDir: ctx.cpuProfileDir }) }),
    Worker.start('workers/ws-viewers.ts'))
  try {
    const port = requireMqtt(server)
    await openViewers(viewers, viewersFor(server.url, f.users.slice(0, n)))
    await devices.call('connect', port, f.devices.slice(0, n))
    const { report, delivery } = await measure(devices, viewers, n, windowMs)
    await devices.call('close')
    return { d: delivery, report }
  } finally {
    await devices.call('close').catch(() => {}); await viewers.stop(); await server.stop()
  }
}

async function throughAedes (devices: Worker, n: number, windowMs: number): Promise<Delivery> {
  const [broker, sub] = await bothOrNeither(Worker.start('workers/aedes-ref.ts'), Worker.start('workers/mqtt-subscriber.ts'))
  try {
    const port = await broker.call<number>('start')
    const ids = Array.from({ length: n }, (_, i) => `ref${i}`)
    await sub.call('open', port, ids)
    await devices.call('connect', port, ids.map(device_id => ({ device_id })))
    const { delivery } = await measure(devices, sub, n, windowMs)
    await devices.call('close'); await sub.call('close')
    return delivery
  } finally {
    await devices.call('close').catch(() => {}); await sub.stop(); await broker.stop()
  }
}

export const e2eLatency: Scenario = {
  name: 'e2e-latency',
  reference: 'bare Aedes broker, one MQTT subscriber on the device topics, same generator and devices',
  fleetSize: quick => Math.max(...sizes(quick)),
  async run (ctx: Context): Promise<Outcome> {
    const windowMs = ctx.quick ? 2000 : 20_000
    const figures: Figure[] = []
    const notes: string[] = []
    let lost = 0
    const ns = sizes(ctx.quick)
    const devices = await Worker.start('workers/mqtt-devices.ts')
    try {
      for (const n of ns) {
        ctx.log(`e2e-latency: ${n} devices through hr-relay`)
        const { d, report } = await throughHrRelay(ctx, devices, n, windowMs)
        ctx.log(`e2e-latency: ${n} devices through bare Aedes`)
        const ref = await throughAedes(devices, n, windowMs)
        const last = n === ns[ns.length - 1]
        const refName = 'bare Aedes'
        figures.push(figure(`p50 publish→WebSocket, ${n} devices`, d.summary.p50, 'ms', { name: refName, value: ref.summary.p50 }))
        figures.push(figure(`p99 publish→WebSocket, ${n} devices`, d.summary.p99, 'ms', { name: refName, value: ref.summary.p99 },
          last ? { text: 'p99 <= 10 ms and <= 3x reference', met: d.summary.p99 <= 10 && d.summary.p99 <= 3 * ref.summary.p99 } : undefined))
        figures.push(figure(`max publish→WebSocket, ${n} devices`, d.summary.max, 'ms', { name: refName, value: ref.summary.max }))
        figures.push(figure(`readings lost, ${n} devices`, d.lost, 'readings', undefined, { text: 'zero lost', met: d.lost === 0 }))
        lost += d.lost
        notes.push(`${n} devices: ${d.expected} readings sent in ${windowMs / 1000} s, ${d.received} received, ${report.unacked} without PUBACK, ${report.disconnects} disconnects; generator lag max ${report.maxLagMs.toFixed(1)} ms; reference lost ${ref.lost}`)
      }
    } finally {
      await devices.stop()
    }
    figures.push(await syncFigure(ctx.quick ? 100 : 500))
    return { figures, lost, notes }
  }
}
