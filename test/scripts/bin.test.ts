// bin/hr-relay.cjs runs the compiled dist/ while it is current (no esbuild
// loaded), and the TypeScript sources through the project's load hook
// (scripts/ts-loader-hooks.mjs, esbuild), saying so, when dist/ is missing or
// older than a source; bin/hr-relay.js, its former name, runs it. A small tree
// inside the project (git-ignored .tap/, so esbuild resolves from
// node_modules) stands in for it.
import t, { type Test } from 'tap'
import { spawn } from 'node:child_process'
import { copyFile, cp, mkdir, mkdtemp, readFile, rm, utimes, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

const ROOT = resolve(fileURLToPath(new URL('../..', import.meta.url)))
const HOOK = join(ROOT, 'test/helpers/record-modules.mjs')

async function tree (t: Test): Promise<string> {
  await mkdir(join(ROOT, '.tap'), { recursive: true })
  const dir = await mkdtemp(join(ROOT, '.tap', 'bin-'))
  t.teardown(async () => { await rm(dir, { recursive: true, force: true }) })
  await mkdir(join(dir, 'bin'))
  await copyFile(join(ROOT, 'bin/hr-relay.cjs'), join(dir, 'bin/hr-relay.cjs'))
  await copyFile(join(ROOT, 'bin/hr-relay.js'), join(dir, 'bin/hr-relay.js'))
  await mkdir(join(dir, 'scripts'))
  await copyFile(join(ROOT, 'scripts/ts-loader-hooks.mjs'), join(dir, 'scripts/ts-loader-hooks.mjs'))
  await mkdir(join(dir, 'relay'))
  await writeFile(join(dir, 'relay/cli-entry.ts'), 'export {}\n')
  await writeFile(join(dir, 'bin/cli.ts'), "export async function main (argv: string[]): Promise<number> { process.stdout.write('source ' + argv.join(' ') + '\\n'); return 0 }\n")
  await mkdir(join(dir, 'dist/bin'), { recursive: true })
  await writeFile(join(dir, 'dist/bin/cli.cjs'), "exports.main = async function main (argv) { process.stdout.write('dist ' + argv.join(' ') + '\\n'); return 3 }\n")
  // Sources an hour old, the build stamp a minute old.
  const hourAgo = new Date(Date.now() - 3_600_000)
  for (const p of ['relay/cli-entry.ts', 'relay', 'bin/cli.ts', 'bin/hr-relay.cjs', 'bin/hr-relay.js', 'bin']) await utimes(join(dir, p), hourAgo, hourAgo)
  await writeFile(join(dir, 'dist/.build-stamp'), 'stamp\n')
  const minuteAgo = new Date(Date.now() - 60_000)
  await utimes(join(dir, 'dist/.build-stamp'), minuteAgo, minuteAgo)
  return dir
}

async function run (dir: string, env: NodeJS.ProcessEnv = {}, entry = 'bin/hr-relay.cjs'): Promise<{ code: number | null, stdout: string, stderr: string, modules: string }> {
  const log = join(dir, 'modules.log')
  await writeFile(log, '')
  const base = { ...process.env }
  delete base.HR_RELAY_FROM_SOURCE
  const child = spawn(process.execPath, ['--import', HOOK, join(dir, entry), 'a', 'b'], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...base, HR_RELAY_MODULE_LOG: log, ...env } })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', d => { stdout += d })
  child.stderr.on('data', d => { stderr += d })
  const code = await new Promise<number | null>(resolve => { child.on('close', resolve) })
  return { code, stdout, stderr, modules: await readFile(log, 'utf8') }
}

t.test('a current dist/ runs without esbuild', async t => {
  const dir = await tree(t)
  const r = await run(dir)
  t.equal(r.stdout, 'dist a b\n')
  t.equal(r.code, 3, 'the exit code main() returned')
  t.equal(r.stderr, '')
  t.notMatch(r.modules, /node_modules\/(tsx|esbuild)\//)
  t.match(r.modules, /^cjs .*\/dist\/bin\/cli\.cjs$/m, 'the compiled front, through require()')
})

t.test('bin/hr-relay.js (the former name, in older units and scripts) runs the same command', async t => {
  const dir = await tree(t)
  const r = await run(dir, {}, 'bin/hr-relay.js')
  t.equal(r.stdout, 'dist a b\n')
  t.equal(r.code, 3)
  t.equal(r.stderr, '')
  const stale = await tree(t)
  await utimes(join(stale, 'relay/cli-entry.ts'), new Date(), new Date())
  const s = await run(stale, {}, 'bin/hr-relay.js')
  t.equal(s.stdout, 'source a b\n')
  t.match(s.stderr, /relay\/ changed after the last build/)
})

t.test('an error main() does not handle ends the process with 1 and its stack, as an uncaught error does', async t => {
  const dir = await tree(t)
  await writeFile(join(dir, 'dist/bin/cli.cjs'), "exports.main = async function main () { throw new Error('boom in main') }\n")
  const r = await run(dir)
  t.equal(r.code, 1)
  t.equal(r.stdout, '')
  t.match(r.stderr, /Error: boom in main\n\s+at Object.main \(.*dist\/bin\/cli\.cjs:1:\d+\)/)
})

t.test('a source newer than the build runs the sources through the load hook and says why', async t => {
  const dir = await tree(t)
  await utimes(join(dir, 'relay/cli-entry.ts'), new Date(), new Date())
  const r = await run(dir)
  t.equal(r.stdout, 'source a b\n')
  t.equal(r.code, 0)
  t.equal(r.stderr, 'hr-relay: relay/ changed after the last build; running the TypeScript sources through esbuild (slower start). Run `npm run build`.\n')
  t.match(r.modules, /scripts\/ts-loader-hooks\.mjs/)
  t.notMatch(r.modules, /node_modules\/tsx\//)
})

t.test('a file added to a source folder after the build counts as a change', async t => {
  const dir = await tree(t)
  await writeFile(join(dir, 'relay/new.ts'), 'export {}\n')
  const r = await run(dir)
  t.equal(r.stdout, 'source a b\n')
  t.match(r.stderr, /relay\/ changed after the last build/)
})

t.test('no dist/ (or no stamp) runs the sources and says dist/ is missing', async t => {
  const dir = await tree(t)
  await rm(join(dir, 'dist/.build-stamp'))
  const r = await run(dir)
  t.equal(r.stdout, 'source a b\n')
  t.match(r.stderr, /^hr-relay: dist\/ is missing; running the TypeScript sources through esbuild/)
})

t.test('HR_RELAY_FROM_SOURCE=1 runs the sources silently even with a current dist/', async t => {
  const dir = await tree(t)
  const r = await run(dir, { HR_RELAY_FROM_SOURCE: '1' })
  t.equal(r.stdout, 'source a b\n')
  t.equal(r.stderr, '')
})

t.test('without esbuild (an install with --omit=dev) a stale build exits 1 and says how to build', async t => {
  // The same tree outside the project, where no node_modules/esbuild resolves.
  const inside = await tree(t)
  const dir = await mkdtemp(join(tmpdir(), 'hr-relay-bin-'))
  t.teardown(async () => { await rm(dir, { recursive: true, force: true }) })
  await cp(inside, dir, { recursive: true })
  await rm(join(dir, 'dist/.build-stamp'))
  const r = await run(dir)
  t.equal(r.code, 1)
  t.equal(r.stdout, '')
  t.equal(r.stderr, `hr-relay: dist/ is missing, and esbuild is not installed (an install without development dependencies) to run the TypeScript sources. Run \`npm ci && npm run build\` in ${dir}/.\n`)
})

t.test('a Node older than 22 is refused at once, with the version and what to install', async t => {
  const dir = await tree(t)
  const fake = join(dir, 'node20.cjs')
  await writeFile(fake, "Object.defineProperty(process.versions, 'node', { value: '20.20.2' })\n")
  const child = spawn(process.execPath, ['--require', fake, join(dir, 'bin/hr-relay.cjs'), '--help'], { stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', d => { stdout += d })
  child.stderr.on('data', d => { stderr += d })
  const code = await new Promise<number | null>(resolve => { child.on('close', resolve) })
  t.equal(code, 1)
  t.equal(stdout, '', 'nothing of the command ran')
  t.equal(stderr, 'hr-relay: Node 20.20.2 is not supported; install Node 24 LTS (or 22). See README.md, "Supported Node versions".\n')
})
