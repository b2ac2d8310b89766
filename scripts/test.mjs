#!/usr/bin/env node
// `npm test`, what CI runs: install the system packages the tests drive when
// they are missing, then the type check, the linter and every test file under
// test/ with tap (coverage by tap's built-in c8, checked against a floor).
// It ends with the one line CI reads: `N passed, M failed`, where the type
// check and the lint count as one test each beside tap's own counts (and the
// coverage floor when HR_RELAY_COVERAGE_FLOOR is set). Also printed: each stage's wall time and the ten slowest files.
import { spawn, spawnSync } from 'node:child_process'

/** The Debian packages the tests need, and why. */
const needed = [
  { cmd: 'socat', pkg: 'socat', why: 'serial sources are tested on real pseudo-terminals' },
  { cmd: 'mosquitto', pkg: 'mosquitto', why: 'the upstream bridge is tested against a real Mosquitto' },
  { cmd: 'chromium', pkg: 'chromium', why: 'the web pages are tested in headless Chromium' }
]
/**
 * Line coverage is printed against a floor, but the floor does not fail the run unless HR_RELAY_COVERAGE_FLOOR is
 * set: tap's report counts a different set of files from run to run of the same tree (1,764, 5,903 and 16,545
 * lines in three runs on 2026-11-23, reading 90.6 %, 87.1 % and 82.7 %), so it cannot gate CI until that is fixed.
 */
const COVERAGE_FLOOR = Number(process.env.HR_RELAY_COVERAGE_FLOOR ?? 75)
const COVERAGE_ENFORCED = process.env.HR_RELAY_COVERAGE_FLOOR !== undefined

const started = Date.now()
const results = []
const stageTimes = []

function has (cmd) {
  return spawnSync('sh', ['-c', `command -v ${cmd} || test -x /usr/sbin/${cmd}`], { stdio: 'ignore' }).status === 0
}

function installMissing () {
  const missing = needed.filter(n => !has(n.cmd))
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

results.push(await stage('typecheck (tsc --noEmit)', async () => (await run('npx', ['--no-install', 'tsc', '--noEmit', '-p', '.'])).code === 0))
results.push(await stage('lint (eslint, neostandard)', async () => (await run('npx', ['--no-install', 'eslint', '.'])).code === 0))

let tapCounts = { pass: 0, fail: 1, skip: 0 }
let coverage
await stage('tests (tap, with coverage)', async () => {
  // Tests run the TypeScript sources, never a dist/ left over from `npm run build`.
  // Each file's line: `ok 13 - test/api/pipeline/ingest.test.ts # time=925.362ms`
  const files = []
  const fileLine = /^(?:not )?ok \d+ - (test\/\S+) # time=([\d.]+)ms/
  const { code, tail } = await run('npx', ['--no-install', 'tap', '--coverage-report=text-summary', ...process.argv.slice(2)], { ...process.env, HR_RELAY_FROM_SOURCE: '1' }, line => {
    const x = fileLine.exec(line)
    if (x !== null) files.push([x[1], Number(x[2])])
  })
  // tap's closing summary: `# { total: 10, pass: 9, fail: 1, skip: 0 }`
  const m = [...tail.matchAll(/^# \{ ([^}]*) \}$/gm)].pop()
  const counts = {}
  for (const part of (m?.[1] ?? '').split(',')) {
    const [k, v] = part.split(':').map(s => s.trim())
    if (k) counts[k] = Number(v)
  }
  tapCounts = { pass: counts.pass ?? 0, fail: (counts.fail ?? 0) + (m ? 0 : 1), skip: (counts.skip ?? 0) + (counts.todo ?? 0) }
  const cov = /^Lines\s*:\s*([\d.]+)%/m.exec(tail)
  coverage = cov === null ? undefined : Number(cov[1])
  files.sort((a, b) => b[1] - a[1])
  if (files.length > 0) {
    console.log('\nnpm test: the ten slowest test files')
    for (const [f, ms] of files.slice(0, 10)) console.log(`  ${(ms / 1000).toFixed(1).padStart(6)} s  ${f}`)
  }
  return code === 0 && tapCounts.fail === 0
})

// The floor is checked for the whole suite when enforced; a run of chosen files (`npm test -- test/x.test.ts`) only reports it.
const subset = process.argv.slice(2).some(a => !a.startsWith('-'))
const covOk = coverage !== undefined && coverage >= COVERAGE_FLOOR
const checked = COVERAGE_ENFORCED && !subset
console.log(`\nnpm test: line coverage ${coverage === undefined ? 'not reported' : coverage + '%'} (floor ${COVERAGE_FLOOR}%${checked ? '' : ', reported only'}) ${covOk ? 'ok' : checked ? 'FAILED' : 'below the floor'}`)
if (checked) results.push(covOk)

const wall = (Date.now() - started) / 1000
console.log(`npm test: wall time ${Math.floor(wall / 60)} min ${Math.round(wall % 60)} s (${stageTimes.map(([n, ms]) => `${n.split(' ')[0]} ${(ms / 1000).toFixed(0)} s`).join(', ')})`)
const passed = tapCounts.pass + results.filter(Boolean).length
const failed = tapCounts.fail + results.filter(r => !r).length
console.log(`${passed} passed, ${failed} failed` + (tapCounts.skip ? `, ${tapCounts.skip} skipped` : ''))
process.exit(failed === 0 ? 0 : 1)
