// Reads the logs of bench/tools/event-trace.cjs and says, for each stretch
// of time the process ran (a gap of more than 500 ms between ticks is a
// window boundary: the contention rounds stop the other sides with SIGSTOP),
// what its main thread did: the share of wall time it ran and the share it
// was runnable without a core, how late its 5 ms timer fired, its GC pauses
// and its LevelDB batches; then each stall (a tick later than the threshold)
// with the batches and GC pauses that overlap it.
// Usage: node --import ./scripts/ts-loader.mjs bench/tools/event-trace-report.ts DIR/PID.log [stall-ms]
import { readFile } from 'node:fs/promises'
import { percentile } from '../lib/stats.ts'

export interface Tick { t: number, lateMs: number, elu: number, runUs: number, waitUs: number }
export interface Pause { t: number, ms: number, kind: number }
export interface Batch { start: number, end: number, ops: number, sync: boolean }
export interface Trace { argv: string, ticks: Tick[], gc: Pause[], batches: Batch[] }

/** A tick later than the threshold; `since` is when it was due (epoch ms), and what overlapped since then. */
export interface Stall { tick: Tick, since: number, batches: Batch[], gc: Pause[] }
export interface Segment {
  from: number
  to: number
  /** Main thread on a core, and runnable without one, as shares of the segment's wall time. */
  run: number
  wait: number
  lateP99Ms: number
  lateMaxMs: number
  gcMs: number
  gcPauses: number
  syncBatches: number
  opsPerSecond: number
  batchP50Ms: number
  batchP99Ms: number
  batchMaxMs: number
  stalls: Stall[]
}

/** A gap between ticks longer than this starts a new segment (the process was stopped or not running its timers). */
export const GAP_MS = 500

export function readTrace (text: string): Trace {
  const trace: Trace = { argv: '', ticks: [], gc: [], batches: [] }
  for (const line of text.split('\n')) {
    const f = line.split(' ')
    const n = (i: number): number => Number(f[i])
    if (f[0] === 'A') trace.argv = line.slice(2)
    else if (f[0] === 'T' && f.length === 6) trace.ticks.push({ t: n(1), lateMs: n(2), elu: n(3), runUs: n(4), waitUs: n(5) })
    else if (f[0] === 'G' && f.length === 4) trace.gc.push({ t: n(1), ms: n(2), kind: n(3) })
    else if (f[0] === 'B' && f.length === 5) trace.batches.push({ start: n(1), end: n(2), ops: n(3), sync: f[4] === '1' })
  }
  return trace
}

/** The trace cut into segments at gaps; segments shorter than minMs are left out. */
export function segments (trace: Trace, stallMs: number, minMs = 1000): Segment[] {
  const runs: Tick[][] = []
  let current: Tick[] = []
  for (const tick of trace.ticks) {
    const last = current[current.length - 1]
    if (last !== undefined && tick.t - last.t > GAP_MS) { runs.push(current); current = [] }
    current.push(tick)
  }
  if (current.length > 0) runs.push(current)
  const out: Segment[] = []
  for (const ticks of runs) {
    // The first tick of a segment carries the time the process was stopped: it starts the segment, nothing more.
    const measured = ticks.slice(1)
    const first = ticks[0]
    const last = ticks[ticks.length - 1]
    if (first === undefined || last === undefined || measured.length === 0 || last.t - first.t < minMs) continue
    const from = first.t
    const to = last.t
    const wall = (to - from) * 1000
    const inside = <T>(xs: T[], at: (x: T) => number): T[] => xs.filter(x => at(x) > from && at(x) <= to)
    const batches = inside(trace.batches, b => b.start).filter(b => b.sync)
    const gc = inside(trace.gc, g => g.t)
    const late = measured.map(x => x.lateMs).sort((a, b) => a - b)
    const durations = batches.map(b => b.end - b.start).sort((a, b) => a - b)
    const stalls: Stall[] = []
    for (const tick of measured) {
      if (tick.lateMs < stallMs) continue
      const since = tick.t - tick.lateMs - 5
      stalls.push({
        tick,
        since,
        batches: trace.batches.filter(b => b.end >= since && b.start <= tick.t),
        gc: trace.gc.filter(g => g.t + g.ms >= since && g.t <= tick.t)
      })
    }
    out.push({
      from,
      to,
      run: measured.reduce((s, x) => s + x.runUs, 0) / wall,
      wait: measured.reduce((s, x) => s + x.waitUs, 0) / wall,
      lateP99Ms: percentile(late, 99),
      lateMaxMs: late[late.length - 1] ?? Number.NaN,
      gcMs: gc.reduce((s, g) => s + g.ms, 0),
      gcPauses: gc.length,
      syncBatches: batches.length,
      opsPerSecond: batches.reduce((s, b) => s + b.ops, 0) / ((to - from) / 1000),
      batchP50Ms: percentile(durations, 50),
      batchP99Ms: percentile(durations, 99),
      batchMaxMs: durations[durations.length - 1] ?? Number.NaN,
      stalls
    })
  }
  return out
}

const clock = (t: number): string => new Date(t).toISOString().slice(11, 23)
const pct = (x: number): string => `${(x * 100).toFixed(0)} %`

export function report (trace: Trace, stallMs: number): string {
  const lines = [`${trace.argv}`]
  for (const s of segments(trace, stallMs)) {
    lines.push(
      `${clock(s.from)}–${clock(s.to)} (${((s.to - s.from) / 1000).toFixed(1)} s): main thread on a core ${pct(s.run)}, without one ${pct(s.wait)}; ` +
      `timer late p99 ${s.lateP99Ms.toFixed(1)} ms, worst ${s.lateMaxMs.toFixed(1)} ms; GC ${s.gcMs.toFixed(0)} ms in ${s.gcPauses} pauses; ` +
      `${s.syncBatches} sync batches, ${s.opsPerSecond.toFixed(0)} ops/s, batch call → callback p50 ${s.batchP50Ms.toFixed(1)} / p99 ${s.batchP99Ms.toFixed(1)} / worst ${s.batchMaxMs.toFixed(1)} ms`)
    for (const { tick, since, batches, gc } of s.stalls) {
      const rel = (t: number): string => (t - since).toFixed(0)
      lines.push(`  stall at ${clock(tick.t)}: ${tick.lateMs.toFixed(1)} ms late; in its last tick the main thread ran ${(tick.runUs / 1000).toFixed(1)} ms and waited ${(tick.waitUs / 1000).toFixed(1)} ms for a core`)
      lines.push(`    batches (ms from the tick's due time): ${batches.map(b => `${rel(b.start)}..${rel(b.end)} ${b.ops} ops${b.sync ? '' : ' (no sync)'}`).join(', ') || 'none'}`)
      lines.push(`    GC: ${gc.map(g => `at ${rel(g.t)} ${g.ms.toFixed(1)} ms (kind ${g.kind})`).join(', ') || 'none'}`)
    }
  }
  return lines.join('\n')
}

if (process.argv[1]?.endsWith('event-trace-report.ts') === true) {
  const file = process.argv[2]
  if (file === undefined) { process.stderr.write('usage: node --import ./scripts/ts-loader.mjs bench/tools/event-trace-report.ts DIR/PID.log [stall-ms]\n'); process.exit(2) }
  process.stdout.write(report(readTrace(await readFile(file, 'utf8')), Number(process.argv[3] ?? 40)) + '\n')
}
