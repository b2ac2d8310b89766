// bench/tools/dsync-wake.ts: the O_DSYNC write probe whose figures bench/README.md quotes for the wait to run again
// after the disk has answered, beside a CPU hog.
import t from 'tap'
import { spawn } from 'node:child_process'
import { mkdtemp, readdir, rm, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, measure, preallocate, timeWrites, type Try } from '../../bench/tools/dsync-wake.ts'

const ROOT = fileURLToPath(new URL('../../', import.meta.url))

t.test('describe: percentiles of the wall time and of the disk part, and the share waiting for a core', async t => {
  // 1,000 writes: 990 of 0.1 ms on the disk, 10 that then waited 4 ms for a core.
  const wall = new Float64Array(1000).fill(0.1)
  const coreWait = new Float64Array(1000)
  for (let i = 990; i < 1000; i++) { wall[i] = 4.1; coreWait[i] = 4 }
  const line = describe({ kind: 'hog', wall, coreWait })
  t.equal(line, 'hog: 1000 writes, wall p50 0.100 p99 0.100 p99.9 4.10 max 4.10 ms; disk p99 0.100 p99.9 0.100 ms; waiting for a core 29 % of the wall time')
})

t.test('timeWrites: one timed O_DSYNC write a record, over the preallocated file without growing it', async t => {
  const parent = await mkdtemp(join(tmpdir(), 'dsync-wake-test-'))
  t.teardown(async () => { await rm(parent, { recursive: true, force: true }) })
  const file = await preallocate(parent)
  const before = (await stat(file.path)).size
  const got = timeWrites(file.path, 50)
  t.equal(got.wall.length, 50)
  t.equal(got.coreWait.length, 50)
  t.ok(got.wall.every(w => w > 0), 'every write took time')
  t.ok(got.coreWait.every((c, i) => c >= 0 && c <= got.wall[i]!), 'the wait for a core is a part of the write')
  t.equal((await stat(file.path)).size, before, 'overwrites: the file keeps its size')
  t.equal(before, 8 << 20)
  await file.remove()
  t.same(await readdir(parent), [], 'remove takes the directory away')
})

t.test('measure: the kinds take turns, each with the hog started and stopped around it, and the file is removed', async t => {
  const parent = await mkdtemp(join(tmpdir(), 'dsync-wake-test-'))
  t.teardown(async () => { await rm(parent, { recursive: true, force: true }) })
  const seen: Try[] = []
  const tries = await measure(20, 2, parent, x => { seen.push(x) })
  t.same(tries, seen, 'each try is reported as it ends')
  const kinds = tries.map(x => x.kind)
  // nice -5 needs root or CAP_SYS_NICE: with it the three kinds, without it two.
  const three = ['idle', 'hog', 'hog, nice -5', 'idle', 'hog', 'hog, nice -5']
  const two = ['idle', 'hog', 'idle', 'hog']
  t.same(kinds, kinds.length === 6 ? three : two)
  if (process.getuid?.() === 0) t.equal(kinds.length, 6, 'root may set nice -5')
  t.ok(tries.every(x => x.wall.length === 20))
  t.same(await readdir(parent), [], 'the file and its directory are gone')
})

t.test('the command line refuses a count that is not a whole number, with its usage', async t => {
  const child = spawn(process.execPath, ['--import', './scripts/ts-loader.mjs', 'bench/tools/dsync-wake.ts', 'many'], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] })
  let err = ''
  child.stderr.on('data', (c: Buffer) => { err += c.toString('utf8') })
  const code = await new Promise<number | null>(resolve => { child.once('exit', resolve) })
  t.equal(code, 2)
  t.equal(err, 'usage: dsync-wake.ts [writes >= 1] [tries >= 1] [dir]\n')
})
