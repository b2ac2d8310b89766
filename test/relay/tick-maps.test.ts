// process.nextTick stays on V8's fast path through the full collections of a
// long-running service (relay/tick-maps.ts). Checked on the V8 that runs the
// tests, in fresh processes with --allow-natives-syntax: the state of the
// feedback with which nextTick defines its queue entry's properties
// (%DebugPrint lists each slot of a function's feedback with its state), and
// whether an entry made after the collection has the held entry's map.
import t from 'tap'
import { spawn } from 'node:child_process'
import { open, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { keepTickObjectMaps } from '../../relay/tick-maps.ts'
import { BIN } from '../helpers/cli.ts'

const ROOT = fileURLToPath(new URL('../../', import.meta.url))
// The children run without coverage, as the service does: tap's coverage puts V8 in precise-coverage mode, where
// this feedback is megamorphic whatever the service does (checked: `hr-relay start` with tap's import and coverage
// on, with and without a CPU hog). tap adds its import to every node it sees spawned; this turns its coverage off.
const CHILD_ENV: NodeJS.ProcessEnv = { ...process.env, _TAPJS_PROCESSINFO_COVERAGE_: '0' }

/**
 * A file for a child's stdout, read once the child has exited. %DebugPrint writes through C's stdio, which flushes
 * its buffer at exit; into a pipe (non-blocking in a Node process) that write can fail and lose the buffer's tail.
 */
async function stdoutFile (t: { teardown (fn: () => unknown): void }): Promise<{ fd: number, read: () => Promise<string> }> {
  const dir = await mkdtemp(join(tmpdir(), 'hr-tick-maps-out-'))
  t.teardown(async () => { await rm(dir, { recursive: true, force: true }) })
  const file = join(dir, 'stdout')
  const handle = await open(file, 'w')
  t.teardown(async () => { await handle.close().catch(() => {}) })
  return { fd: handle.fd, read: async () => await readFile(file, 'utf8') }
}

/** The states of nextTick's DefineKeyedOwnPropertyInLiteral slots in %DebugPrint(process.nextTick) output. */
function literalSlots (out: string): string[] {
  return [...out.matchAll(/slot #\d+ DefineKeyedOwnPropertyInLiteral (\w+)/g)].map(m => m[1] as string)
}

t.test('the entry held is the nextTick queue entry of its callback', async t => {
  const kept = await keepTickObjectMaps()
  t.equal(await keepTickObjectMaps(), kept, 'held once')
  const entry = kept as { callback?: unknown, args?: unknown }
  t.equal(typeof entry.callback, 'function')
  t.ok('args' in entry)
  t.equal(Object.getOwnPropertySymbols(entry).length, 2, 'its async id and trigger id')
})

// nextTick runs often enough to have feedback, nothing is queued, and the service's own settleHeap (relay/cli.ts)
// runs its memory-reducing collection, as V8's memory reducer does after an idle spell: several full collections in
// a row (V8 keeps a map it has used alive for --retain-maps-for-n-gc=2 more; a gc() or two did not always free
// them). Then nextTick runs again. `keep` holds an entry first.
const CHILD = `
import { createHook } from 'node:async_hooks'
import { settleHeap } from './relay/cli.ts'
import { keepTickObjectMaps } from './relay/tick-maps.ts'
const idle = () => new Promise(resolve => setImmediate(resolve))
for (let i = 0; i < 2000; i++) process.nextTick(() => {}, i % 2 === 0 ? 1 : undefined)
await idle()
const kept = process.argv.includes('keep') ? await keepTickObjectMaps() : undefined
await idle()
await settleHeap()
let fresh
const hook = createHook({ init (id, type, trigger, resource) { if (type === 'TickObject' && fresh === undefined) fresh = resource } })
hook.enable(); process.nextTick(() => {}); hook.disable()
for (let i = 0; i < 100; i++) process.nextTick(() => {})
await idle()
const sameMap = kept === undefined ? null : new Function('a', 'b', 'return %HaveSameMap(a, b)')(kept, fresh)
new Function('f', '%DebugPrint(f)')(process.nextTick)
process.stderr.write(JSON.stringify({ sameMap }))
`

async function child (t: { teardown (fn: () => unknown): void }, mode: 'keep' | 'plain'): Promise<{ slots: string[], sameMap: boolean | null }> {
  const out = await stdoutFile(t)
  const c = spawn(process.execPath, ['--allow-natives-syntax', '--import=./scripts/ts-loader.mjs', '--input-type=module', '-e', CHILD, mode], { cwd: ROOT, env: CHILD_ENV, stdio: ['ignore', out.fd, 'pipe'] })
  let err = ''
  c.stderr?.setEncoding('utf8').on('data', (d: string) => { err += d })
  const code = await new Promise<number | null>(resolve => c.on('close', resolve))
  if (code !== 0) throw new Error(`the ${mode} child exited ${code}: ${err}`)
  const result = JSON.parse(err.slice(err.lastIndexOf('{'))) as { sameMap: boolean | null }
  return { slots: literalSlots(await out.read()), sameMap: result.sameMap }
}

t.test('the collections of an idle spell turn nextTick megamorphic, unless an entry is held', async t => {
  const [plain, keep] = await Promise.all([child(t, 'plain'), child(t, 'keep')])
  // The entry literal has four properties; the first is defined on the literal's own map, so it stays monomorphic.
  t.equal(plain.slots.length, 4, `four literal slots in: ${plain.slots.join(' ')}`)
  t.same(plain.slots.slice(1), ['MEGAMORPHIC', 'MEGAMORPHIC', 'MEGAMORPHIC'],
    'without an entry held, the collections freed the maps and the next entry\'s new ones made the feedback megamorphic (this Node needs relay/tick-maps.ts)')
  t.same(keep.slots, ['MONOMORPHIC', 'MONOMORPHIC', 'MONOMORPHIC', 'MONOMORPHIC'])
  t.equal(keep.sameMap, true, 'an entry made after the collections has the held entry\'s map')
})

t.test('hr-relay start keeps nextTick monomorphic through its settling collection and its first connections', async t => {
  const dir = await mkdtemp(join(tmpdir(), 'hr-tick-maps-'))
  t.teardown(async () => { await rm(dir, { recursive: true, force: true }) })
  // Prints nextTick's feedback on SIGUSR2 (a preload: the service has no such hook), then says so on stderr.
  const preload = join(dir, 'print-feedback.cjs')
  await writeFile(preload, "process.on('SIGUSR2', () => { new Function('f', '%DebugPrint(f)')(process.nextTick); process.stderr.write('printed\\n') })\n")
  const out = await stdoutFile(t)
  const child = spawn(process.execPath, ['--allow-natives-syntax', '-r', preload, BIN, 'start', '--data-dir', join(dir, 'data'), '--host', '127.0.0.1', '--http-port', '0', '--mqtt-port', '0', '--no-demo'], {
    env: { ...CHILD_ENV, HR_RELAY_BLE: '0', HR_RELAY_LOG_LEVEL: 'debug' },
    stdio: ['ignore', out.fd, 'pipe']
  })
  const closed = new Promise<number | null>(resolve => child.on('close', resolve))
  t.teardown(() => { if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL') })
  let err = ''
  child.stderr?.setEncoding('utf8').on('data', (d: string) => { err += d })
  let exited = false
  void closed.then(() => { exited = true })
  /** Its log (JSON lines in the stdout file, written as they happen) once `line` is in it. */
  const logLine = async (line: string): Promise<string> => {
    for (;;) {
      const found = (await out.read()).split('\n').find(l => l.includes(line))
      if (found !== undefined) return found
      if (exited) throw new Error(`hr-relay start exited before it logged ${line}: ${err}`)
      await new Promise(resolve => setTimeout(resolve, 50))
    }
  }
  const { url } = JSON.parse(await logLine('"hr-relay ready"')) as { url: string }
  await logLine('"heap settled"')
  // Connections and answers after the settling collection: each ends in a few nextTicks.
  for (let i = 0; i < 3; i++) {
    const res = await fetch(`${url}/health`)
    t.equal(res.status, 200)
    await res.arrayBuffer()
  }
  const printed = new Promise<void>((resolve, reject) => {
    child.stderr?.on('data', () => { if (err.includes('printed\n')) resolve() })
    void closed.then(code => { reject(new Error(`hr-relay start exited ${code} before it printed its feedback: ${err}`)) })
  })
  child.kill('SIGUSR2')
  await printed
  child.kill('SIGINT')
  t.equal(await closed, 0, 'stopped cleanly')
  // Read after the exit, which flushed what %DebugPrint wrote.
  t.same(literalSlots(await out.read()), ['MONOMORPHIC', 'MONOMORPHIC', 'MONOMORPHIC', 'MONOMORPHIC'])
})
