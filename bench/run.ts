// `npm run bench [-- --quick] [-- --only a,b] [-- --profile]`: runs each
// scenario against a real hr-relay on loopback, prints its table and writes
// bench/results/<scenario>.json. Exits 1 when a reading was lost or a
// scenario could not run (a missing dependency is named, never faked).
import { parseArgs } from 'node:util'
import { fileURLToPath } from 'node:url'
import { mkdir } from 'node:fs/promises'
import { disposeFleet, fleet } from './lib/fleet.ts'
import { reuseWorkers, stopIdleWorkers } from './lib/proc.ts'
import { formatTable, machine, writeResult, type ScenarioResult } from './lib/results.ts'
import type { Context, Scenario } from './lib/scenario.ts'
import { latestHttp } from './latest-http.ts'
import { stats30d } from './stats-30d.ts'
import { ingestCapacity } from './ingest-capacity.ts'
import { e2eLatency } from './e2e-latency.ts'
import { wsFanout } from './ws-fanout.ts'
import { footprint } from './footprint.ts'
import { blePath } from './ble-path.ts'
import { startup } from './startup.ts'
import { costCurve } from './cost-curve.ts'
import { piProfile } from './pi-profile.ts'
import { classScenario } from './class.ts'
import { hubScenario } from './hub.ts'

export const SCENARIOS: Scenario[] = [latestHttp, stats30d, ingestCapacity, e2eLatency, costCurve, piProfile, wsFanout, footprint, blePath, classScenario, hubScenario, startup]
const RESULTS = fileURLToPath(new URL('./results/', import.meta.url))

async function main (): Promise<number> {
  const { values } = parseArgs({ options: { quick: { type: 'boolean' }, only: { type: 'string' }, profile: { type: 'boolean' } } })
  const quick = values.quick === true
  const only = values.only?.split(',').map(s => s.trim()).filter(Boolean)
  const unknown = only?.filter(n => !SCENARIOS.some(s => s.name === n)) ?? []
  if (unknown.length > 0) {
    process.stderr.write(`bench: unknown scenario ${unknown.join(', ')}; known: ${SCENARIOS.map(s => s.name).join(', ')}\n`)
    return 2
  }
  const selected = SCENARIOS.filter(s => only === undefined || only.includes(s.name))
  const t0 = Date.now()
  const log = (line: string): void => { process.stderr.write(`[${((Date.now() - t0) / 1000).toFixed(1).padStart(6)} s] ${line}\n`) }
  const ctx: Context = { quick, log }
  // --quick reuses load-generator and viewer processes between scenarios (each hr-relay server is still fresh).
  reuseWorkers(quick)
  if (values.profile === true) {
    ctx.cpuProfileDir = RESULTS + 'profiles'
    await mkdir(ctx.cpuProfileDir, { recursive: true })
  }
  const m = machine()
  log(`hr-relay bench${quick ? ' --quick' : ''}: ${selected.map(s => s.name).join(', ')} on ${m.cores} cores (${m.cpu}), node ${m.node}`)

  const need = Math.max(0, ...selected.map(s => s.fleetSize?.(quick) ?? 0))
  let fleetError: string | undefined
  if (need > 0) {
    try { await fleet(need, log) } catch (err) { fleetError = `provisioning ${need} users and devices failed: ${(err as Error).message}` }
  }
  const fleetS = (Date.now() - t0) / 1000

  const results: ScenarioResult[] = []
  for (const s of selected) {
    const started = Date.now()
    const result: ScenarioResult = { scenario: s.name, quick, started_at: new Date(started).toISOString(), duration_s: 0, machine: m, reference: s.reference, figures: [], lost: 0, notes: [] }
    try {
      if (fleetError !== undefined && (s.fleetSize?.(quick) ?? 0) > 0) throw new Error(fleetError)
      log(`${s.name}: start`)
      const out = await s.run(ctx)
      result.figures = out.figures
      result.lost = out.lost
      result.notes = out.notes
    } catch (err) {
      result.error = (err as Error).message
    }
    result.duration_s = (Date.now() - started) / 1000
    results.push(result)
    await writeResult(RESULTS, result)
    process.stdout.write(formatTable(result) + `\n(${result.duration_s.toFixed(1)} s)\n\n`)
  }
  await disposeFleet()
  await stopIdleWorkers()

  const failed = results.filter(r => r.error !== undefined)
  const lost = results.reduce((n, r) => n + r.lost, 0)
  const notMet = results.flatMap(r => r.figures.filter(f => f.target !== undefined && !f.target.met).map(f => `${r.scenario}: ${f.name}`))
  process.stdout.write(`bench: ${results.length - failed.length}/${results.length} scenarios ran, ${lost} readings lost, ${notMet.length} targets not met, ${((Date.now() - t0) / 1000).toFixed(1)} s\n`)
  process.stdout.write(`  wall time: ${fleetS > 0 ? `accounts ${fleetS.toFixed(1)} s, ` : ''}${results.map(r => `${r.scenario} ${r.duration_s.toFixed(1)} s`).join(', ')}\n`)
  for (const r of failed) process.stdout.write(`  FAILED ${r.scenario}: ${r.error ?? ''}\n`)
  for (const n of notMet) process.stdout.write(`  not met: ${n}\n`)
  return failed.length > 0 || lost > 0 ? 1 : 0
}

main().then(code => { process.exitCode = code }, async err => {
  process.stderr.write(`bench: ${(err as Error).stack ?? String(err)}\n`)
  process.exitCode = 1
  await stopIdleWorkers()
})
