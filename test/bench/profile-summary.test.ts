// bench/profile-summary.ts: where a --profile run's main thread was. A process
// the contention rounds stop with SIGSTOP takes no samples while stopped, and
// V8 gives the whole stop to the first sample after SIGCONT; the summary
// leaves such intervals out and reports them as gaps.
import t from 'tap'
import { spawn } from 'node:child_process'
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { selfTimes, summarizeProfile, type Profile } from '../../bench/profile-summary.ts'

// Says "ready", spins until it sees the wall clock jump (it was stopped), then spins 300 ms more in another function.
// The clock is first read before "ready" is written: a stop that comes before the loop's first read (the parent,
// woken by "ready", may stop the child at once) is still a jump from that reading.
const SCRIPT = `
function spinUntilStopped (last) {
  const deadline = Date.now() + 20000
  for (;;) {
    const now = Date.now()
    if (now - last > 800) return
    if (now > deadline) process.exit(3)
    last = now
  }
}
function spinAfterStop (ms) { const end = Date.now() + ms; while (Date.now() < end); }
const before = Date.now()
process.stdout.write('ready\\n')
spinUntilStopped(before)
spinAfterStop(300)
`

t.test('a real profile of a process stopped for 1 s: the stop is a gap, not time in the function sampled after it', async t => {
  const dir = await mkdtemp(join(tmpdir(), 'hr-relay-profile-summary-'))
  t.teardown(async () => { await rm(dir, { recursive: true, force: true }) })
  const child = spawn(process.execPath, ['--cpu-prof', '--cpu-prof-dir', dir, '-e', SCRIPT], {
    stdio: ['ignore', 'pipe', 'inherit']
  })
  const exited = new Promise<number>(resolve => child.once('exit', code => { resolve(code ?? -1) }))
  await new Promise<void>(resolve => {
    child.stdout.on('data', (c: Buffer) => { if (c.toString('utf8').includes('ready')) resolve() })
  })
  child.kill('SIGSTOP')
  await new Promise(resolve => setTimeout(resolve, 1000)) // the stop itself, not a wait for an event
  child.kill('SIGCONT')
  t.equal(await exited, 0, 'the child saw the stop and finished')
  // One profile a thread (the test runner's module hooks run on a thread of their own): the main thread's has the spins.
  const profiles: Profile[] = []
  for (const f of (await readdir(dir)).filter(f => f.endsWith('.cpuprofile'))) profiles.push(JSON.parse(await readFile(join(dir, f), 'utf8')) as Profile)
  const main = profiles.filter(p => p.nodes.some(n => n.callFrame.functionName === 'spinAfterStop'))
  t.equal(main.length, 1, 'one profile has the spins')
  const profile = main[0] as Profile
  const s = selfTimes(profile)
  t.ok(s.gaps >= 1, `${s.gaps} gap(s) left out`)
  t.ok(s.gapUs >= 950_000, `the gaps hold the 1 s stop (${s.gapUs} µs)`)
  const longest = Math.max(...s.byFunction.values())
  t.ok(longest < 900_000, `no function carries the stop (the longest has ${longest} µs)`)
  const after = [...s.byFunction].find(([name]) => name.startsWith('spinAfterStop '))?.[1] ?? 0
  t.ok(after >= 150_000 && after < 900_000, `the 300 ms spin after the stop is there as itself (${after} µs)`)
  t.match(summarizeProfile(profile, 5), /left out: \d+\.\d s in \d+ gaps over 500 ms between samples/)
})

t.test('self times: exact arithmetic on a made-up profile, with a 10 s gap and a skipped start', async t => {
  const frame = (functionName: string, url: string): Profile['nodes'][number]['callFrame'] => ({ functionName, url, lineNumber: 9 })
  const profile: Profile = {
    nodes: [
      { id: 1, callFrame: frame('(root)', ''), children: [2, 3, 4] },
      { id: 2, callFrame: frame('(idle)', '') },
      { id: 3, callFrame: frame('plan', '/work/main/dist/api/store/readings-plan.js') },
      { id: 4, callFrame: frame('_batch', '/work/main/node_modules/classic-level/index.js') }
    ],
    startTime: 0,
    endTime: 12_100_000,
    // µs since the sample before: 0.1 s skipped, then plan 0.3 + 0.2 s, a 10 s stop ending in _batch, idle 0.4 s, _batch 0.1 s.
    samples: [3, 3, 3, 4, 2, 4],
    timeDeltas: [100_000, 300_000, 200_000, 10_000_000, 400_000, 100_000]
  }
  const s = selfTimes(profile, 0.15)
  t.same({ total: s.totalUs, idle: s.idleUs, gaps: s.gaps, gapUs: s.gapUs }, { total: 1_000_000, idle: 400_000, gaps: 1, gapUs: 10_000_000 })
  t.same(Object.fromEntries(s.byFunction), {
    'plan dist/api/store/readings-plan.js:10': 500_000,
    '_batch node_modules/classic-level/index.js:10': 100_000,
    '(idle) :10': 400_000
  })
  t.same(s.byArea.get('dep:classic-level'), 100_000)
  t.same(s.byArea.get('dist/api/'), 500_000)
  t.equal(summarizeProfile(profile, 2, 0.15), [
    'total sampled 1.0 s, not idle 0.6 s',
    'left out: 10.0 s in 1 gaps over 500 ms between samples (the process stopped)',
    '',
    'self time by area:',
    '   50.0%  dist/api/',
    '   40.0%  (idle)',
    '',
    'self time by function:',
    '   50.0%  plan dist/api/store/readings-plan.js:10',
    '   40.0%  (idle) :10'
  ].join('\n'))
})
