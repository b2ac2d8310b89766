// The dependency rule (docs/architecture.md "Dependency rules", .dependency-cruiser.cjs):
// firmware-protocol ← api ← relay, device-sim uses only firmware-protocol,
// bin/ puts the product and the simulator side by side, relay reaches api
// only through its public modules, and no module is part of a cycle.
// Runs the same dependency-cruiser command as `npm run depcheck`.
import t from 'tap'
import { spawn } from 'node:child_process'
import { resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

const ROOT = resolve(fileURLToPath(new URL('..', import.meta.url)))
const DEPCRUISE = resolve(ROOT, 'node_modules/dependency-cruiser/bin/dependency-cruise.mjs')
const FOLDERS = ['api', 'hub', 'relay', 'firmware-protocol', 'device-sim', 'bin']

interface Violation { from: string, to: string, rule: { name: string }, cycle?: Array<{ name: string }> }
interface CruiseResult {
  modules: Array<{ source: string, dependencies: Array<{ resolved: string }> }>
  summary: { violations: Violation[], error: number, totalCruised: number }
}

async function cruise (): Promise<CruiseResult> {
  const child = spawn(process.execPath, [DEPCRUISE, ...FOLDERS, '--config', '.dependency-cruiser.cjs', '--output-type', 'json'], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] })
  let out = ''
  let err = ''
  child.stdout.on('data', (c: Buffer) => { out += c.toString() })
  child.stderr.on('data', (c: Buffer) => { err += c.toString() })
  const code = await new Promise<number | null>(resolve => child.once('close', resolve))
  if (out === '') throw new Error(`dependency-cruiser printed nothing (exit ${String(code)}): ${err}`)
  return JSON.parse(out) as CruiseResult
}

function describe (v: Violation): string {
  const via = v.cycle === undefined ? '' : ` (cycle: ${v.cycle.map(c => c.name).join(' → ')})`
  return `${v.rule.name}: ${v.from} → ${v.to}${via}`
}

t.test('the dependency rule holds: zero violations', async t => {
  const result = await cruise()
  // It read the tree, TypeScript import specifiers included (not a vacuous pass).
  t.ok(result.summary.totalCruised > 150, `cruised ${result.summary.totalCruised} modules`)
  const main = result.modules.find(m => m.source === 'relay/main.ts')
  t.ok(main?.dependencies.some(d => d.resolved === 'api/data-services.ts'), 'relay/main.ts → api/data-services.ts resolved')
  const lines = result.summary.violations.map(describe)
  t.same(lines, [], lines.length === 0 ? 'no violations' : `violations:\n${lines.join('\n')}`)
  t.equal(result.summary.error, 0)
})
