// Prints the figures in bench/results/*.json as one Markdown table (for
// bench/README.md). Usage: node --import ./scripts/ts-loader.mjs bench/report.ts
import { readdir, readFile } from 'node:fs/promises'
import { fileURLToPath } from 'node:url'
import { fmt } from './lib/stats.ts'
import type { ScenarioResult } from './lib/results.ts'

const dir = fileURLToPath(new URL('./results/', import.meta.url))
const order = ['latest-http', 'stats-30d', 'ingest-capacity', 'e2e-latency', 'cost-curve', 'pi-profile', 'ws-fanout', 'footprint', 'ble-path', 'class', 'startup']
const results: ScenarioResult[] = []
for (const f of (await readdir(dir)).filter(f => f.endsWith('.json'))) results.push(JSON.parse(await readFile(dir + f, 'utf8')) as ScenarioResult)
results.sort((a, b) => order.indexOf(a.scenario) - order.indexOf(b.scenario))
const first = results[0]
if (first !== undefined) process.stdout.write(`Run of ${first.started_at.slice(0, 10)}, ${first.machine.cores} cores (${first.machine.cpu}), Node ${first.machine.node}${first.quick ? ', --quick' : ''}.\n\n`)
process.stdout.write('| scenario | figure | hr-relay | reference | ratio | target |\n|---|---|---|---|---|---|\n')
const num = (v: number | null, unit: string): string => v === null ? 'n/a' : `${fmt(v)} ${unit}`
for (const r of results) {
  if (r.error !== undefined) { process.stdout.write(`| ${r.scenario} | FAILED: ${r.error} | | | | |\n`); continue }
  for (const f of r.figures) {
    const ref = f.reference === undefined ? '' : `${num(f.reference.value, f.unit)} (${f.reference.name})`
    const ratio = f.ratio === undefined || f.ratio === null ? '' : `${fmt(f.ratio)}x`
    const target = f.target === undefined ? '' : `${f.target.met ? 'met' : '**not met**'}: ${f.target.text}`
    process.stdout.write(`| ${r.scenario} | ${f.name} | ${num(f.value, f.unit)} | ${ref} | ${ratio} | ${target} |\n`)
  }
}
