// CPU time of a process from /proc/<pid>/stat (user + system, in clock
// ticks), and the cost-curve's arithmetic over it: server CPU per stored
// reading, and how flat that curve is. The parsing and arithmetic are pure,
// so test/bench/cpu.test.ts checks them exactly.
import { execFileSync } from 'node:child_process'
import { readFile, readdir } from 'node:fs/promises'

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

/** The state letter of /proc/<pid>/stat (field 3: R, S, T for stopped, ...); undefined when the process is gone. */
export async function processState (pid: number): Promise<string | undefined> {
  const line = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => undefined)
  if (line === undefined) return undefined
  const close = line.lastIndexOf(')')
  return close < 0 ? undefined : line.slice(close + 1).trim().split(/\s+/)[0]
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

/**
 * Context switches of one thread, from its /proc/<pid>/task/<tid>/status
 * (proc(5)): voluntary ones are the thread blocking (it waits for work and is
 * woken for the next, so each is one wake-up), involuntary ones the scheduler
 * taking the core from it (a preemption).
 */
export interface Switches { voluntary: number, involuntary: number }

/** The two context-switch counters of a status file. */
export function parseSwitches (status: string): Switches {
  const count = (name: string): number => {
    const m = new RegExp(`^${name}:\\s*(\\d+)\\s*$`, 'm').exec(status)
    if (m === null) throw new Error(`no ${name} in the status file`)
    return Number(m[1])
  }
  return { voluntary: count('voluntary_ctxt_switches'), involuntary: count('nonvoluntary_ctxt_switches') }
}

/**
 * How long one thread has waited for a core: the second field of its
 * /proc/<pid>/task/<tid>/schedstat (ns runnable on a run queue but not
 * running; the first is ns on a core, the third how many times it got one).
 * A kernel without CONFIG_SCHED_INFO keeps no such file: `schedOf` then
 * leaves the figure out.
 */
export function parseRunDelay (schedstat: string): number {
  const fields = schedstat.trim().split(/\s+/)
  const delay = Number(fields[1])
  if (fields.length !== 3 || !Number.isSafeInteger(delay) || delay < 0) throw new Error(`not a schedstat line: ${schedstat.slice(0, 80)}`)
  return delay
}

/** One thread at one moment: its context switches, CPU ticks and, where the kernel keeps it, its run-queue wait (ns). */
export type ThreadSample = Switches & CpuTicks & { runDelayNs?: number }

/** Every thread's counters at one moment, by thread id. */
export type SchedSample = Map<string, ThreadSample>

async function runDelayOf (path: string): Promise<number | undefined> {
  let text: string
  try { text = await readFile(path, 'utf8') } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT' || (err as NodeJS.ErrnoException).code === 'ESRCH') return undefined
    throw err
  }
  return parseRunDelay(text)
}

/** Samples every thread of a process (/proc/<pid>/task/<tid>/status, stat and schedstat); a thread that exits while it is read is left out. */
export async function schedOf (pid: number): Promise<SchedSample> {
  const sample: SchedSample = new Map()
  for (const tid of await readdir(`/proc/${pid}/task`)) {
    const dir = `/proc/${pid}/task/${tid}/`
    try {
      const [status, stat, runDelayNs] = await Promise.all([readFile(dir + 'status', 'utf8'), readFile(dir + 'stat', 'utf8'), runDelayOf(dir + 'schedstat')])
      sample.set(tid, { ...parseSwitches(status), ...parseProcStat(stat), ...(runDelayNs === undefined ? {} : { runDelayNs }) })
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT' && (err as NodeJS.ErrnoException).code !== 'ESRCH') throw err
    }
  }
  return sample
}

/**
 * A process's scheduling between two samples: CPU (every thread), wake-ups and preemptions, and the time its
 * threads were runnable but waited for a core (every thread, and the main thread alone: the thread whose id is the
 * process's; undefined where the kernel keeps no schedstat).
 */
export interface SchedWindow { cpuUs: number, wakeups: number, preemptions: number, threads: number, runDelayUs?: number, mainRunDelayUs?: number }

/**
 * What the process's threads did between two samples. A thread in both counts
 * its difference; one started in between counts from zero; one that ended in
 * between is not counted (its last counts are gone with it). `mainTid` is the
 * process id (its main thread's id).
 */
export function schedBetween (before: SchedSample, after: SchedSample, hz: number, mainTid?: string): SchedWindow {
  let ticks = 0; let wakeups = 0; let preemptions = 0; let delayNs: number | undefined = 0; let mainDelayNs: number | undefined
  for (const [tid, a] of after) {
    const b = before.get(tid) ?? { voluntary: 0, involuntary: 0, user: 0, system: 0, runDelayNs: 0 }
    ticks += a.user - b.user + a.system - b.system
    wakeups += a.voluntary - b.voluntary
    preemptions += a.involuntary - b.involuntary
    const waited = a.runDelayNs === undefined || b.runDelayNs === undefined ? undefined : a.runDelayNs - b.runDelayNs
    delayNs = delayNs === undefined || waited === undefined ? undefined : delayNs + waited
    if (tid === mainTid) mainDelayNs = waited
  }
  if (ticks < 0 || wakeups < 0 || preemptions < 0 || (delayNs ?? 0) < 0) throw new RangeError('counters went backwards: the samples are of different processes')
  return {
    cpuUs: ticks * 1e6 / hz,
    wakeups,
    preemptions,
    threads: after.size,
    ...(delayNs === undefined ? {} : { runDelayUs: delayNs / 1000 }),
    ...(mainDelayNs === undefined ? {} : { mainRunDelayUs: mainDelayNs / 1000 })
  }
}
