// Summarises a V8 .cpuprofile (from `npm run bench -- --profile`): self time
// by function and by package/folder, so bench/README.md can say where the
// time goes. Usage: node --import ./scripts/ts-loader.mjs bench/profile-summary.ts FILE [top] [skip-seconds]
import { readFile } from 'node:fs/promises'

interface Node { id: number, callFrame: { functionName: string, url: string, lineNumber: number }, hitCount?: number, children?: number[] }
interface Profile { nodes: Node[], startTime: number, endTime: number, samples: number[], timeDeltas: number[] }

export function area (url: string): string {
  if (url === '') return '(native/gc/idle)'
  const nm = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url)
  if (nm !== null) return `dep:${nm[1] ?? ''}`
  if (url.startsWith('node:')) return `node:${url.slice(5).split('/')[0] ?? ''}`
  const m = /\/work\/main\/([^/]+\/(?:[^/]+\/)?)/.exec(url)
  return m !== null ? (m[1] ?? url) : url
}

/** `skipS`: ignore the first seconds of the profile (start-up: module loading, schema compilation). */
export function summarizeProfile (p: Profile, top = 25, skipS = 0): string {
  const byId = new Map(p.nodes.map(n => [n.id, n]))
  const self = new Map<number, number>()
  let t = 0
  p.samples.forEach((id, i) => {
    t += p.timeDeltas[i] ?? 0
    if (t >= skipS * 1e6) self.set(id, (self.get(id) ?? 0) + (p.timeDeltas[i] ?? 0))
  })
  const total = [...self.values()].reduce((a, b) => a + b, 0)
  const fn = new Map<string, number>(); const ar = new Map<string, number>()
  for (const [id, us] of self) {
    const n = byId.get(id)
    if (n === undefined) continue
    const f = n.callFrame
    const name = `${f.functionName || '(anonymous)'} ${f.url.replace(/^.*\/work\/main\//, '')}:${f.lineNumber + 1}`
    fn.set(name, (fn.get(name) ?? 0) + us)
    const a = ['(idle)', '(program)', '(garbage collector)'].includes(f.functionName) ? f.functionName : area(f.url)
    ar.set(a, (ar.get(a) ?? 0) + us)
  }
  const pct = (us: number): string => `${(100 * us / total).toFixed(1).padStart(5)}%`
  const lines = [`total sampled ${(total / 1e6).toFixed(1)} s`, '', 'self time by area:']
  for (const [k, v] of [...ar].sort((a, b) => b[1] - a[1]).slice(0, top)) lines.push(`  ${pct(v)}  ${k}`)
  lines.push('', 'self time by function:')
  for (const [k, v] of [...fn].sort((a, b) => b[1] - a[1]).slice(0, top)) lines.push(`  ${pct(v)}  ${k}`)
  return lines.join('\n')
}

if (process.argv[1]?.endsWith('profile-summary.ts') === true) {
  const file = process.argv[2]
  if (file === undefined) { process.stderr.write('usage: node --import ./scripts/ts-loader.mjs bench/profile-summary.ts FILE.cpuprofile [top] [skip-seconds]\n'); process.exit(2) }
  const p = JSON.parse(await readFile(file, 'utf8')) as Profile
  process.stdout.write(summarizeProfile(p, Number(process.argv[3] ?? 25), Number(process.argv[4] ?? 0)) + '\n')
}
