// pi-profile: the figures to quote for a Raspberry Pi 4 class box. The same
// ingest-capacity climb and the same e2e-latency window as those scenarios,
// with hr-relay pinned to one core (`taskset -c 0`) and a 256 MB V8 heap
// (`--max-old-space-size=256`). The load generators and receivers are pinned
// to the other core while they measure (on a box they are other machines).
// Reference: a bare Aedes broker pinned to the same core, same generators.
import { rm } from 'node:fs/promises'
import { availableParallelism } from 'node:os'
import { ingestAccounting } from './lib/accounting.ts'
import { throughAedes, throughHrRelay, type Placement } from './e2e-latency.ts'
import { capacity, climb, climbBareAedes, devicesFor, type Step } from './ingest-capacity.ts'
import { fleet, freshCopy } from './lib/fleet.ts'
import { allCpus, pinProcess } from './lib/hog.ts'
import { Worker } from './lib/proc.ts'
import { figure, type Figure } from './lib/results.ts'
import { ingestTarget, PI_INGEST_PER_SECOND } from './lib/targets.ts'
import type { Context, Outcome, Scenario } from './lib/scenario.ts'
import { requireMqtt, startServer } from './lib/server.ts'
import { serviceEnvironment } from './lib/unit-env.ts'

const SERVER_CPUS = '0'
const NODE_OPTIONS = ['--max-old-space-size=256']
const e2eDevices = (quick: boolean): number => quick ? 25 : 200

/** The generator's CPUs: every core but the server's (the same core on a 1-core machine). */
function workerCpus (): string {
  return availableParallelism() > 1 ? `1-${availableParallelism() - 1}` : '0'
}

/** --quick: the first three of ingest-capacity's quick steps (one core stops there anyway); full runs climb all of them. */
const QUICK_RATES = [250, 1000, 4000]

async function pinnedClimb (ctx: Context, devices: Worker, label: string, port: number, logins: Parameters<typeof climb>[4], stepMs: number): Promise<{ steps: Step[], warmupAcked: number }> {
  await pinProcess(devices.pid, workerCpus())
  try {
    return ctx.quick ? await climb(ctx, devices, label, port, logins, stepMs, QUICK_RATES) : await climb(ctx, devices, label, port, logins, stepMs)
  } finally {
    await pinProcess(devices.pid, allCpus()).catch(() => {})
  }
}

export const piProfile: Scenario = {
  name: 'pi-profile',
  reference: 'bare Aedes broker pinned to the same core, same generators (QoS 1; nothing stored)',
  fleetSize: quick => Math.max(devicesFor(quick), e2eDevices(quick)),
  async run (ctx: Context): Promise<Outcome> {
    const stepMs = ctx.quick ? 300 : 5000
    const windowMs = ctx.quick ? 500 : 10_000
    const k = devicesFor(ctx.quick)
    const n = e2eDevices(ctx.quick)
    const f = await fleet(Math.max(k, n), ctx.log)
    // As systemd runs it on the box: the unit's Environment= (MALLOC_ARENA_MAX=2, 1 MB semi-spaces).
    const unitEnv = await serviceEnvironment()
    const notes: string[] = [`hr-relay: taskset -c ${SERVER_CPUS}, node ${NODE_OPTIONS.join(' ')}, ${Object.entries(unitEnv).map(([k, v]) => `${k}=${v}`).join(' ')} (deploy/hr-relay.service); generators and receivers on CPUs ${workerCpus()}`]
    const figures: Figure[] = []
    let lost = 0

    // Ingest: the ingest-capacity climb against the pinned server.
    const dir = await freshCopy(f)
    const [loader, devices] = await Promise.all([Worker.start('workers/store-loader.ts'), Worker.start('workers/mqtt-devices.ts')])
    try {
      const server = await startServer({ dataDir: dir, cpus: SERVER_CPUS, nodeOptions: NODE_OPTIONS, env: unitEnv })
      let mine: { steps: Step[], warmupAcked: number }
      let rss = 0
      try {
        mine = await pinnedClimb(ctx, devices, 'pi hr-relay', requireMqtt(server), f.devices.slice(0, k), stepMs)
        rss = await server.rss()
      } finally {
        await server.stop()
      }
      const { raw } = await loader.call<{ raw: number }>('compact', dir)
      const theirs = await climbBareAedes(k, async (port, logins) => await pinnedClimb(ctx, devices, 'pi bare Aedes', port, logins, stepMs), async pid => { await pinProcess(pid, SERVER_CPUS) })
      const cap = capacity(mine.steps)
      const refCap = capacity(theirs)
      const accounting = ingestAccounting(mine.warmupAcked, mine.steps.map(s => s.acked), raw)
      lost += accounting.lost
      figures.push(figure('QoS 1 readings/s stored and acknowledged (PUBACK p99 <= 100 ms), one core, 256 MB heap', cap?.achieved ?? 0, 'readings/s', { name: 'bare Aedes, same core', value: refCap?.achieved ?? 0 },
        ingestTarget(cap?.achieved ?? 0, accounting.lost, PI_INGEST_PER_SECOND)))
      figures.push(figure('PUBACK p99 at that rate, one core', cap?.p99 ?? Number.NaN, 'ms', { name: 'bare Aedes, same core', value: refCap?.p99 ?? Number.NaN }))
      figures.push(figure('RSS after the climb, one core, 256 MB heap', rss / (1024 * 1024), 'MB'))
      notes.push(`ingest: ${k} devices, steps of ${stepMs / 1000} s: ${mine.steps.map(s => `${s.rate}/s→p99 ${s.p99.toFixed(1)} ms${s.ok ? '' : ' (fail)'}`).join(', ')}; reference: ${theirs.map(s => `${s.rate}/s→p99 ${s.p99.toFixed(1)} ms${s.ok ? '' : ' (fail)'}`).join(', ')}`)
      notes.push(`ingest: ${accounting.acked} readings acknowledged (${mine.warmupAcked} in the warm-up), ${raw} in the store`)
      const top = mine.steps[mine.steps.length - 1]
      if (top?.ok === true) notes.push('ingest: the last step passed: the capacity is at least the figure shown')

      // e2e: the e2e-latency window at n devices against the pinned server.
      const placement: Placement = { serverCpus: SERVER_CPUS, nodeOptions: NODE_OPTIONS, workerCpus: workerCpus(), env: unitEnv }
      ctx.log(`pi-profile: e2e, ${n} devices through hr-relay on one core`)
      const { d, report } = await throughHrRelay(ctx, devices, n, windowMs, placement)
      ctx.log(`pi-profile: e2e, ${n} devices through bare Aedes on one core`)
      const ref = await throughAedes(devices, n, windowMs, { serverCpus: SERVER_CPUS, workerCpus: workerCpus() })
      figures.push(figure(`p50 publish→WebSocket, ${n} devices, one core`, d.summary.p50, 'ms', { name: 'bare Aedes, same core', value: ref.summary.p50 }))
      figures.push(figure(`p99 publish→WebSocket, ${n} devices, one core`, d.summary.p99, 'ms', { name: 'bare Aedes, same core', value: ref.summary.p99 }))
      figures.push(figure(`readings lost, ${n} devices, one core`, d.lost, 'readings', undefined, { text: 'zero lost', met: d.lost === 0 }))
      lost += d.lost
      notes.push(`e2e: ${n} devices, ${d.expected} readings sent in ${windowMs / 1000} s, ${d.received} received, ${report.unacked} without PUBACK; reference lost ${ref.lost}`)
      notes.push('This machine\'s cores are several times faster than a Pi 4\'s Cortex-A72: the pinning models the core count and the heap limit, not the core speed')
    } finally {
      await devices.stop(); await loader.stop()
      await rm(dir, { recursive: true, force: true })
    }
    return { figures, lost, notes }
  }
}
