// The figures a scenario reports, the table printed for them and the JSON
// file written to bench/results/<scenario>.json.
import { mkdir, writeFile } from 'node:fs/promises'
import { availableParallelism, cpus } from 'node:os'
import { join } from 'node:path'
import { fmt, ratio } from './stats.ts'

export interface Target {
  /** e.g. "p99 <= 10 ms" */
  text: string
  met: boolean
}

export interface Figure {
  /** e.g. "p99 publish→WebSocket, 2000 devices" */
  name: string
  value: number
  unit: string
  reference?: { name: string, value: number }
  /** value / reference.value */
  ratio?: number
  target?: Target
}

export interface ScenarioResult {
  scenario: string
  quick: boolean
  started_at: string
  duration_s: number
  machine: { cores: number, cpu: string, node: string }
  /** What the reference is, in words. */
  reference: string
  figures: Figure[]
  /** Readings sent and not received or not acknowledged. Non-zero fails the run. */
  lost: number
  notes: string[]
  /** Set when the scenario could not run (a missing dependency) or failed. */
  error?: string
}

export function machine (): ScenarioResult['machine'] {
  return { cores: availableParallelism(), cpu: cpus()[0]?.model ?? 'unknown', node: process.version }
}

/** A figure with its reference and their ratio. */
export function figure (name: string, value: number, unit: string, reference?: { name: string, value: number }, target?: Target): Figure {
  const f: Figure = { name, value, unit }
  if (reference !== undefined) {
    f.reference = reference
    // No ratio against a zero reference (e.g. a window without a GC pause): it would print as NaN.
    const r = ratio(value, reference.value)
    if (!Number.isNaN(r)) f.ratio = r
  }
  if (target !== undefined) f.target = target
  return f
}

export async function writeResult (dir: string, result: ScenarioResult): Promise<string> {
  await mkdir(dir, { recursive: true })
  const file = join(dir, `${result.scenario}.json`)
  await writeFile(file, JSON.stringify(result, (_k, v) => typeof v === 'number' && !Number.isFinite(v) ? null : v, 2) + '\n')
  return file
}

function pad (cells: string[][]): string {
  const widths = cells[0]?.map((_, i) => Math.max(...cells.map(r => (r[i] ?? '').length))) ?? []
  return cells.map(r => r.map((c, i) => i === 0 ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0)).join('  ').trimEnd()).join('\n')
}

export function formatTable (result: ScenarioResult): string {
  const head = `== ${result.scenario}${result.quick ? ' (--quick)' : ''}: reference = ${result.reference}`
  if (result.error !== undefined) return `${head}\n   FAILED: ${result.error}`
  const rows = [['figure', 'value', 'unit', 'reference', 'ratio', 'target']]
  for (const f of result.figures) {
    rows.push([
      f.name,
      fmt(f.value),
      f.unit,
      f.reference === undefined ? '' : `${fmt(f.reference.value)} (${f.reference.name})`,
      f.ratio === undefined ? '' : `${fmt(f.ratio)}x`,
      f.target === undefined ? '' : `${f.target.met ? 'met' : 'NOT MET'}: ${f.target.text}`
    ])
  }
  const tail = [`lost readings: ${result.lost}`, ...result.notes.map(n => `note: ${n}`)]
  return [head, pad(rows), ...tail].join('\n')
}
