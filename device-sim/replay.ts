// Recorded sessions: a strap's readings captured somewhere else, replayed
// exactly (same measured_at, same bpm, same RR intervals, same spacing).
//
// Two formats, detected from the first non-blank character:
//   CSV          `measured_at,heart_rate[,rr_ms...]`, one reading a line; an
//                optional header line starting with `measured_at`; `#` comments.
//   JSON lines   one object a line: `{"measured_at": 1700000000000, "heart_rate": 72,
//                "rr_intervals_ms": [830]}`; the API's shape
//                `{"measured_at": ..., "data": {"heart_rate": 72}}` is read too.
// Readings must be in time order. Every problem is a SimError('bad_recording')
// naming the line.
import { readFile } from 'node:fs/promises'
import { SimError } from './errors.ts'

export interface RecordedReading {
  measured_at: number
  heart_rate: number
  rr_intervals_ms?: number[]
}

const INT = /^-?\d+$/

function intField (text: string, what: string, line: number): number {
  const v = text.trim()
  if (!INT.test(v)) throw new SimError('bad_recording', `line ${line}: ${what} ${JSON.stringify(v)} is not an integer`)
  return Number(v)
}

function checkReading (r: RecordedReading, line: number): RecordedReading {
  if (!Number.isSafeInteger(r.measured_at) || r.measured_at < 0) throw new SimError('bad_recording', `line ${line}: measured_at must be a non-negative integer (ms)`)
  if (!Number.isInteger(r.heart_rate) || r.heart_rate < 0 || r.heart_rate > 300) throw new SimError('bad_recording', `line ${line}: heart_rate must be an integer 0..300`)
  for (const rr of r.rr_intervals_ms ?? []) {
    if (!Number.isInteger(rr) || rr < 1 || rr > 65535) throw new SimError('bad_recording', `line ${line}: rr interval ${String(rr)} must be an integer 1..65535`)
  }
  return r
}

function parseCsvLine (text: string, line: number): RecordedReading {
  const fields = text.split(',')
  if (fields.length < 2) throw new SimError('bad_recording', `line ${line}: expected measured_at,heart_rate[,rr...]`)
  const rr = fields.slice(2).filter(f => f.trim() !== '').map(f => intField(f, 'rr interval', line))
  return {
    measured_at: intField(fields[0] as string, 'measured_at', line),
    heart_rate: intField(fields[1] as string, 'heart_rate', line),
    ...(rr.length > 0 ? { rr_intervals_ms: rr } : {})
  }
}

function parseJsonLine (text: string, line: number): RecordedReading {
  let value: unknown
  try { value = JSON.parse(text) } catch { throw new SimError('bad_recording', `line ${line}: not JSON`) }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new SimError('bad_recording', `line ${line}: not an object`)
  const o = value as Record<string, unknown>
  const data = o.data as Record<string, unknown> | undefined
  const hr = o.heart_rate ?? (typeof data === 'object' && data !== null ? data.heart_rate : undefined)
  if (typeof o.measured_at !== 'number' || typeof hr !== 'number') throw new SimError('bad_recording', `line ${line}: needs numeric measured_at and heart_rate`)
  const rr = o.rr_intervals_ms
  if (rr !== undefined && (!Array.isArray(rr) || !rr.every(x => typeof x === 'number'))) throw new SimError('bad_recording', `line ${line}: rr_intervals_ms must be an array of numbers`)
  return { measured_at: o.measured_at, heart_rate: hr, ...(Array.isArray(rr) && rr.length > 0 ? { rr_intervals_ms: rr as number[] } : {}) }
}

/** Parses a recording; throws SimError('bad_recording'). */
export function parseRecording (text: string): RecordedReading[] {
  const lines = text.split(/\r?\n/)
  const first = lines.find(l => l.trim() !== '' && !l.trim().startsWith('#'))?.trim() ?? ''
  const json = first.startsWith('{')
  const out: RecordedReading[] = []
  for (const [i, raw] of lines.entries()) {
    const text = raw.trim()
    const n = i + 1
    if (text === '' || text.startsWith('#')) continue
    if (!json && /^measured_at\b/i.test(text)) continue
    const r = checkReading(json ? parseJsonLine(text, n) : parseCsvLine(text, n), n)
    const prev = out[out.length - 1]
    if (prev !== undefined && r.measured_at < prev.measured_at) throw new SimError('bad_recording', `line ${n}: measured_at goes backwards`)
    out.push(r)
  }
  if (out.length === 0) throw new SimError('bad_recording', 'no readings')
  return out
}

export async function loadRecording (path: string): Promise<RecordedReading[]> {
  let text: string
  try { text = await readFile(path, 'utf8') } catch (err) {
    throw new SimError('bad_recording', `cannot read ${path}: ${(err as Error).message}`, { cause: err })
  }
  return parseRecording(text)
}

/** CSV text of readings, the format parseRecording reads back (for recording a run). */
export function formatCsv (readings: RecordedReading[]): string {
  return 'measured_at,heart_rate,rr_ms...\n' + readings.map(r => [r.measured_at, r.heart_rate, ...(r.rr_intervals_ms ?? [])].join(',')).join('\n') + '\n'
}
