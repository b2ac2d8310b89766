// `hr-relay start` fails cleanly, as systemd's Restart=on-failure needs: a
// port that is taken, a data directory it cannot use. Each exits 1 with a
// message naming the port or the path, instead of hanging with no listener.
import t from 'tap'
import { spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { BIN, runCli, type CliResult } from '../helpers/cli.ts'

const env = { ...process.env, HR_RELAY_BLE: '0', HR_RELAY_LOG_LEVEL: 'warn' }

async function tempDir (t: { teardown (fn: () => unknown): void }): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'hr-cli-fail-'))
  t.teardown(async () => { await rm(dir, { recursive: true, force: true }) })
  return dir
}

async function writeConfig (dir: string, config: Record<string, unknown>): Promise<string> {
  const file = join(dir, 'config.json')
  await writeFile(file, JSON.stringify({ demo: false, ble: { enabled: false }, ...config }))
  return file
}

/** A port on 127.0.0.1 that another listener holds for the rest of the test. */
async function busyPort (t: { teardown (fn: () => unknown): void }): Promise<number> {
  const busy = createServer()
  await new Promise<void>(resolve => { busy.listen(0, '127.0.0.1', resolve) })
  t.teardown(() => { busy.close() })
  const addr = busy.address()
  return typeof addr === 'object' && addr !== null ? addr.port : 0
}

t.test('the MQTT port is taken: exit 1 naming the port, no hang', async t => {
  const dir = await tempDir(t)
  const port = await busyPort(t)
  const config = await writeConfig(dir, { data_dir: join(dir, 'data'), http: { host: '127.0.0.1', port: 0 }, mqtt: { port } })
  const r = await runCli(['start', '--config', config], env)
  t.equal(r.code, 1, r.stderr)
  t.match(r.stderr, `hr-relay: cannot listen for MQTT on port ${port} (127.0.0.1): the port is already in use by another process [EADDRINUSE]`)
})

t.test('the HTTP port is taken: exit 1 naming the port', async t => {
  const dir = await tempDir(t)
  const port = await busyPort(t)
  const r = await runCli(['start', '--data-dir', join(dir, 'data'), '--host', '127.0.0.1', '--http-port', String(port), '--mqtt-port', '0', '--no-demo'], env)
  t.equal(r.code, 1, r.stderr)
  t.match(r.stderr, `cannot listen for HTTP on port ${port} (127.0.0.1)`)
})

t.test('a data directory under a regular file: exit 1, "not a directory" and the path', async t => {
  const dir = await tempDir(t)
  await writeFile(join(dir, 'file'), 'x')
  const dataDir = join(dir, 'file', 'data')
  const r = await runCli(['start', '--data-dir', dataDir, '--http-port', '0', '--mqtt-port', '0', '--no-demo'], env)
  t.equal(r.code, 1, r.stderr)
  t.match(r.stderr, `hr-relay: cannot use the data directory ${dataDir}: not a directory`)
  t.notMatch(r.stderr, /cannot listen|Database failed to open/)
})

// Root is never denied by file modes, so the service runs here as `nobody` (setpriv) on a directory owned by root.
const canDrop = process.getuid?.() === 0 && existsSync('/usr/bin/setpriv')

t.test('a data directory the service user may not write: exit 1, "permission denied" and the path', { skip: canDrop ? false : 'needs root and setpriv to run the CLI as an unprivileged user' }, async t => {
  const dir = await tempDir(t)
  await chmod(dir, 0o755)
  const dataDir = join(dir, 'data')
  await mkdir(dataDir, { mode: 0o755 })
  const r = await new Promise<CliResult>(resolve => {
    const child = spawn('/usr/bin/setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', process.execPath, BIN, 'start', '--data-dir', dataDir, '--http-port', '0', '--mqtt-port', '0', '--no-demo'], { stdio: ['ignore', 'pipe', 'pipe'], env, cwd: tmpdir() })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', d => { stdout += d })
    child.stderr.on('data', d => { stderr += d })
    child.on('close', code => { resolve({ code, stdout, stderr }) })
  })
  t.equal(r.code, 1, r.stderr)
  t.match(r.stderr, `hr-relay: cannot use the data directory ${dataDir}: permission denied`)
  t.match(r.stderr, `: ${join(dataDir, 'db')}`)
  t.notMatch(r.stderr, /Database failed to open|cannot listen/)
})
