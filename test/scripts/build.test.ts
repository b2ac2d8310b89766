// `npm run build` produces a dist/ that runs on its own: the compiled CLI
// starts the service, serves the web pages' static files and loads the
// simulator's scenario files (assets tsc does not emit).
// The build is a full tsc run (about 20 s of CPU, most of it type checking).
// `npm install` already ran it (the `prepare` script) into dist/: while that
// dist/ is current (its stamp newer than every source and every input of the
// build), the test examines it instead of compiling the same tree again; when it
// is missing or stale, the test runs scripts/build.mjs into a folder of its own
// and checks the script's exit and report too.
import t from 'tap'
import { spawn, spawnSync } from 'node:child_process'
import { mkdir, mkdtemp, readFile, readdir, rm, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

const ROOT = resolve(fileURLToPath(new URL('../..', import.meta.url)))
/** What scripts/build.mjs compiles, and what else decides its output. */
const BUILD_INPUTS = ['api', 'relay', 'device-sim', 'firmware-protocol', 'hub', 'bin', 'scripts/build.mjs', 'tsconfig.json', 'tsconfig.build.json', 'package.json', 'node_modules/typescript/package.json', 'node_modules/esbuild/package.json', 'node_modules/@sinclair/typebox/package.json']

/** Newest modification time of a file, or of a folder and everything under it (as bin/hr-relay.cjs reckons). */
async function newest (path: string): Promise<number> {
  const s = await stat(path)
  if (!s.isDirectory()) return s.mtimeMs
  let t = s.mtimeMs
  for (const e of await readdir(path)) t = Math.max(t, await newest(join(path, e)))
  return t
}

/** Files under `dir` (relative to ROOT) the code reads at run time and tsc does not emit: what scripts/build.mjs copies. */
async function assets (dir: string): Promise<string[]> {
  const out: string[] = []
  for (const e of await readdir(join(ROOT, dir), { withFileTypes: true })) {
    const rel = join(dir, e.name)
    if (e.isDirectory()) out.push(...await assets(rel))
    else if (/\.(json|js|mjs|css|html|svg|png|ico|sql)$/.test(e.name)) out.push(rel)
  }
  return out
}

/** ROOT/dist when scripts/build.mjs made it from the tree as it is now; undefined otherwise. */
async function currentDist (): Promise<string | undefined> {
  const dist = join(ROOT, 'dist')
  const stamp = await stat(join(dist, '.build-stamp')).catch(() => undefined)
  if (stamp === undefined) return undefined
  for (const input of BUILD_INPUTS) if (await newest(join(ROOT, input)) > stamp.mtimeMs) return undefined
  return dist
}

t.test('the compiled build starts and serves its assets', async t => {
  const dataDir = await mkdtemp(join(tmpdir(), 'hr-build-data-'))
  t.teardown(async () => { await rm(dataDir, { recursive: true, force: true }) })
  let out = await currentDist()
  if (out === undefined) {
    // Inside the project (git-ignored .tap/), so the compiled files resolve node_modules as dist/ does.
    await mkdir(join(ROOT, '.tap'), { recursive: true })
    out = await mkdtemp(join(ROOT, '.tap', 'build-'))
    const built = out
    t.teardown(async () => { await rm(built, { recursive: true, force: true }) })
    const build = spawnSync(process.execPath, [join(ROOT, 'scripts/build.mjs'), out], { cwd: ROOT, encoding: 'utf8' })
    t.equal(build.status, 0, build.stderr)
    t.match(build.stdout, /copied \d+ assets/)
  } else {
    t.comment(`examining ${out}, current: built by scripts/build.mjs after the last change to ${BUILD_INPUTS.join(', ')}`)
  }
  // Written last, after tsc succeeded and the assets were copied.
  t.match(await readFile(join(out, '.build-stamp'), 'utf8'), /^\d{4}-\d\d-\d\dT[\d:.]+Z\n$/, 'the build stamp')
  const expected = (await Promise.all(['api', 'relay', 'device-sim', 'firmware-protocol', 'hub'].map(assets))).flat()
  const differ: string[] = []
  for (const file of expected) {
    const copy = await readFile(join(out, file)).catch(() => undefined)
    if (copy === undefined || !copy.equals(await readFile(join(ROOT, file)))) differ.push(file)
  }
  t.same(differ, [], `each of the ${expected.length} assets is in the build, byte for byte`)
  t.ok((await stat(join(out, 'api/web/static/widget.js'))).isFile())
  t.ok((await stat(join(out, 'device-sim/scenarios/spinning-class.json'))).isFile())
  t.ok((await stat(join(out, 'relay/cli-entry.js'))).isFile())
  // TypeBox is bundled into one module, and the compiled schemas import it from there.
  t.ok((await stat(join(out, 'vendor/typebox.js'))).isFile())
  const schema = await readFile(join(out, 'api/http/schema.js'), 'utf8')
  t.match(schema, /from '\.\.\/\.\.\/vendor\/typebox\.js'/)
  t.notMatch(schema, /@sinclair\/typebox/)

  // The command's front is one CommonJS module: no require() of another compiled module; each dynamic import names a compiled file.
  const front = await readFile(join(out, 'bin/cli.cjs'), 'utf8')
  t.notMatch(front, /require\("\.\.?\//, 'bin/cli.cjs requires no compiled module')
  t.match(front, /require\("node:util"\)/, 'it is CommonJS')
  const lazy = [...front.matchAll(/import\("(\.\.?\/[^"]+)"\)/g)].map(m => m[1] as string)
  t.same([...new Set(lazy)].sort(), ['../api/store/db.js', '../device-sim/cli.js', '../device-sim/demo-hooks.js', '../hub/cli.js', '../relay/cli-tls.js', '../relay/config.js', '../relay/listen-error.js', '../relay/main.js'])
  for (const rel of lazy) t.ok((await stat(join(out, 'bin', rel)).catch(() => undefined))?.isFile(), `${rel} exists in the build`)
  // Bundled modules exist twice (in the bundle and compiled on their own): nothing else may import them, or a class like CliError would be two classes.
  const bundled = ['cli.js', 'cli-admin.js', 'cli-entry.js', 'cli-rooms.js', 'cli-devices.js', 'cli-integrations.js']
  const importers: string[] = []
  const walk = async (dir: string): Promise<void> => {
    for (const e of await readdir(dir, { withFileTypes: true })) {
      const path = join(dir, e.name)
      if (e.isDirectory()) await walk(path)
      else if (/\.c?js$/.test(e.name) && !path.startsWith(join(out, 'relay', 'cli')) && !path.startsWith(join(out, 'bin', 'cli.')) && !path.startsWith(join(out, 'vendor'))) {
        const text = await readFile(path, 'utf8')
        if (bundled.some(b => text.includes(`/relay/${b}"`) || text.includes(`"./${b}"`))) importers.push(path)
      }
    }
  }
  await walk(out)
  t.same(importers, [], 'no module outside the front imports a bundled one')
  const help = spawnSync(process.execPath, [join(ROOT, 'bin/hr-relay.cjs'), 'sim', '--help'], { encoding: 'utf8', env: { ...process.env, HR_RELAY_FROM_SOURCE: '' } })
  if (out === join(ROOT, 'dist')) {
    // Through the launcher, as an operator runs it: the bundle loads the simulator through its dynamic import.
    t.equal(help.status, 0, help.stderr)
    t.equal(help.stderr, '', 'the current build, no fallback to the sources')
    t.match(help.stdout, /hr-relay sim/)
  }
  const viaBundle = spawnSync(process.execPath, ['-e', `require(${JSON.stringify(join(out, 'bin/cli.cjs'))}).main(['sim', '--help']).then(code => { process.exitCode = code })`], { encoding: 'utf8' })
  t.equal(viaBundle.status, 0, viaBundle.stderr)
  t.match(viaBundle.stdout, /hr-relay sim/, 'the bundle loads the simulator through its dynamic import')

  // The service starts through the bundled front, as bin/hr-relay.cjs runs it.
  const entry = join(out, 'bin/cli.cjs')
  const server = spawn(process.execPath, ['--input-type=module', '-e',
    `const m = await import(${JSON.stringify(entry)}); const code = await m.main(process.argv.slice(1)); if (code >= 0) process.exit(code)`,
    'start', '--data-dir', dataDir, '--http-port', '0', '--mqtt-port', '0', '--no-demo'], {
    stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, HR_RELAY_BLE: '0', HR_RELAY_LOG_LEVEL: 'warn' }
  })
  let stderr = ''
  server.stderr.on('data', d => { stderr += d })
  t.teardown(() => { server.kill('SIGKILL') })
  let url = ''
  for (let i = 0; i < 300 && url === ''; i++) {
    if (server.exitCode !== null) break
    try { url = JSON.parse(await readFile(join(dataDir, 'server.json'), 'utf8')).url } catch { await new Promise(r => setTimeout(r, 100)) }
  }
  t.not(url, '', `server started (${stderr})`)
  const health = await fetch(url + '/health')
  t.equal(health.status, 200)
  const widget = await fetch(url + '/web/static/widget.js')
  t.equal(widget.status, 200)
  t.match(widget.headers.get('content-type'), /javascript/)

  // The simulator reads its scenario files from the compiled tree too.
  const { loadScenario } = await import(join(out, 'device-sim/scenario.js'))
  const scenario = await loadScenario('spinning-class')
  t.ok(Array.isArray(scenario.phases) && scenario.phases.length > 0, 'bundled scenario loads from the build')
})
