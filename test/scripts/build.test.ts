// `npm run build` produces a dist/ that runs on its own: the compiled CLI
// starts the service, serves the web pages' static files and loads the
// simulator's scenario files (assets tsc does not emit).
import t from 'tap'
import { spawn, spawnSync } from 'node:child_process'
import { mkdir, mkdtemp, readFile, rm, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

const ROOT = resolve(fileURLToPath(new URL('../..', import.meta.url)))

t.test('the compiled build starts and serves its assets', async t => {
  // Inside the project (git-ignored .tap/), so the compiled files resolve node_modules as dist/ does.
  await mkdir(join(ROOT, '.tap'), { recursive: true })
  const out = await mkdtemp(join(ROOT, '.tap', 'build-'))
  const dataDir = await mkdtemp(join(tmpdir(), 'hr-build-data-'))
  t.teardown(async () => { await rm(out, { recursive: true, force: true }); await rm(dataDir, { recursive: true, force: true }) })
  const build = spawnSync(process.execPath, [join(ROOT, 'scripts/build.mjs'), out], { cwd: ROOT, encoding: 'utf8' })
  t.equal(build.status, 0, build.stderr)
  t.match(build.stdout, /copied \d+ assets/)
  t.ok((await stat(join(out, 'api/web/static/widget.js'))).isFile())
  t.ok((await stat(join(out, 'device-sim/scenarios/spinning-class.json'))).isFile())
  t.ok((await stat(join(out, 'relay/cli-entry.js'))).isFile())

  const entry = join(out, 'relay/cli-entry.js')
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
