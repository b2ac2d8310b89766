// The footprint and pi-profile servers run with the unit's Environment= lines,
// and e2e-latency measures a contention window at the unit's Nice=.
import t from 'tap'
import { spawn } from 'node:child_process'
import { readdir, readFile } from 'node:fs/promises'
import { fileURLToPath } from 'node:url'
import { unitEnvironment, unitNice } from '../../bench/lib/unit-env.ts'
import { reniceProcess } from '../../bench/lib/hog.ts'

t.test('unitEnvironment reads the [Service] Environment= lines, quoted or not, later lines winning', async t => {
  const unit = [
    '[Unit]',
    'Environment=NOT_THIS=1',
    '[Service]',
    '# Environment=COMMENTED=1',
    'Environment=MALLOC_ARENA_MAX=4',
    'Environment="A=b c" D=e',
    'Environment=MALLOC_ARENA_MAX=2',
    'ExecStart=/usr/bin/node x.js',
    '[Install]',
    'WantedBy=multi-user.target'
  ].join('\n')
  t.same(unitEnvironment(unit), { MALLOC_ARENA_MAX: '2', A: 'b c', D: 'e' })
})

t.test('the shipped unit sets MALLOC_ARENA_MAX=2 and 1 MB semi-spaces', async t => {
  const unit = await readFile(fileURLToPath(new URL('../../deploy/hr-relay.service', import.meta.url)), 'utf8')
  t.same(unitEnvironment(unit), { MALLOC_ARENA_MAX: '2', NODE_OPTIONS: '--max-semi-space-size=1' })
})

t.test('unitNice reads the last Nice= of [Service]; none or a value out of range is undefined', async t => {
  t.equal(unitNice('[Service]\nNice=-5\nExecStart=/usr/bin/node x.js'), -5)
  t.equal(unitNice('[Service]\nNice=3\nNice=-7'), -7)
  t.equal(unitNice('[Unit]\nNice=-5\n[Service]\nExecStart=x'), undefined)
  t.equal(unitNice('[Service]\n# Nice=-5'), undefined)
  t.equal(unitNice('[Service]\nNice=-21'), undefined)
  t.equal(unitNice('[Service]\nNice=high'), undefined)
  t.equal(unitNice('[Service]\nNice='), undefined)
})

t.test('the shipped unit runs hr-relay at nice -5', async t => {
  const unit = await readFile(fileURLToPath(new URL('../../deploy/hr-relay.service', import.meta.url)), 'utf8')
  t.equal(unitNice(unit), -5)
})

/** The nice value of each thread of `pid` (field 19 of /proc/<pid>/task/<tid>/stat). */
async function threadNices (pid: number): Promise<number[]> {
  const nices: number[] = []
  for (const tid of await readdir(`/proc/${pid}/task`)) {
    const stat = await readFile(`/proc/${pid}/task/${tid}/stat`, 'utf8')
    nices.push(Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]))
  }
  return nices
}

t.test('reniceProcess sets every thread of a process, as Nice= does', async t => {
  // A node process has several threads (V8's workers, libuv's): each one's nice is its own on Linux.
  // Its JavaScript runs once Node has started its threads: sample them after it says so.
  const child = spawn(process.execPath, ['-e', 'process.stdout.write("ready"); setInterval(() => {}, 1000)'], { stdio: ['ignore', 'pipe', 'ignore'] })
  t.teardown(() => { child.kill('SIGKILL') })
  await new Promise(resolve => child.stdout.once('data', resolve))
  const pid = child.pid as number
  const before = await threadNices(pid)
  t.ok(before.length >= 2, `several threads (${before.length})`)
  t.equal(new Set(before).size, 1, 'every thread starts at the nice of its parent')
  // Raising a nice value needs no privilege, so this runs for any user.
  const target = before[0] === 7 ? 8 : 7
  t.equal(await reniceProcess(pid, target), true)
  const after = await threadNices(pid)
  t.ok(after.length >= before.length, `no thread missed (${after.length} now, ${before.length} before)`)
  t.same(new Set(after), new Set([target]))
})
