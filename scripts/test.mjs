#!/usr/bin/env node
// `npm test`, what CI runs: install the system packages the tests drive when
// they are missing, then the type check, the linter and every test file under
// test/ with tap (coverage by tap's built-in c8, checked against a floor).
// It ends with the one line CI reads: `N passed, M failed`, where the type
// check and the lint count as one test each beside tap's own counts (and the
// coverage floor, for a run of the whole suite). Also printed: each stage's wall time and the ten slowest files.
import { spawn, spawnSync } from 'node:child_process'
import { existsSync, readdirSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { onSupportedNode } from './supported-node.mjs'

/** The Debian packages the tests need, and why. */
const needed = [
  { cmd: 'socat', pkg: 'socat', why: 'serial sources are tested on real pseudo-terminals' },
  { cmd: 'mosquitto', pkg: 'mosquitto', why: 'the upstream bridge is tested against a real Mosquitto' },
  { cmd: 'chromium', pkg: 'chromium', why: 'the web pages are tested in headless Chromium' },
  // Debian keeps the server's programs off the PATH, under /usr/lib/postgresql/<major>/bin (test/helpers/postgres.ts).
  { cmd: 'postgres', pkg: 'postgresql', why: 'the hub is tested against a real PostgreSQL', present: () => readdirSync('/usr/lib/postgresql', { withFileTypes: true }).some(d => existsSync(`/usr/lib/postgresql/${d.name}/bin/postgres`)) }
]
/**
 * Line coverage of the product's sources (api, relay, firmware-protocol, device-sim, bin), printed with each run and
 * failing a whole-suite run below this floor (HR_RELAY_COVERAGE_FLOOR=<percent> sets another). It gates since the
 * report counts the same files every run: before, tsx's source maps (file:// sources, no contents) made files drop
 * out of tap's c8 report or count one line, depending on the order c8 read the processes' records, so the same
 * tree counted 1,764, 5,903 and 16,545 lines (test/helpers/coverage-sources.mjs rewrites them). The other cause: a
 * second tap run in the same folder (a targeted `npx tap test/x.test.ts`) removes .tap/coverage when it starts; the
 * run checks for that below and then reports no figure, which fails the floor with that reason.
 */
onSupportedNode(import.meta.url, 'npm test')
console.log(`npm test: node ${process.version}`)

const COVERAGE_FLOOR = Number(process.env.HR_RELAY_COVERAGE_FLOOR ?? 75)
const COVERAGE_DIR = fileURLToPath(new URL('../.tap/coverage', import.meta.url))

const started = Date.now()
const results = []
const stageTimes = []

function has (cmd, present) {
  if (present !== undefined) { try { return present() } catch { return false } }
  return spawnSync('sh', ['-c', `command -v ${cmd} || test -x /usr/sbin/${cmd}`], { stdio: 'ignore' }).status === 0
}

function installMissing () {
  const missing = needed.filter(n => !has(n.cmd, n.present))
  if (missing.length === 0) {
    console.log(`npm test: system packages present (${needed.map(n => n.pkg).join(', ')}); nothing to install`)
    return
  }
  for (const m of missing) console.log(`npm test: ${m.pkg} is missing; ${m.why}`)
  if (process.env.HR_RELAY_SKIP_APT === '1') {
    console.log('npm test: HR_RELAY_SKIP_APT=1, not installing; the tests that need them will fail')
    return
  }
  const list = missing.map(m => m.pkg).join(' ')
  if (process.getuid?.() !== 0) {
    console.error(`npm test: not root, so not installing; run: sudo apt-get install -y ${list}`)
    return
  }
  console.log(`npm test: installing with apt-get: ${list} (set HR_RELAY_SKIP_APT=1 to skip)`)
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' }
  spawnSync('apt-get', ['update', '-qq'], { stdio: 'inherit', env })
  const r = spawnSync('apt-get', ['install', '-y', '-qq', '--no-install-recommends', ...missing.map(m => m.pkg)], { stdio: 'inherit', env })
  if (r.status !== 0) console.error('npm test: apt-get install failed; tests needing these tools will fail')
}

/** Runs a command, streaming its output (each complete line also to onLine); resolves with exit code and the last 64 KiB of stdout. */
function run (cmd, args, env = process.env, onLine = () => {}) {
  return new Promise(resolve => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'inherit'], env })
    let tail = ''
    let partial = ''
    child.stdout.on('data', chunk => {
      process.stdout.write(chunk)
      const text = chunk.toString('utf8')
      tail = (tail + text).slice(-65536)
      const lines = (partial + text).split('\n')
      partial = lines.pop() ?? ''
      for (const line of lines) onLine(line)
    })
    child.on('close', code => resolve({ code: code ?? 1, tail }))
  })
}

async function stage (name, fn) {
  const t0 = Date.now()
  console.log(`\nnpm test: ${name}`)
  const ok = await fn()
  const ms = Date.now() - t0
  stageTimes.push([name, ms])
  console.log(`npm test: ${name} ${ok ? 'ok' : 'FAILED'} (${(ms / 1000).toFixed(1)} s)`)
  return ok
}

installMissing()

/** Runs a check with its output (stdout and stderr) held back, so that two can run at once and print in turn. */
function check (name, cmd, args) {
  const t0 = Date.now()
  return new Promise(resolve => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] })
    const out = []
    child.stdout.on('data', d => out.push(d))
    child.stderr.on('data', d => out.push(d))
    child.on('close', code => { resolve({ name, ok: code === 0, ms: Date.now() - t0, output: Buffer.concat(out).toString('utf8') }) })
  })
}

// The type check and the lint each keep one core busy; on two cores they run side by side, before the tests.
const checks = await Promise.all([
  check('typecheck (tsc --noEmit)', 'npx', ['--no-install', 'tsc', '--noEmit', '-p', '.']),
  check('lint (eslint, neostandard)', 'npx', ['--no-install', 'eslint', '.'])
])
for (const c of checks) {
  console.log(`\nnpm test: ${c.name}`)
  process.stdout.write(c.output)
  console.log(`npm test: ${c.name} ${c.ok ? 'ok' : 'FAILED'} (${(c.ms / 1000).toFixed(1)} s, beside the other check)`)
  stageTimes.push([c.name, c.ms])
  results.push(c.ok)
}

let tapCounts = { pass: 0, fail: 1, skip: 0 }
let coverage
/** Each failed test as `file > subtest > … > assertion`, with the first lines of tap's diagnosis; printed again at the end. */
const failures = []
await stage('tests (tap, with coverage)', async () => {
  // Tests run the TypeScript sources, never a dist/ left over from `npm run build`.
  // Each file's line: `ok 13 - test/api/pipeline/ingest.test.ts # time=925.362ms`
  const files = []
  const fileLine = /^(?:not )?ok \d+ - (test\/\S+) # time=([\d.]+)ms/
  // The path of open subtests by indentation, so that a failure deep in a file's output names where it is.
  const open = []
  let diagnosis = null
  const { code, tail } = await run('npx', ['--no-install', 'tap', '--coverage-report=none', ...process.argv.slice(2)], { ...process.env, HR_RELAY_FROM_SOURCE: '1' }, line => {
    const x = fileLine.exec(line)
    if (x !== null) files.push([x[1], Number(x[2])])
    const depth = (/^ */.exec(line)?.[0].length ?? 0) / 4
    const subtest = /^ *# Subtest: (.*)$/.exec(line)
    if (subtest !== null) { open.length = depth; open[depth] = subtest[1]; diagnosis = null; return }
    const notOk = /^ *not ok \d+ - (.*?)(?: # time=[\d.]+ms)?$/.exec(line)
    if (notOk !== null) {
      // A failed parent repeats its failed children; only the innermost failure is listed.
      const where = [...open.slice(0, depth), notOk[1]].filter(Boolean)
      const last = failures.at(-1)
      if (last === undefined || !last.where.startsWith(where.join(' > '))) {
        diagnosis = { where: where.join(' > '), lines: [] }
        failures.push(diagnosis)
      } else diagnosis = null
      return
    }
    if (diagnosis !== null && diagnosis.lines.length < 14 && !/^\s*(?:$|---|\.\.\.|at:|typeName:|columnNumber:|source: \|)/.test(line)) diagnosis.lines.push(line.trim())
    if (/^ *(?:ok|not ok) \d+ /.test(line)) diagnosis = null
  })
  // tap's closing summary: `# { total: 10, pass: 9, fail: 1, skip: 0 }`
  const m = [...tail.matchAll(/^# \{ ([^}]*) \}$/gm)].pop()
  const counts = {}
  for (const part of (m?.[1] ?? '').split(',')) {
    const [k, v] = part.split(':').map(s => s.trim())
    if (k) counts[k] = Number(v)
  }
  tapCounts = { pass: counts.pass ?? 0, fail: (counts.fail ?? 0) + (m ? 0 : 1), skip: (counts.skip ?? 0) + (counts.todo ?? 0) }
  // The coverage of the product's sources only, with any file:// source maps made readable for tap's c8 (see the helper).
  // Every test process writes one record into .tap/coverage. Fewer records than files means another tap run in
  // this folder started meanwhile and removed them (tap does that at its start): the figure would be wrong.
  let report = ''
  if (!process.argv.includes('--disable-coverage')) {
    let records = 0
    try { records = readdirSync(COVERAGE_DIR).filter(name => name.endsWith('.json')).length } catch { /* none written */ }
    if (records < files.length) {
      console.log(`\nnpm test: coverage incomplete: ${records} records for ${files.length} test files (another tap run in this folder removed .tap/coverage while the suite ran); not reported`)
    } else {
      await run(process.execPath, [fileURLToPath(new URL('../test/helpers/coverage-sources.mjs', import.meta.url))])
      report = (await run('npx', ['--no-install', 'tap', 'report', 'text-summary'])).tail
    }
  }
  const cov = /^Lines\s*:\s*([\d.]+)%/m.exec(report)
  coverage = cov === null ? undefined : Number(cov[1])
  files.sort((a, b) => b[1] - a[1])
  if (files.length > 0) {
    console.log('\nnpm test: the ten slowest test files')
    for (const [f, ms] of files.slice(0, 10)) console.log(`  ${(ms / 1000).toFixed(1).padStart(6)} s  ${f}`)
  }
  return code === 0 && tapCounts.fail === 0
})

// The floor is checked for the whole suite; a run of chosen files (`npm test -- test/x.test.ts`) or one with
// `-- --disable-coverage` only reports it.
const subset = process.argv.slice(2).some(a => !a.startsWith('-'))
const covOk = coverage !== undefined && coverage >= COVERAGE_FLOOR
const checked = !subset && !process.argv.includes('--disable-coverage')
console.log(`\nnpm test: line coverage ${coverage === undefined ? 'not reported' : coverage + '%'} (floor ${COVERAGE_FLOOR}%${checked ? '' : ', reported only'}) ${covOk ? 'ok' : checked ? 'FAILED' : 'below the floor'}`)
if (checked) results.push(covOk)

const wall = (Date.now() - started) / 1000
console.log(`npm test: wall time ${Math.floor(wall / 60)} min ${Math.round(wall % 60)} s (${stageTimes.map(([n, ms]) => `${n.split(' ')[0]} ${(ms / 1000).toFixed(0)} s`).join(', ')})`)
if (failures.length > 0) {
  console.log(`\nnpm test: ${failures.length} failed test${failures.length === 1 ? '' : 's'}`)
  for (const f of failures.slice(0, 20)) {
    console.log(`  not ok: ${f.where}`)
    for (const l of f.lines) console.log(`      ${l}`)
  }
}
const passed = tapCounts.pass + results.filter(Boolean).length
const failed = tapCounts.fail + results.filter(r => !r).length
console.log(`${passed} passed, ${failed} failed` + (tapCounts.skip ? `, ${tapCounts.skip} skipped` : ''))
process.exit(failed === 0 ? 0 : 1)
