// cost-curve: server CPU per stored reading as the fleet grows. N MQTT devices
// publish QoS 1 at 1 Hz each; the server process's user + system CPU
// (/proc/<pid>/stat, every thread) is read before and after a window and
// divided by the readings stored in it (hr-relay's own counter,
// hr_relay_readings_stored_total at /metrics; acknowledged means stored).
// Reference: the same per-reading CPU of a bare Aedes broker (QoS 1, nothing stored) with the same devices.
// The curve must be flat: no more than 1.5x from the smallest to the largest N.
import { cpuMicrosPerReading, cpuOf, curveRise, tickResolutionMicros, ticksPerSecond, type CpuTicks, type CurvePoint } from './lib/cpu.ts'
import { DependencyMissing } from './lib/errors.ts'
import { fleet, freshCopy } from './lib/fleet.ts'
import { storedTotal } from './lib/metrics.ts'
import { Worker } from './lib/proc.ts'
import { figure, type Figure } from './lib/results.ts'
import type { Context, Outcome, Scenario } from './lib/scenario.ts'
import { requireMqtt, startServer } from './lib/server.ts'
import type { DeviceLogin, PublishReport } from './workers/mqtt-devices.ts'

const counts = (quick: boolean): number[] => quick ? [10, 25] : [200, 1000, 2000, 5000]
const RISE_LIMIT = 1.5

interface Point extends CurvePoint { readings: number, acked: number, unacked: number, cpuMs: number, resolution: number }

/** One window per device count against one running server; `stored` counts the readings the server stored (or handled) so far. */
async function curve (ctx: Context, label: string, devices: Worker, port: number, pid: number, logins: (n: number) => DeviceLogin[], stored: (acked: number) => Promise<number>): Promise<Point[]> {
  const windowMs = ctx.quick ? 500 : 10_000
  const hz = ticksPerSecond()
  const points: Point[] = []
  for (const n of counts(ctx.quick)) {
    try {
      await devices.call('connect', port, logins(n))
      // Warm-up: not measured (JIT, the devices' first readings).
      await devices.call('publish', { rate: n, durationMs: ctx.quick ? 100 : 1000, qos: 1, recordSends: false, measuredAt: 'clock', drainMs: 5000 })
      const s0 = await stored(0)
      const before: CpuTicks = await cpuOf(pid)
      const r = await devices.call<PublishReport>('publish', { rate: n, durationMs: windowMs, qos: 1, recordSends: false, measuredAt: 'clock', drainMs: 10_000 })
      const after = await cpuOf(pid)
      const readings = (await stored(r.acked)) - s0
      const us = cpuMicrosPerReading(before, after, readings, hz)
      const cpuMs = ((after.user - before.user) + (after.system - before.system)) * 1000 / hz
      points.push({ devices: n, usPerReading: us, readings, acked: r.acked, unacked: r.unacked + r.failed, cpuMs, resolution: tickResolutionMicros(readings, hz) })
      ctx.log(`cost-curve ${label}: ${n} devices, ${readings} readings in ${windowMs / 1000} s, ${cpuMs.toFixed(0)} ms CPU, ${us.toFixed(1)} µs per reading`)
    } finally {
      await devices.call('close').catch(() => {})
    }
  }
  return points
}

export const costCurve: Scenario = {
  name: 'cost-curve',
  reference: 'bare Aedes broker (QoS 1, nothing stored), same generator and device counts: its CPU per reading',
  fleetSize: quick => Math.max(...counts(quick)),
  async run (ctx: Context): Promise<Outcome> {
    const ns = counts(ctx.quick)
    const f = await fleet(Math.max(...ns), ctx.log)
    const devices = await Worker.start('workers/mqtt-devices.ts')
    const notes: string[] = []
    try {
      const server = await startServer({ dataDir: await freshCopy(f), removeDataDir: true, ...(ctx.cpuProfileDir === undefined ? {} : { cpuProfileDir: ctx.cpuProfileDir }) })
      let mine: Point[]
      try {
        // Stored readings: hr-relay's own counter (hr_relay_readings_stored_total at /metrics).
        const storedCount = async (): Promise<number> => {
          const n = await storedTotal(server.url)
          if (n === undefined) throw new DependencyMissing('hr_relay_readings_stored_total', 'no stored-readings counter at /metrics: cannot count stored readings')
          return n
        }
        mine = await curve(ctx, 'hr-relay', devices, requireMqtt(server), server.pid, n => f.devices.slice(0, n), storedCount)
      } finally {
        await server.stop()
      }
      const broker = await Worker.start('workers/aedes-ref.ts')
      let theirs: Point[]
      try {
        const port = await broker.call<number>('start')
        // The bare broker stores nothing: its readings are the acknowledged publishes.
        let handled = 0
        theirs = await curve(ctx, 'bare Aedes', devices, port, broker.pid, n => Array.from({ length: n }, (_, i) => ({ device_id: `ref${i}` })), async acked => { handled += acked; return handled })
      } finally {
        await broker.stop()
      }
      const figures: Figure[] = []
      for (const p of mine) {
        const ref = theirs.find(q => q.devices === p.devices)
        figures.push(figure(`server CPU per stored reading, ${p.devices} devices at 1 Hz`, p.usPerReading, 'µs', { name: 'bare Aedes', value: ref?.usPerReading ?? Number.NaN }))
        notes.push(`${p.devices} devices: hr-relay ${p.readings} readings stored (${p.acked} acknowledged, ${p.unacked} without PUBACK), ${p.cpuMs.toFixed(0)} ms CPU (±${p.resolution.toFixed(1)} µs per reading: one ${(1000 / ticksPerSecond()).toFixed(0)} ms tick); bare Aedes ${ref?.readings ?? 0} readings, ${ref?.cpuMs.toFixed(0) ?? '?'} ms CPU`)
      }
      const rise = curveRise(mine)
      const first = ns[0] as number
      const last = ns[ns.length - 1] as number
      figures.push(figure(`rise of CPU per reading from ${first} to ${last} devices (${last} / ${first})`, rise, 'x', { name: 'bare Aedes', value: curveRise(theirs) },
        { text: `<= ${RISE_LIMIT}x (flat)`, met: rise <= RISE_LIMIT }))
      if (ctx.quick) notes.push('--quick: 10 and 25 devices (the fleet --quick provisions anyway) and 0.5 s windows, so one CPU tick is hundreds of µs per reading: a check that the scenario runs, not a curve; the full run measures 200 to 5000 devices in 10 s windows')
      // Readings acknowledged in a window but not counted as stored in it are lost.
      const lost = mine.reduce((n, p) => n + Math.max(0, p.acked - p.readings), 0)
      return { figures, lost, notes }
    } finally {
      await devices.stop()
    }
  }
}
