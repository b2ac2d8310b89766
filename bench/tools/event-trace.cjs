// A timeline of one process's own events, for finding what a slow window had.
// Loaded with
//   EVENT_TRACE_DIR=/some/dir NODE_OPTIONS="--require $PWD/bench/tools/event-trace.cjs" npm run bench -- --only e2e-latency
// it traces the processes whose command line matches EVENT_TRACE_MATCH (a
// regular expression; default: `hr-relay start … --no-demo` and the bench's
// bare Aedes workers) and does nothing in the others. Each traced process
// appends to <dir>/<pid>.log, one event a line, times in epoch ms:
//   A <argv>                                  the command line
//   T <t> <late> <elu> <run µs> <wait µs>     a 5 ms timer tick: how late it fired, the event loop's
//                                             utilization since the last tick, and the main thread's
//                                             time on a core and runnable without one (schedstat)
//   G <start> <ms> <kind>                     a GC pause (perf_hooks kind: 1 minor, 4 major, 8 incremental)
//   B <start> <end> <ops> <sync>              a LevelDB batch, from the call to its callback
// bench/tools/event-trace-report.ts reads them. Each tick reads /proc, 200
// times a second: its CPU is on the traced main thread, in the figures it
// traces. The log is written every 500 ms.
'use strict'
const dir = process.env.EVENT_TRACE_DIR
const match = new RegExp(process.env.EVENT_TRACE_MATCH ?? String.raw`(\sstart\s.*--no-demo)|aedes-ref`)
if (dir !== undefined && dir !== '' && match.test(process.argv.join(' '))) trace(dir)

function trace (dir) {
  const fs = require('node:fs')
  const path = require('node:path')
  const { performance, PerformanceObserver } = require('node:perf_hooks')
  const file = path.join(dir, `${process.pid}.log`)
  const lines = [`A ${process.argv.slice(1).join(' ')}`]
  const origin = performance.timeOrigin
  const at = t => (origin + t).toFixed(2)
  const schedFile = `/proc/self/task/${process.pid}/schedstat`
  const sched = () => {
    try {
      const [run, wait] = fs.readFileSync(schedFile, 'latin1').split(' ')
      return [Number(run), Number(wait)]
    } catch { return [Number.NaN, Number.NaN] }
  }
  let [lastRun, lastWait] = sched()
  let lastElu = performance.eventLoopUtilization()
  let due = performance.now() + 5
  setInterval(() => {
    const now = performance.now()
    const late = now - due
    due = now + 5
    const [run, wait] = sched()
    const elu = performance.eventLoopUtilization(lastElu)
    lastElu = performance.eventLoopUtilization()
    lines.push(`T ${at(now)} ${late.toFixed(2)} ${elu.utilization.toFixed(2)} ${((run - lastRun) / 1e3).toFixed(0)} ${((wait - lastWait) / 1e3).toFixed(0)}`)
    lastRun = run
    lastWait = wait
  }, 5).unref()
  new PerformanceObserver(list => {
    for (const e of list.getEntries()) lines.push(`G ${at(e.startTime)} ${e.duration.toFixed(2)} ${e.detail?.kind ?? 0}`)
  }).observe({ entryTypes: ['gc'] })
  try {
    const { ClassicLevel } = require(require.resolve('classic-level', { paths: [process.cwd()] }))
    const batch = ClassicLevel.prototype._batch
    ClassicLevel.prototype._batch = async function (operations, options) {
      const start = at(performance.now())
      try {
        return await batch.call(this, operations, options)
      } finally {
        lines.push(`B ${start} ${at(performance.now())} ${operations.length} ${options?.sync === true ? 1 : 0}`)
      }
    }
  } catch { /* no LevelDB in this process */ }
  const flush = () => {
    if (lines.length === 0) return
    fs.appendFileSync(file, lines.join('\n') + '\n')
    lines.length = 0
  }
  setInterval(flush, 500).unref()
  process.on('exit', flush)
}
