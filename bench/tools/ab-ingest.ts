// Two configurations (or builds) of hr-relay against each other on the ingest path, in alternating rounds: PUBACK
// latency and server CPU per reading at fixed QoS 1 rates, then the ingest-capacity climb (the highest rate whose
// PUBACK p99 stays at or under 100 ms with every reading acknowledged), and a count of the store afterwards (every
// acknowledged reading must be there). Each side gets a fresh server and data directory in every round; the order
// of A and B turns round every round, so that a drift of the machine falls on both.
//
//   AB_A_CONFIG='{}' AB_B_CONFIG='{"data":{"journal_mb":0}}' AB_ENTRY=$PWD/dist/relay/cli-entry.js \
//     node --import ./scripts/ts-loader.mjs bench/tools/ab-ingest.ts [rounds] [window ms] [one-core|two-cores]
//
// AB_A_CONFIG and AB_B_CONFIG are each side's --config (JSON); AB_A_ENTRY / AB_B_ENTRY (or AB_ENTRY for both) a
// compiled build's relay/cli-entry.js, else bin/hr-relay.cjs runs the sources. one-core (the default) runs the
// server as pi-profile does: `taskset -c 0`, a 256 MB heap and the unit's environment, with the generator on the
// other cores; two-cores leaves both unpinned, as ingest-capacity does. AB_RATES sets the fixed rates (default
// 200,2000), AB_CLIMB=0 leaves the climb out. On a shared machine AB_QUIET=P makes each side wait (at most 10
// minutes) until the CPU pressure (/proc/pressure/cpu, "some" avg10) is at or under P %; every figure is logged
// with the load average and that pressure beside it.
import { readFile, rm } from 'node:fs/promises'
import { availableParallelism, loadavg } from 'node:os'
import { capacity, type Step } from '../ingest-capacity.ts'
import { cpuOf, ticksPerSecond } from '../lib/cpu.ts'
import { fleet, freshCopy } from '../lib/fleet.ts'
import { allCpus, pinProcess } from '../lib/hog.ts'
import { Worker } from '../lib/proc.ts'
import { requireMqtt, startServer, type StartOptions } from '../lib/server.ts'
import { summarize } from '../lib/stats.ts'
import { serviceEnvironment } from '../lib/unit-env.ts'
import type { PublishReport } from '../workers/mqtt-devices.ts'

const DEVICES = 50
const P99_LIMIT_MS = 100
const CLIMB = [1000, 2500, 3000, 4000, 5000, 7500, 10000, 12500, 15000, 20000, 25000, 30000]

interface Fixed { rate: number, p50: number, p99: number, usPerReading: number, acked: number, unacked: number, busy: string }
interface SideRound { fixed: Fixed[], steps: Step[], acked: number, stored: number }

/** The share of the last 10 s in which some task waited for a CPU (%), or NaN where the kernel keeps no PSI. */
async function cpuPressure (): Promise<number> {
  const text = await readFile('/proc/pressure/cpu', 'utf8').catch(() => '')
  const m = /^some avg10=([0-9.]+)/m.exec(text)
  return m === null ? Number.NaN : Number(m[1])
}

async function busy (): Promise<string> {
  return `load ${(loadavg()[0] ?? NaN).toFixed(2)}, CPU pressure ${(await cpuPressure()).toFixed(0)} %`
}

/** Waits until the CPU pressure is at or under `percent` (checked every 2 s), at most `maxMs`. */
async function quiet (percent: number, maxMs: number, log: (line: string) => void): Promise<void> {
  const until = Date.now() + maxMs
  let said = false
  while (Date.now() < until && !(await cpuPressure() <= percent)) {
    if (!said) { log(`waiting for CPU pressure <= ${percent} % (${await busy()})`); said = true }
    await new Promise(resolve => setTimeout(resolve, 2000))
  }
}

const median = (xs: number[]): number => {
  const s = xs.filter(Number.isFinite).sort((a, b) => a - b)
  return s.length === 0 ? NaN : s.length % 2 === 1 ? s[(s.length - 1) / 2] as number : ((s[s.length / 2 - 1] as number) + (s[s.length / 2] as number)) / 2
}

async function main (): Promise<void> {
  const rounds = Number(process.argv[2] ?? 3)
  const windowMs = Number(process.argv[3] ?? 10_000)
  const mode = process.argv[4] ?? 'one-core'
  if (mode !== 'one-core' && mode !== 'two-cores') throw new Error(`mode is one-core or two-cores, not ${mode}`)
  const rates = (process.env.AB_RATES ?? '200,2000').split(',').map(Number)
  const climbing = process.env.AB_CLIMB !== '0'
  const calm = process.env.AB_QUIET === undefined ? undefined : Number(process.env.AB_QUIET)
  const log = (line: string): void => { process.stdout.write(`[${new Date().toISOString().slice(11, 19)}] ${line}\n`) }
  const f = await fleet(DEVICES, log)
  const oneCore = mode === 'one-core'
  const base: StartOptions = oneCore ? { cpus: '0', nodeOptions: ['--max-old-space-size=256'], env: await serviceEnvironment() } : {}
  const genCpus = oneCore && availableParallelism() > 1 ? `1-${availableParallelism() - 1}` : allCpus()
  const sides = {
    A: { config: JSON.parse(process.env.AB_A_CONFIG ?? '{}') as Record<string, unknown>, entry: process.env.AB_A_ENTRY ?? process.env.AB_ENTRY },
    B: { config: JSON.parse(process.env.AB_B_CONFIG ?? '{}') as Record<string, unknown>, entry: process.env.AB_B_ENTRY ?? process.env.AB_ENTRY }
  }
  log(`${mode}: ${rounds} rounds, windows of ${windowMs / 1000} s at ${rates.join(', ')} readings/s, ${DEVICES} devices; A ${JSON.stringify(sides.A)} B ${JSON.stringify(sides.B)}`)
  const devices = await Worker.start('workers/mqtt-devices.ts')
  const loader = await Worker.start('workers/store-loader.ts')
  await pinProcess(devices.pid, genCpus)
  const hz = ticksPerSecond()
  const results: Record<'A' | 'B', SideRound[]> = { A: [], B: [] }
  try {
    for (let i = 0; i < rounds; i++) {
      for (const name of (i % 2 === 0 ? ['A', 'B'] : ['B', 'A']) as Array<'A' | 'B'>) {
        const side = sides[name]
        if (calm !== undefined) await quiet(calm, 600_000, log)
        const dir = await freshCopy(f)
        const server = await startServer({ ...base, dataDir: dir, config: side.config, ...(side.entry === undefined || side.entry === '' ? {} : { compiledEntry: side.entry }) })
        const row: SideRound = { fixed: [], steps: [], acked: 0, stored: 0 }
        try {
          await devices.call('connect', requireMqtt(server), f.devices.slice(0, DEVICES))
          const seq = Date.now() - 3_600_000
          const plan = (rate: number, durationMs: number): Record<string, unknown> => ({ rate, durationMs, qos: 1, recordSends: false, measuredAt: 'sequence', sequenceBase: seq, drainMs: 5000 })
          // Warm-up, not measured: JIT and the first batches.
          row.acked += (await devices.call<PublishReport>('publish', plan(1000, 3000))).acked
          for (const rate of rates) {
            const before = await cpuOf(server.pid)
            const r = await devices.call<PublishReport>('publish', plan(rate, windowMs))
            const after = await cpuOf(server.pid)
            const s = summarize(Array.from(r.ackLatencies))
            const usPerReading = ((after.user - before.user + after.system - before.system) * 1e6 / hz) / r.acked
            row.acked += r.acked
            const state = await busy()
            row.fixed.push({ rate, p50: s.p50, p99: s.p99, usPerReading, acked: r.acked, unacked: r.unacked, busy: state })
            log(`round ${i + 1} ${name} ${rate}/s: PUBACK p50 ${s.p50.toFixed(2)} p99 ${s.p99.toFixed(2)} ms, ${usPerReading.toFixed(1)} µs CPU/reading, ${r.unacked} unacked (${state})`)
          }
          if (climbing) {
            for (const rate of CLIMB) {
              const r = await devices.call<PublishReport>('publish', plan(rate, 5000))
              const p99 = summarize(Array.from(r.ackLatencies)).p99
              const ok = p99 <= P99_LIMIT_MS && r.unacked === 0 && r.failed === 0 && r.disconnects === 0
              row.acked += r.acked
              row.steps.push({ rate, achieved: r.achievedRate, p99, sent: r.sent, acked: r.acked, unacked: r.unacked, failed: r.failed, ok })
              log(`round ${i + 1} ${name} climb ${rate}/s: ${Math.round(r.achievedRate)}/s sent, p99 ${p99.toFixed(1)} ms, ${r.unacked} unacked${ok ? '' : ' — stop'} (${await busy()})`)
              if (!ok) break
            }
          }
        } finally {
          await devices.call('close').catch(() => {})
          await server.stop()
        }
        row.stored = (await loader.call<{ raw: number }>('compact', dir)).raw
        await rm(dir, { recursive: true, force: true })
        const cap = capacity(row.steps)
        log(`round ${i + 1} ${name}: capacity ${cap === undefined ? 'none' : `${Math.round(cap.achieved)}/s (p99 ${cap.p99.toFixed(1)} ms)`}; ${row.acked} acknowledged, ${row.stored} stored`)
        results[name].push(row)
      }
    }
  } finally {
    await devices.stop(); await loader.stop()
  }
  for (const name of ['A', 'B'] as const) {
    const rs = results[name]
    for (const rate of rates) {
      const at = rs.map(r => r.fixed.find(x => x.rate === rate)).filter(x => x !== undefined)
      log(`${mode} ${name} ${rate}/s, median of ${at.length}: PUBACK p50 ${median(at.map(x => x.p50)).toFixed(2)} ms, p99 ${median(at.map(x => x.p99)).toFixed(2)} ms, ${median(at.map(x => x.usPerReading)).toFixed(1)} µs CPU/reading (p99s ${at.map(x => x.p99.toFixed(1)).join(', ')})`)
    }
    if (climbing) log(`${mode} ${name} capacity per round: ${rs.map(r => Math.round(capacity(r.steps)?.achieved ?? 0)).join(', ')} readings/s (median ${Math.round(median(rs.map(r => capacity(r.steps)?.achieved ?? 0)))}); lost ${rs.reduce((n, r) => n + Math.max(0, r.acked - r.stored), 0)}`)
  }
}

main().then(() => process.exit(0), (err: unknown) => { process.stderr.write(`${String((err as Error).stack ?? err)}\n`); process.exit(1) })
