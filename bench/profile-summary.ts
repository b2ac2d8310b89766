// Summarises a V8 .cpuprofile (from `npm run bench -- --profile`): self time
// by function and by package/folder, so a profile can say where the
// time goes. Usage: node --import ./scripts/ts-loader.mjs bench/profile-summary.ts FILE [top] [skip-seconds]
//
// V8 samples by the wall clock, and each sample's time is the interval since
// the one before. Two things follow:
// - A process stopped with SIGSTOP (the contention rounds stop the sides not
//   measured, for 10 s and more) takes no samples, and the first sample after
//   SIGCONT carries the whole stop: usually a timer callback that fell due
//   meanwhile (a WebSocket ping burst). Intervals over GAP_MS are left out and
//   reported as gaps, as event-trace-report.ts cuts its windows.
// - A sample is the stack the main thread was on, on a core or not: a thread
//   that wakes another one (a socket write to a local reader, a LevelDB batch
//   handed to a pool thread) may lose its core right there, and the wait is
//   counted in that function. On a loaded machine a profile says where the
//   main thread was, not only where it computed.
import { readFile } from 'node:fs/promises'
import { GAP_MS } from './tools/event-trace-report.ts'

export interface Node { id: number, callFrame: { functionName: string, url: string, lineNumber: number }, hitCount?: number, children?: number[] }
export interface Profile { nodes: Node[], startTime: number, endTime: number, samples: number[], timeDeltas: number[] }

export function area (url: string): string {
  if (url === '') return '(native/gc/idle)'
  const nm = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url)
  if (nm !== null) return `dep:${nm[1] ?? ''}`
  if (url.startsWith('node:')) return `node:${url.slice(5).split('/')[0] ?? ''}`
  const m = /\/work\/main\/([^/]+\/(?:[^/]+\/)?)/.exec(url)
  return m !== null ? (m[1] ?? url) : url
}

/** Self time in µs by function (`name file:line`) and by area, and the intervals left out as gaps. */
export interface SelfTimes { totalUs: number, idleUs: number, gaps: number, gapUs: number, byFunction: Map<string, number>, byArea: Map<string, number> }

/**
 * `skipS`: ignore the first seconds of the profile (start-up: module loading, schema compilation).
 * Intervals between samples over GAP_MS (the process stopped) are left out and counted as gaps.
 */
export function selfTimes (p: Profile, skipS = 0): SelfTimes {
  const byId = new Map(p.nodes.map(n => [n.id, n]))
  const self = new Map<number, number>()
  let t = 0
  let gaps = 0
  let gapUs = 0
  p.samples.forEach((id, i) => {
    const dt = p.timeDeltas[i] ?? 0
    t += dt
    if (t < skipS * 1e6) return
    if (dt > GAP_MS * 1000) { gaps++; gapUs += dt; return }
    self.set(id, (self.get(id) ?? 0) + dt)
  })
  const byFunction = new Map<string, number>(); const byArea = new Map<string, number>()
  let totalUs = 0
  for (const [id, us] of self) {
    const n = byId.get(id)
    if (n === undefined) continue
    totalUs += us
    const f = n.callFrame
    const name = `${f.functionName || '(anonymous)'} ${f.url.replace(/^.*\/work\/main\//, '')}:${f.lineNumber + 1}`
    byFunction.set(name, (byFunction.get(name) ?? 0) + us)
    const a = ['(idle)', '(program)', '(garbage collector)'].includes(f.functionName) ? f.functionName : area(f.url)
    byArea.set(a, (byArea.get(a) ?? 0) + us)
  }
  return { totalUs, idleUs: byArea.get('(idle)') ?? 0, gaps, gapUs, byFunction, byArea }
}

export function summarizeProfile (p: Profile, top = 25, skipS = 0): string {
  const s = selfTimes(p, skipS)
  const pct = (us: number): string => `${(100 * us / s.totalUs).toFixed(1).padStart(5)}%`
  const lines = [
    `total sampled ${(s.totalUs / 1e6).toFixed(1)} s, not idle ${((s.totalUs - s.idleUs) / 1e6).toFixed(1)} s`,
    `left out: ${(s.gapUs / 1e6).toFixed(1)} s in ${s.gaps} gaps over ${GAP_MS} ms between samples (the process stopped)`,
    '', 'self time by area:']
  for (const [k, v] of [...s.byArea].sort((a, b) => b[1] - a[1]).slice(0, top)) lines.push(`  ${pct(v)}  ${k}`)
  lines.push('', 'self time by function:')
  for (const [k, v] of [...s.byFunction].sort((a, b) => b[1] - a[1]).slice(0, top)) lines.push(`  ${pct(v)}  ${k}`)
  return lines.join('\n')
}

if (process.argv[1]?.endsWith('profile-summary.ts') === true) {
  const file = process.argv[2]
  if (file === undefined) { process.stderr.write('usage: node --import ./scripts/ts-loader.mjs bench/profile-summary.ts FILE.cpuprofile [top] [skip-seconds]\n'); process.exit(2) }
  const p = JSON.parse(await readFile(file, 'utf8')) as Profile
  process.stdout.write(summarizeProfile(p, Number(process.argv[3] ?? 25), Number(process.argv[4] ?? 0)) + '\n')
}
