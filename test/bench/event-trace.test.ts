// bench/tools/event-trace.cjs (a preload that logs a process's timer ticks,
// GC pauses and LevelDB batches) and bench/tools/event-trace-report.ts (which
// cuts the log into the windows the process ran and finds its stalls).
import t from 'tap'
import { spawn } from 'node:child_process'
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { readTrace, report, segments } from '../../bench/tools/event-trace-report.ts'

const ROOT = fileURLToPath(new URL('../../', import.meta.url))
const PRELOAD = join(ROOT, 'bench/tools/event-trace.cjs')

// Runs 1.2 s with ticks (3 sync batches of 2 ops, one batch without sync, a full GC, a 60 ms busy loop), then
// blocks 700 ms (the trace's gap between windows), then runs 1.2 s more.
const SCRIPT = `
const { ClassicLevel } = require('classic-level')
const busy = ms => { const end = Date.now() + ms; while (Date.now() < end); }
const sleep = ms => new Promise(r => setTimeout(r, ms))
;(async () => {
  const db = new ClassicLevel(process.argv[1], { valueEncoding: 'utf8' })
  await db.open()
  await sleep(100)
  for (let i = 0; i < 3; i++) await db.batch([{ type: 'put', key: 'a' + i, value: 'x' }, { type: 'put', key: 'b' + i, value: 'y' }], { sync: true })
  await db.batch([{ type: 'put', key: 'c', value: 'z' }])
  global.gc()
  await sleep(100)
  process.stdout.write('busy ' + Date.now() + '\\n')
  busy(60)
  await sleep(1000)
  busy(700)
  await sleep(1200)
  await db.close()
})()
`

/** Runs SCRIPT; its exit code and when its 60 ms busy loop started (epoch ms). */
async function run (dir: string, match: string, dbDir: string): Promise<{ code: number, busyAt: number }> {
  const child = spawn(process.execPath, ['--expose-gc', '--require', PRELOAD, '-e', SCRIPT, dbDir, 'trace-me'], {
    cwd: ROOT,
    env: { ...process.env, EVENT_TRACE_DIR: dir, EVENT_TRACE_MATCH: match },
    stdio: ['ignore', 'pipe', 'inherit']
  })
  let out = ''
  child.stdout.on('data', (c: Buffer) => { out += c.toString('utf8') })
  const code = await new Promise<number>(resolve => child.once('exit', code => { resolve(code ?? -1) }))
  return { code, busyAt: Number(/busy (\d+)/.exec(out)?.[1]) }
}

t.test('the preload traces a matching process: batches, GC, ticks, and a stall inside its first window', async t => {
  const dir = await mkdtemp(join(tmpdir(), 'hr-relay-event-trace-'))
  t.teardown(async () => { await rm(dir, { recursive: true, force: true }) })
  const { code, busyAt } = await run(dir, 'trace-me', join(dir, 'db'))
  t.equal(code, 0)
  t.ok(busyAt > 0, 'the script said when its busy loop started')
  const logs = (await readdir(dir)).filter(f => f.endsWith('.log'))
  t.equal(logs.length, 1, 'one log, named by pid')
  const trace = readTrace(await readFile(join(dir, logs[0] as string), 'utf8'))
  t.match(trace.argv, /trace-me$/)
  t.same(trace.batches.map(b => [b.ops, b.sync]), [[2, true], [2, true], [2, true], [1, false]])
  t.ok(trace.batches.every(b => b.end >= b.start), 'each batch ends after it starts')
  t.ok(trace.gc.some(g => g.kind === 4), 'the full GC is a major pause (kind 4)')
  t.ok(trace.ticks.length > 200, `ticks every 5 ms (got ${trace.ticks.length})`)

  const segs = segments(trace, 40)
  t.equal(segs.length, 2, 'the 700 ms block splits the trace in two windows')
  const [first, second] = segs
  t.equal(first?.syncBatches, 3)
  t.equal(second?.syncBatches, 0)
  // The busy loop's stall: the first tick after the loop began (start-up may have stalled too, loading modules).
  const stall = (first?.stalls ?? []).map(s => s.tick).find(x => x.t >= busyAt && x.t < busyAt + 500)
  t.ok(stall !== undefined && stall.lateMs >= 50 && stall.lateMs < 500, `the stall is 50..500 ms late (got ${stall?.lateMs})`)
  // Busy the whole time: on a core or waiting for one (the machine may be shared), never asleep.
  t.ok(stall !== undefined && (stall.runUs + stall.waitUs) / 1000 >= 50, `the stalled tick ran or waited >= 50 ms (got ${stall?.runUs} + ${stall?.waitUs} µs)`)
  t.match(report(trace, 40), /stall at .*ms late; in its last tick the main thread ran/)
})

t.test('the preload leaves a process whose command line does not match alone', async t => {
  const dir = await mkdtemp(join(tmpdir(), 'hr-relay-event-trace-'))
  t.teardown(async () => { await rm(dir, { recursive: true, force: true }) })
  t.equal((await run(dir, 'something-else', join(dir, 'db'))).code, 0)
  t.same((await readdir(dir)).filter(f => f.endsWith('.log')), [])
})

t.test('segments: shares of wall time, lateness, batches and GC of each window, split at a gap', async t => {
  const lines = ['A hr-relay start --no-demo']
  // Window 1: ticks every 5 ms from 1000 to 3000 (401 ticks), each with 2.5 ms on a core and 1 ms waiting.
  for (let i = 0; i <= 400; i++) lines.push(`T ${1000 + i * 5} ${i === 200 ? 60 : 0.5} 0.5 2500 1000`)
  lines.push('B 1100 1110 8 1', 'B 1200 1240 4 1', 'B 1300 1301 2 0', 'G 1500 20 1', 'G 1995 3 4')
  // Window 2 after a 2 s gap: 1 s of ticks, idle.
  for (let i = 0; i <= 200; i++) lines.push(`T ${5000 + i * 5} 0.1 0.0 0 0`)
  const segs = segments(readTrace(lines.join('\n')), 40)
  t.equal(segs.length, 2)
  const [a, b] = segs
  t.equal(a?.from, 1000)
  t.equal(a?.to, 3000)
  t.equal(a?.run, 400 * 2500 / 2_000_000, 'run share: the 400 ticks after the first over 2 s')
  t.equal(a?.wait, 400 * 1000 / 2_000_000)
  t.equal(a?.lateMaxMs, 60)
  t.equal(a?.lateP99Ms, 0.5)
  t.equal(a?.syncBatches, 2, 'the batch without sync is not counted')
  t.equal(a?.opsPerSecond, 6)
  t.equal(a?.batchMaxMs, 40)
  t.equal(a?.gcMs, 23)
  t.equal(a?.gcPauses, 2)
  t.equal(a?.stalls.length, 1)
  t.same(a?.stalls[0]?.gc.map(g => g.t), [1995], 'the GC pause inside the stalled tick')
  t.equal(b?.run, 0)
  t.equal(b?.stalls.length, 0)
})
