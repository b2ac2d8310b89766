// CPU time of a process from /proc/<pid>/stat (user + system, in clock
// ticks), and the cost-curve's arithmetic over it: server CPU per stored
// reading, and how flat that curve is. The parsing and arithmetic are pure,
// so test/bench/cpu.test.ts checks them exactly.
import { execFileSync } from 'node:child_process'
import { readFile } from 'node:fs/promises'

export interface CpuTicks { user: number, system: number }

/**
 * utime and stime (fields 14 and 15 of proc(5)) of one /proc/<pid>/stat line.
 * The command name (field 2) is in parentheses and may hold spaces and ')',
 * so the fields are counted from the last ')'.
 */
export function parseProcStat (line: string): CpuTicks {
  const close = line.lastIndexOf(')')
  if (close < 0) throw new Error(`not a /proc/<pid>/stat line: ${line.slice(0, 80)}`)
  // After ')': field 3 (state) is index 0, so field n is index n - 3.
  const rest = line.slice(close + 1).trim().split(/\s+/)
  const user = Number(rest[14 - 3])
  const system = Number(rest[15 - 3])
  if (!Number.isInteger(user) || !Number.isInteger(system)) throw new Error(`no utime/stime in /proc/<pid>/stat: ${line.slice(0, 80)}`)
  return { user, system }
}

let clkTck: number | undefined
/** Clock ticks per second (getconf CLK_TCK; 100 on Linux when getconf is missing). */
export function ticksPerSecond (): number {
  if (clkTck === undefined) {
    try { clkTck = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) } catch { clkTck = 100 }
    if (!(clkTck > 0)) clkTck = 100
  }
  return clkTck
}

/** User + system CPU of a process so far (every thread: LevelDB, libuv pool, GC included). */
export async function cpuOf (pid: number): Promise<CpuTicks> {
  return parseProcStat(await readFile(`/proc/${pid}/stat`, 'utf8'))
}

/** CPU µs per reading between two samples: (Δuser + Δsystem) ticks → µs, divided by readings; NaN for no readings. */
export function cpuMicrosPerReading (before: CpuTicks, after: CpuTicks, readings: number, hz: number): number {
  if (!(readings > 0) || !(hz > 0)) return Number.NaN
  const ticks = (after.user - before.user) + (after.system - before.system)
  if (ticks < 0) throw new RangeError('CPU time went backwards: the samples are of different processes')
  return (ticks * 1e6 / hz) / readings
}

/** The resolution of such a figure: one tick spread over the window's readings (µs). */
export function tickResolutionMicros (readings: number, hz: number): number {
  return readings > 0 && hz > 0 ? 1e6 / hz / readings : Number.NaN
}

export interface CurvePoint { devices: number, usPerReading: number }

/**
 * How far the cost-curve rises: µs per reading at the largest device count
 * over that at the smallest (1 = flat). NaN when either end is missing.
 */
export function curveRise (points: readonly CurvePoint[]): number {
  const sorted = [...points].filter(p => Number.isFinite(p.usPerReading)).sort((a, b) => a.devices - b.devices)
  const first = sorted[0]
  const last = sorted[sorted.length - 1]
  if (first === undefined || last === undefined || sorted.length < 2 || first.usPerReading <= 0) return Number.NaN
  return last.usPerReading / first.usPerReading
}
