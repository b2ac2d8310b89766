// startup: how fast the installed command answers, through bin/hr-relay.cjs as
// an operator runs it (compiled dist/; the scenario builds it first when it is
// missing or stale). Each figure is the median wall time of N runs, spawn to
// exit (or to GET /health 200), against `node -e 0` measured in the same run
// (each command's runs alternate with runs of `node -e 0`):
// `hr-relay --help`, `hr-relay admin user list` against a running service,
// and `hr-relay start --no-demo` until /health answers 200. The admin command
// is timed once more beside a CPU hog (one busy process per core, as the
// contention rounds of e2e-latency use), against `node -e 0` beside the same
// hog: an operator types it on a box that is busy.
import { spawn } from 'node:child_process'
import { readFile, rm } from 'node:fs/promises'
import { join } from 'node:path'
import { BenchFailure } from './lib/errors.ts'
import { startHog } from './lib/hog.ts'
import { figure } from './lib/results.ts'
import { sleep, type Context, type Outcome, type Scenario } from './lib/scenario.ts'
import { ROOT, startServer, tempDir } from './lib/server.ts'
import { summarize } from './lib/stats.ts'

const BIN = join(ROOT, 'bin/hr-relay.cjs')
const FALLBACK = /running the TypeScript sources through esbuild/

/** The environment of an operator's shell: no HR_RELAY_FROM_SOURCE, BLE off, quiet log. */
function env (): NodeJS.ProcessEnv {
  const e: NodeJS.ProcessEnv = { ...process.env, HR_RELAY_BLE: '0', HR_RELAY_LOG_LEVEL: 'warn' }
  delete e.HR_RELAY_FROM_SOURCE
  return e
}

/** Runs a command to its exit; wall time in ms. */
async function timed (args: string[]): Promise<{ ms: number, code: number | null, stdout: string, stderr: string }> {
  const t0 = performance.now()
  const child = spawn(process.execPath, args, { cwd: ROOT, env: env(), stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (c: Buffer) => { stdout += c.toString('utf8') })
  child.stderr.on('data', (c: Buffer) => { stderr += c.toString('utf8') })
  const code = await new Promise<number | null>(resolve => { child.on('close', resolve) })
  return { ms: performance.now() - t0, code, stdout, stderr }
}

type Run = { code: number | null, stdout: string, stderr: string }

/**
 * Runs each command n times, the commands in turn (A B A B …), so that every
 * command meets the same moments of a shared machine; the median wall time of each.
 */
async function interleaved (n: number, commands: Array<{ args: string[], check: (r: Run) => boolean }>): Promise<number[]> {
  const times: number[][] = commands.map(() => [])
  for (let i = 0; i < n; i++) {
    for (const [k, c] of commands.entries()) {
      const r = await timed(c.args)
      if (!c.check(r)) throw new BenchFailure(`node ${c.args.join(' ')} failed (exit ${r.code}): ${r.stderr.slice(0, 500)}`)
      times[k]?.push(r.ms)
    }
  }
  return times.map(ts => summarize(ts).p50)
}

/** `hr-relay start --no-demo` on a fresh data directory: ms from spawn to the first GET /health 200. */
async function startToHealth (): Promise<number> {
  const dataDir = await tempDir('startup')
  const t0 = performance.now()
  const child = spawn(process.execPath, [BIN, 'start', '--data-dir', dataDir, '--host', '127.0.0.1', '--http-port', '0', '--mqtt-port', '0', '--no-demo'], { cwd: ROOT, env: env(), stdio: ['ignore', 'ignore', 'pipe'] })
  let err = ''
  child.stderr.on('data', (c: Buffer) => { err = (err + c.toString('utf8')).slice(-4000) })
  const exited = new Promise<void>(resolve => { child.once('exit', () => { resolve() }) })
  try {
    for (;;) {
      if (child.exitCode !== null) throw new BenchFailure(`hr-relay start exited with ${child.exitCode}: ${err}`)
      if (performance.now() - t0 > 60_000) throw new BenchFailure(`hr-relay start: no /health 200 within 60 s: ${err}`)
      try {
        const info = JSON.parse(await readFile(join(dataDir, 'server.json'), 'utf8')) as { url: string }
        if ((await fetch(info.url + '/health')).status === 200) return performance.now() - t0
      } catch { /* not listening yet */ }
      await sleep(5)
    }
  } finally {
    child.kill('SIGTERM')
    await exited
    await rm(dataDir, { recursive: true, force: true })
  }
}

export const startup: Scenario = {
  name: 'startup',
  reference: '`node -e 0` (a bare node start), median of the same number of runs in the same run',
  async run (ctx: Context): Promise<Outcome> {
    const n = ctx.quick ? 3 : 20
    // --quick must finish in under a minute on a fresh clone: one run each beside the hog and of start.
    const nHog = ctx.quick ? 1 : 10
    const nStart = ctx.quick ? 1 : 10
    const notes: string[] = []
    // The installed box runs dist/; build it when bin/hr-relay.cjs would fall back to the sources.
    const probe = await timed([BIN, '--help'])
    if (FALLBACK.test(probe.stderr)) {
      ctx.log(`startup: ${probe.stderr.trim()}; building dist/ (npm run build)`)
      const build = await timed([join(ROOT, 'scripts/build.mjs')])
      if (build.code !== 0) throw new BenchFailure(`npm run build failed: ${build.stderr.slice(-2000)}`)
      notes.push(`dist/ was missing or stale: built it first (${(build.ms / 1000).toFixed(1)} s)`)
      if (FALLBACK.test((await timed([BIN, '--help'])).stderr)) throw new BenchFailure('bin/hr-relay.cjs still runs the sources after npm run build')
    }
    const ok = (r: { code: number | null, stderr: string }): boolean => r.code === 0 && !FALLBACK.test(r.stderr)

    // node -e 0 runs in turn with each command it is the reference of: a burst of other work on the machine meets both.
    const bareRun = { args: ['-e', '0'], check: (r: Run) => r.code === 0 }
    const [bare, help] = await interleaved(n, [bareRun, { args: [BIN, '--help'], check: r => ok(r) && r.stdout.includes('hr-relay start') }]) as [number, number]

    const server = await startServer()
    let admin: number
    let bareAdmin: number
    let hogAdmin: number
    let hogBare: number
    let hogProcesses: number
    try {
      await server.admin('POST', '/admin/users', { username: 'startup', password: 'startup-password' })
      const adminRun = { args: [BIN, 'admin', 'user', 'list', '--data-dir', server.dataDir], check: (r: Run) => ok(r) && r.stdout.startsWith('startup\t') }
      ;[bareAdmin, admin] = await interleaved(n, [bareRun, adminRun]) as [number, number]
      const hog = startHog()
      hogProcesses = hog.processes
      try {
        ;[hogBare, hogAdmin] = await interleaved(nHog, [bareRun, adminRun]) as [number, number]
      } finally {
        await hog.stop()
      }
    } finally {
      await server.stop()
    }

    const starts: number[] = []
    for (let i = 0; i < nStart; i++) starts.push(await startToHealth())
    const start = summarize(starts).p50
    const ref = { name: 'node -e 0', value: bare }
    notes.push(`${n} runs each of --help and admin user list, each in turn with a run of node -e 0 (its median beside admin: ${bareAdmin.toFixed(0)} ms); ${nStart} start${nStart === 1 ? '' : 's'}, each on a fresh data directory (start: ${starts.map(s => s.toFixed(0)).join(', ')} ms)`)
    notes.push(`beside a CPU hog: ${hogProcesses} busy processes (node -e 'for(;;){}', one per core) while ${nHog} run${nHog === 1 ? '' : 's'} of admin user list alternate with as many of node -e 0; the service it asks runs beside the same hog`)
    return {
      figures: [
        figure(`hr-relay --help, median of ${n}`, help, 'ms', ref, { text: '<= 150 ms', met: help <= 150 }),
        figure(`hr-relay admin user list against a running service, median of ${n}`, admin, 'ms', { name: 'node -e 0', value: bareAdmin }, { text: '<= 400 ms', met: admin <= 400 }),
        figure(`hr-relay admin user list beside a CPU hog, median of ${nHog}`, hogAdmin, 'ms', { name: 'node -e 0, same hog', value: hogBare }),
        figure(`hr-relay start --no-demo to GET /health 200, median of ${nStart}`, start, 'ms', ref, { text: '<= 1,500 ms', met: start <= 1500 }),
        figure(`node -e 0, median of ${n} (in turn with --help)`, bare, 'ms')
      ],
      lost: 0,
      notes
    }
  }
}
