// The cost-curve's arithmetic: CPU ticks from /proc/<pid>/stat, µs per
// reading, its resolution, and how far the curve rises.
import t from 'tap'
import { cpuMicrosPerReading, curveRise, parseProcStat, parseRunDelay, parseSwitches, schedBetween, schedOf, tickResolutionMicros, ticksPerSecond, type SchedSample } from '../../bench/lib/cpu.ts'
import { parseHeap, parseStoredTotal } from '../../bench/lib/metrics.ts'

// A real line's shape (proc(5)): utime is field 14 (here 1234), stime field 15 (here 567).
const line = (comm: string): string => `4242 (${comm}) S 1 4242 4242 0 -1 4194560 9000 0 12 0 1234 567 0 0 20 0 11 0 3300 1100000000 30000 18446744073709551615 1 1 0 0 0 0 0 16781312 17102 0 0 0 17 1 0 0 0 0 0`

t.test('parseProcStat reads utime and stime, also when the command name has spaces and parentheses', async t => {
  t.same(parseProcStat(line('node')), { user: 1234, system: 567 })
  t.same(parseProcStat(line('MainThread) (x y')), { user: 1234, system: 567 })
  t.throws(() => parseProcStat('garbage'), /not a \/proc\/<pid>\/stat line/)
  t.throws(() => parseProcStat('1 (node) S 1 2'), /no utime\/stime/)
})

t.test('cpuMicrosPerReading: user + system ticks to µs, per reading', async t => {
  // 30 ticks user + 20 system at 100 Hz = 0.5 s of CPU over 10,000 readings = 50 µs each.
  t.equal(cpuMicrosPerReading({ user: 100, system: 50 }, { user: 130, system: 70 }, 10_000, 100), 50)
  t.equal(cpuMicrosPerReading({ user: 0, system: 0 }, { user: 1, system: 0 }, 2000, 100), 5)
  t.ok(Number.isNaN(cpuMicrosPerReading({ user: 0, system: 0 }, { user: 10, system: 0 }, 0, 100)), 'no readings: no figure')
  t.throws(() => cpuMicrosPerReading({ user: 10, system: 0 }, { user: 5, system: 0 }, 10, 100), /went backwards/)
  t.equal(tickResolutionMicros(2000, 100), 5)
  t.ok(Number.isNaN(tickResolutionMicros(0, 100)))
})

t.test('curveRise: largest count over smallest, whatever the order; NaN without two finite ends', async t => {
  t.equal(curveRise([{ devices: 5000, usPerReading: 90 }, { devices: 200, usPerReading: 60 }, { devices: 1000, usPerReading: 70 }]), 1.5)
  t.equal(curveRise([{ devices: 200, usPerReading: 80 }, { devices: 5000, usPerReading: 40 }]), 0.5)
  t.ok(Number.isNaN(curveRise([{ devices: 200, usPerReading: 80 }])))
  t.ok(Number.isNaN(curveRise([{ devices: 200, usPerReading: Number.NaN }, { devices: 5000, usPerReading: 40 }])))
  t.ok(Number.isNaN(curveRise([])))
})

t.test('parseStoredTotal sums hr_relay_readings_stored_total over its sources', async t => {
  const text = [
    '# HELP hr_relay_readings_stored_total Readings stored, by source',
    '# TYPE hr_relay_readings_stored_total counter',
    'hr_relay_readings_stored_total{source="mqtt"} 1500',
    'hr_relay_readings_stored_total{source="http"} 25',
    'hr_relay_readings_stored_total_created 1',
    'hr_relay_dropped_total{reason="x"} 3'
  ].join('\n')
  t.equal(parseStoredTotal(text), 1525)
  t.equal(parseStoredTotal('hr_relay_dropped_total 3\n'), undefined)
})

// The end of a real /proc/<pid>/task/<tid>/status (proc(5)).
const status = (voluntary: number, involuntary: number): string => `Name:\tnode\nState:\tS (sleeping)\nTgid:\t4242\nThreads:\t11\nvoluntary_ctxt_switches:\t${voluntary}\nnonvoluntary_ctxt_switches:\t${involuntary}\n`

t.test('parseSwitches reads both context-switch counters of a status file', async t => {
  t.same(parseSwitches(status(1234, 56)), { voluntary: 1234, involuntary: 56 })
  t.throws(() => parseSwitches('Name:\tnode\nvoluntary_ctxt_switches:\t3\n'), /no nonvoluntary_ctxt_switches/)
  t.throws(() => parseSwitches('Name:\tnode\n'), /no voluntary_ctxt_switches/)
})

t.test('schedBetween: differences per thread; a new thread counts from zero, an ended one not at all', async t => {
  const at = (rows: Array<[string, number, number, number, number]>): SchedSample => new Map(rows.map(([tid, voluntary, involuntary, user, system]) => [tid, { voluntary, involuntary, user, system }]))
  const before = at([['1', 100, 10, 50, 5], ['2', 40, 1, 10, 0], ['3', 7, 7, 7, 7]])
  const after = at([['1', 160, 13, 80, 15], ['2', 45, 1, 12, 0], ['4', 20, 2, 3, 1]])
  // Ticks: (30 + 10) + 2 + (3 + 1) = 46 at 100 Hz = 460 ms; wake-ups 60 + 5 + 20; preemptions 3 + 0 + 2.
  t.same(schedBetween(before, after, 100), { cpuUs: 460_000, wakeups: 85, preemptions: 5, threads: 3 })
  t.throws(() => schedBetween(after, before, 100), /went backwards/)
})

t.test('schedOf samples every thread of a running process: its sleeps are wake-ups, its work CPU', async t => {
  const hz = ticksPerSecond()
  const before = await schedOf(process.pid)
  t.ok(before.has(String(process.pid)), 'the main thread is among the tasks')
  // Each wait blocks the main thread on a futex until its timeout: one voluntary switch or more. (Not a timer: a
  // thread preempted past a timer's deadline finds it due and runs it without blocking, beside a CPU hog too.)
  const cell = new Int32Array(new SharedArrayBuffer(4))
  for (let i = 0; i < 20; i++) Atomics.wait(cell, 0, 0, 5)
  // 200 ms of this process's CPU, whatever the machine's load makes of the wall time.
  const cpu0 = process.cpuUsage()
  let x = 0
  while (process.cpuUsage(cpu0).user < 200_000) x += Math.sqrt(x + 1)
  const w = schedBetween(before, await schedOf(process.pid), hz)
  t.ok(w.wakeups >= 20, `${w.wakeups} wake-ups for 20 sleeps`)
  t.ok(w.cpuUs >= 150_000, `${w.cpuUs} µs of CPU for a 200 ms busy loop (${x > 0 ? 'ran' : ''})`)
  t.ok(w.threads >= 1)
})

t.test('parseRunDelay reads the run-queue wait (ns) of a schedstat line', async t => {
  t.equal(parseRunDelay('102417437 211993 27\n'), 211993)
  t.equal(parseRunDelay('0 0 0'), 0)
  t.throws(() => parseRunDelay('102417437 211993'), /not a schedstat line/)
  t.throws(() => parseRunDelay('1 -5 2'), /not a schedstat line/)
  t.throws(() => parseRunDelay('a b c'), /not a schedstat line/)
})

t.test('schedBetween: run-queue wait of every thread and of the main thread; none where a sample lacks it', async t => {
  const at = (rows: Array<[string, number | undefined]>): SchedSample => new Map(rows.map(([tid, runDelayNs]) => [tid, { voluntary: 0, involuntary: 0, user: 0, system: 0, ...(runDelayNs === undefined ? {} : { runDelayNs }) }]))
  // Thread 10 (the main thread) waited 3 ms, thread 11 0.5 ms; thread 12 is new and counts its 0.25 ms from zero.
  const w = schedBetween(at([['10', 1_000_000], ['11', 500_000]]), at([['10', 4_000_000], ['11', 1_000_000], ['12', 250_000]]), 100, '10')
  t.equal(w.runDelayUs, 3750)
  t.equal(w.mainRunDelayUs, 3000)
  const none = schedBetween(at([['10', undefined]]), at([['10', undefined]]), 100, '10')
  t.notOk('runDelayUs' in none, 'no schedstat: no figure')
  t.notOk('mainRunDelayUs' in none)
  t.throws(() => schedBetween(at([['10', 5]]), at([['10', 4]]), 100), /went backwards/)
})

t.test('schedOf reads the run-queue wait of a running process: a thread kept off the cores by busy ones waits', async t => {
  const before = await schedOf(process.pid)
  const main = before.get(String(process.pid))
  t.type(main?.runDelayNs, 'number', 'this kernel keeps schedstat (the bench reports the figure from it)')
  // Busy processes, one more than the cores, for this process's 300 ms of CPU: it waits for a core in between.
  const { startHog } = await import('../../bench/lib/hog.ts')
  const { availableParallelism } = await import('node:os')
  const hog = startHog(availableParallelism() + 1)
  try {
    const cpu0 = process.cpuUsage()
    let x = 0
    while (process.cpuUsage(cpu0).user < 300_000) x += Math.sqrt(x + 1)
    const w = schedBetween(before, await schedOf(process.pid), ticksPerSecond(), String(process.pid))
    t.ok((w.mainRunDelayUs ?? 0) > 0, `the main thread waited ${w.mainRunDelayUs} µs for a core beside ${hog.processes} busy processes (${x > 0 ? 'ran' : ''})`)
    t.ok((w.runDelayUs ?? 0) >= (w.mainRunDelayUs ?? 0))
  } finally {
    await hog.stop()
  }
})

t.test('parseHeap reads the V8 heap gauges under hr-relay\'s prefix, and none without them', async t => {
  const text = [
    '# HELP hr_relay_nodejs_heap_size_total_bytes Process heap size from Node.js in bytes.',
    'hr_relay_nodejs_heap_size_total_bytes 19636224',
    'hr_relay_nodejs_heap_size_used_bytes 17773552',
    'hr_relay_nodejs_external_memory_bytes 2784997',
    'hr_relay_nodejs_heap_space_size_total_bytes{space="old"} 16482304'
  ].join('\n')
  t.same(parseHeap(text), { total: 19636224, used: 17773552, external: 2784997 })
  t.equal(parseHeap('nodejs_heap_size_total_bytes 1\nnodejs_heap_size_used_bytes 1\nnodejs_external_memory_bytes 1\n'), undefined, 'another prefix')
  t.equal(parseHeap(text.split('\n').slice(0, 3).join('\n')), undefined, 'one gauge missing')
})
