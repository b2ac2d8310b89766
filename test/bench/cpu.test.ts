// The cost-curve's arithmetic: CPU ticks from /proc/<pid>/stat, µs per
// reading, its resolution, and how far the curve rises.
import t from 'tap'
import { cpuMicrosPerReading, curveRise, parseProcStat, tickResolutionMicros } from '../../bench/lib/cpu.ts'
import { parseStoredTotal } from '../../bench/lib/metrics.ts'

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
