// What each hr-relay command loads: `--help` and `admin ...` load none of the
// service's heavy packages, `start` without BLE or serial devices loads no
// BLE or serial module, and the packages of optional features (mqtt.js for an
// upstream broker, pino-pretty for a terminal, the FIT SDK for a FIT export)
// load only when that feature is used. Modules are recorded by a resolve hook
// (test/helpers/record-modules.mjs) in the spawned process; no timing here.
import t, { type Test } from 'tap'
import { spawn } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { BIN } from '../helpers/cli.ts'
import { startTestService } from '../helpers/service.ts'
import { until } from '../helpers/wait.ts'

const HOOK = fileURLToPath(new URL('../helpers/record-modules.mjs', import.meta.url))
/** Packages the CLI's quick commands must not load. */
const HEAVY = ['fastify', 'aedes', 'node-ble', 'dbus-next', 'serialport', '@serialport/bindings-cpp', 'level', 'classic-level', 'mqtt', 'ajv', 'prom-client', 'pino']
const BLE_AND_SERIAL = ['node-ble', 'dbus-next', 'serialport', '@serialport/bindings-cpp', '@serialport/stream']
/** Packages a default `start` must not load: each is imported when its feature is used. */
const LAZY = ['mqtt', 'pino-pretty', '@garmin/fitsdk']

interface Loaded { code: number | null, stdout: string, stderr: string, packages: Set<string>, files: string[] }

/** The npm packages (by name, scoped included) among the recorded module paths. */
function packagesOf (lines: string[]): Set<string> {
  const out = new Set<string>()
  for (const line of lines) {
    const m = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(line)
    if (m?.[1] !== undefined) out.add(m[1])
  }
  return out
}

/** Runs `node --import HOOK ...args(dir)` in a fresh temp dir; `whenRunning` (if given, with the module log's path) runs before the process is sent SIGTERM. */
async function recorded (t: Test, args: (dir: string) => string[], whenRunning?: (dir: string, log: string) => Promise<void>): Promise<Loaded> {
  const dir = await mkdtemp(join(tmpdir(), 'hr-modules-'))
  t.teardown(async () => { await rm(dir, { recursive: true, force: true }) })
  const log = join(dir, 'modules.log')
  const child = spawn(process.execPath, ['--import', HOOK, ...args(dir)], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, HR_RELAY_FROM_SOURCE: '1', HR_RELAY_MODULE_LOG: log, HR_RELAY_BLE: '0', HR_RELAY_LOG_LEVEL: 'warn' }
  })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', d => { stdout += d })
  child.stderr.on('data', d => { stderr += d })
  const closed = new Promise<number | null>(resolve => { child.on('close', resolve) })
  if (whenRunning !== undefined) {
    try { await whenRunning(dir, log) } finally { child.kill('SIGTERM') }
  }
  const code = await closed
  const files = (await readFile(log, 'utf8')).split('\n').filter(Boolean)
  return { code, stdout, stderr, packages: packagesOf(files), files }
}

t.test('the recorder sees ES module and CommonJS packages (control)', async t => {
  const r = await recorded(t, () => ['--input-type=module', '-e', "await import('fastify'); (await import('node:module')).createRequire(import.meta.url)('serialport')"])
  t.equal(r.code, 0, r.stderr)
  t.ok(r.packages.has('fastify'), 'fastify recorded')
  t.ok(r.packages.has('serialport'), 'serialport recorded')
  t.ok(r.packages.has('@serialport/bindings-cpp'), 'a package serialport requires is recorded')
})

t.test('hr-relay --help loads none of the heavy packages and no simulator', async t => {
  const r = await recorded(t, () => [BIN, '--help'])
  t.equal(r.code, 0, r.stderr)
  t.match(r.stdout, /hr-relay start \[--config FILE\]/)
  t.match(r.stdout, /hr-relay admin user list/)
  t.ok(r.files.some(f => f.endsWith('/relay/cli.ts')), 'the CLI itself was recorded')
  t.same(HEAVY.filter(p => r.packages.has(p)), [], 'heavy packages loaded')
  t.same(r.files.filter(f => f.includes('/device-sim/')), [], 'simulator modules loaded')
})

t.test('hr-relay admin user list against a running service loads none of the heavy packages', async t => {
  const svc = await startTestService(t)
  await svc.user('alice')
  const r = await recorded(t, () => [BIN, 'admin', 'user', 'list', '--data-dir', svc.dataDir])
  t.equal(r.code, 0, r.stderr)
  t.match(r.stdout, /^alice\t[0-9a-f-]{36}\tpremium=none\n$/)
  t.same(HEAVY.filter(p => r.packages.has(p)), [], 'heavy packages loaded')
  t.same(r.files.filter(f => f.includes('/device-sim/')), [], 'simulator modules loaded')
})

/** The URL of the service started with data dir DIR/data, once GET /health answers 200. */
async function healthy (dir: string): Promise<string> {
  let url = ''
  await until('GET /health 200', async () => {
    try {
      url = (JSON.parse(await readFile(join(dir, 'data', 'server.json'), 'utf8')) as { url: string }).url
      return (await fetch(url + '/health')).status === 200
    } catch { return false }
  }, 60_000, 100)
  return url
}

t.test('hr-relay start with BLE off and no serial devices loads no BLE or serial module', async t => {
  const s = await recorded(t, dir => [BIN, 'start', '--data-dir', join(dir, 'data'), '--host', '127.0.0.1', '--http-port', '0', '--mqtt-port', '0', '--no-demo'], async dir => {
    await healthy(dir)
  })
  t.equal(s.code, 0, s.stderr)
  t.ok(s.packages.has('fastify') && s.packages.has('aedes'), 'the service itself was loaded (control)')
  t.same(BLE_AND_SERIAL.filter(p => s.packages.has(p)), [], 'BLE or serial packages loaded')
  t.same(s.files.filter(f => /\/relay\/sources\/(ble|serial)\.ts$|\/relay\/outputs\/midi\.ts$|\/device-sim\/demo/.test(f)), [], 'BLE, serial, MIDI or demo modules loaded')
  t.same(LAZY.filter(p => s.packages.has(p)), [], 'packages of unused optional features loaded (no upstream, no terminal, no FIT export)')
})

t.test('hr-relay start loads mqtt.js for an upstream broker and the FIT SDK with the first FIT export', async t => {
  const s = await recorded(t, dir => {
    // An upstream broker nobody listens on: the bridge and Home Assistant's upstream connection keep retrying, which is enough to need mqtt.js.
    writeFileSync(join(dir, 'config.json'), JSON.stringify({ upstream: { url: 'mqtt://127.0.0.1:1', topic_prefix: 'gym/hr' }, home_assistant: { enabled: true } }))
    return [BIN, 'start', '--config', join(dir, 'config.json'), '--data-dir', join(dir, 'data'), '--host', '127.0.0.1', '--http-port', '0', '--mqtt-port', '0', '--no-demo']
  }, async (dir, log) => {
    const url = await healthy(dir)
    const adminToken = (await readFile(join(dir, 'data', 'admin-token'), 'utf8')).trim()
    const post = async (path: string, token: string, body: unknown): Promise<Response> => await fetch(url + path, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(body) })
    t.equal((await post('/admin/users', adminToken, { username: 'ana', password: 'password123' })).status, 201)
    const tokenRes = await post('/admin/tokens', adminToken, { username: 'ana', scope: 'data:heart_rate:read data:heart_rate:write' })
    t.equal(tokenRes.status, 201)
    const { access_token: token } = await tokenRes.json() as { access_token: string }
    const start = Math.floor((Date.now() - 60_000) / 1000) * 1000
    for (let i = 0; i < 3; i++) t.equal((await post('/api/v1/data', token, { measured_at: start + i * 1000, data: { heart_rate: 80 + i } })).status, 200)
    const before = packagesOf((await readFile(log, 'utf8')).split('\n'))
    t.same(LAZY.filter(p => before.has(p)), ['mqtt'], 'before the export: mqtt.js only')
    const fit = await fetch(`${url}/api/v1/data/sessions/${start}/export?format=fit`, { headers: { authorization: `Bearer ${token}` } })
    t.equal(fit.status, 200)
    t.equal(fit.headers.get('content-type'), 'application/vnd.ant.fit')
    t.equal(Buffer.from(await fit.arrayBuffer()).subarray(8, 12).toString('latin1'), '.FIT', 'a FIT file header')
  })
  t.equal(s.code, 0, s.stderr)
  t.ok(s.packages.has('mqtt'), 'mqtt.js loaded for the upstream broker')
  t.ok(s.packages.has('@garmin/fitsdk'), 'the FIT SDK loaded for the export')
  t.notOk(s.packages.has('pino-pretty'), 'pino-pretty loaded without a terminal')
})
