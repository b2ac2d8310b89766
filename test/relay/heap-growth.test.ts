// `hr-relay start` bounds V8's heap growth (relay/cli.ts, boundHeapGrowth):
// after a full collection the old space may grow to 1.5x what survived, not
// up to 4x. Checked on a real V8 in fresh processes: a steady stream of
// objects that outlive a few scavenges (as readings in flight do) beside a
// fixed live set, set at run time against a fixed 4x.
import t from 'tap'
import { spawn } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { HEAP_GROWING_PERCENT, boundHeapGrowth } from '../../relay/cli.ts'
import { BIN } from '../helpers/cli.ts'

const ROOT = fileURLToPath(new URL('../../', import.meta.url))

t.test('boundHeapGrowth sets --heap-growing-percent, unless node was given one', async t => {
  const set: string[] = []
  t.equal(boundHeapGrowth([], f => { set.push(f) }), true)
  t.same(set, [`--heap-growing-percent=${HEAP_GROWING_PERCENT}`])
  t.equal(HEAP_GROWING_PERCENT, 50)
  for (const own of ['--heap-growing-percent=80', '--heap_growing_percent=20', '--heap-growing-percent']) {
    t.equal(boundHeapGrowth(['--max-semi-space-size=1', own], f => { set.push(f) }), false, `${own} is the operator's`)
  }
  t.equal(set.length, 1, 'nothing set over an operator flag')
  t.equal(boundHeapGrowth(['--heap-growing'], f => { set.push(f) }), true, 'another flag is not it')
})

// A ring of the last 200,000 objects (each lives while ~20 MB more is allocated, so it is promoted from the 1 MB
// semi-spaces the unit runs with, as a reading in flight is) over 15 MB that stays: 3,000,000 objects go through the
// old space, and how many full collections that takes. Both children start with node's own
// --heap-growing-percent=300 (a fixed 4x, where V8's default factor depends on how fast its collections run that
// moment); the bound one then calls boundHeapGrowth as if node had been given none, which sets 1.5x at run time.
const CHURN = `
import { PerformanceObserver, constants } from 'node:perf_hooks'
import v8 from 'node:v8'
import { boundHeapGrowth } from './relay/cli.ts'
if (process.argv.includes('bound') && !boundHeapGrowth([], v8.setFlagsFromString)) throw new Error('not set')
let major = 0
const obs = new PerformanceObserver(list => { for (const e of list.getEntries()) if (e.detail.kind === constants.NODE_PERFORMANCE_GC_MAJOR) major++ })
obs.observe({ entryTypes: ['gc'] })
const live = []
for (let i = 0; i < 150000; i++) live.push({ a: i, b: 'x' + i })
const ring = new Array(200000)
for (let i = 0; i < 3000000; i++) ring[i % 200000] = { i, pair: [i, i + 1] }
// GC entries reach the observer through immediates (one to make each entry, one to notify): a few turns of the
// event loop, not a wall-clock wait, so that a process descheduled beside a CPU hog counts them all the same.
const turns = n => n === 0 ? Promise.resolve() : new Promise(resolve => setImmediate(resolve)).then(() => turns(n - 1))
await turns(5)
obs.disconnect()
process.stdout.write(JSON.stringify({ major, live: live.length + ring.length }))
`

async function fullCollections (mode: 'bound' | 'default'): Promise<number> {
  const child = spawn(process.execPath, ['--max-semi-space-size=1', '--heap-growing-percent=300', '--import=./scripts/ts-loader.mjs', '--input-type=module', '-e', CHURN, mode], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] })
  let out = ''; let err = ''
  child.stdout.setEncoding('utf8').on('data', (c: string) => { out += c })
  child.stderr.setEncoding('utf8').on('data', (c: string) => { err += c })
  const code = await new Promise<number | null>(resolve => child.on('close', resolve))
  if (code !== 0) throw new Error(`the ${mode} child exited ${code}: ${err}`)
  const { major, live } = JSON.parse(out) as { major: number, live: number }
  if (live !== 350000) throw new Error(`the ${mode} child lost its live set: ${out}`)
  return major
}

t.test('set at run time, the bound makes full collections come several times as often as at 4x growth', async t => {
  const [bound, unbounded] = await Promise.all([fullCollections('bound'), fullCollections('default')])
  t.ok(bound >= 2 * unbounded, `${bound} full collections with the bound, ${unbounded} at 4x`)
  t.ok(unbounded >= 1, 'the churn fills even a 4x heap')
})

/**
 * `hr-relay start` as a process, node given `nodeArgs`: the heap_growing_percent its debug log says it set a
 * second after the start (read from its output as it comes), then stopped with SIGINT; its exit code.
 */
async function startedGrowth (t: { teardown (fn: () => unknown): void }, nodeArgs: string[]): Promise<{ growth: unknown, code: number | null }> {
  const dir = await mkdtemp(join(tmpdir(), 'hr-heap-growth-'))
  t.teardown(async () => { await rm(dir, { recursive: true, force: true }) })
  const child = spawn(process.execPath, [...nodeArgs, BIN, 'start', '--data-dir', dir, '--host', '127.0.0.1', '--http-port', '0', '--mqtt-port', '0', '--no-demo'], {
    env: { ...process.env, HR_RELAY_BLE: '0', HR_RELAY_LOG_LEVEL: 'debug' },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  const closed = new Promise<number | null>(resolve => child.on('close', resolve))
  t.teardown(() => { if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL') })
  let out = ''
  let err = ''
  child.stderr.setEncoding('utf8').on('data', (c: string) => { err += c })
  const growth = await new Promise<unknown>((resolve, reject) => {
    child.stdout.setEncoding('utf8').on('data', (c: string) => {
      out += c
      // Whole lines only: a chunk may end inside one.
      const lines = out.split('\n').slice(0, -1)
      const line = lines.find(l => l.includes('"heap growth set'))
      if (line !== undefined) resolve((JSON.parse(line) as { heap_growing_percent?: unknown }).heap_growing_percent)
      const failed = lines.find(l => l.includes('"could not bound the heap growth'))
      if (failed !== undefined) reject(new Error(failed))
    })
    void closed.then(code => { reject(new Error(`hr-relay start exited ${code} before it set the heap growth: ${err}${out.slice(-2000)}`)) })
  })
  child.kill('SIGINT')
  return { growth, code: await closed }
}

t.test('hr-relay start sets the bound a second after the start, and keeps a --heap-growing-percent given to node', async t => {
  const plain = await startedGrowth(t, [])
  t.equal(plain.growth, HEAP_GROWING_PERCENT)
  t.equal(plain.code, 0, 'stopped cleanly')
  const own = await startedGrowth(t, ['--heap-growing-percent=300'])
  t.equal(own.growth, "node's own")
  t.equal(own.code, 0, 'stopped cleanly')
})
