// The operator CLI as an operator uses it: a spawned `hr-relay start`, then
// admin subcommands talking to it over loopback: one as a separate process (the
// real binary's exit code and output), the others through the CLI's entry
// function in this process (test/helpers/cli.ts runMain), which is what the
// binary runs, as is a second `start` on the same directory (the spawned
// server, another process, holds the store's lock).
import t from 'tap'
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { BIN, runCli, runMain } from '../helpers/cli.ts'

const run = runMain

async function waitForServer (dataDir: string, child: ChildProcess): Promise<string> {
  for (let i = 0; i < 600; i++) {
    if (child.exitCode !== null) throw new Error(`server exited with ${child.exitCode}`)
    try {
      const info = JSON.parse(await readFile(join(dataDir, 'server.json'), 'utf8'))
      const res = await fetch(info.url + '/health')
      if (res.status === 200) return info.url
    } catch { /* not yet */ }
    await new Promise(r => setTimeout(r, 100))
  }
  throw new Error('server did not become ready')
}

t.test('start, admin subcommands with --json, a second server on the same directory', async t => {
  const dataDir = await mkdtemp(join(tmpdir(), 'hr-cli-'))
  const server = spawn(process.execPath, [BIN, 'start', '--data-dir', dataDir, '--http-port', '0', '--mqtt-port', '0', '--no-demo'], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, HR_RELAY_BLE: '0', HR_RELAY_LOG_LEVEL: 'warn' }
  })
  let serverOut = ''
  server.stdout?.on('data', d => { serverOut += d })
  server.stderr?.on('data', d => { serverOut += d })
  t.teardown(async () => {
    server.kill('SIGTERM')
    await new Promise(r => server.once('exit', r)).catch(() => {})
    await rm(dataDir, { recursive: true, force: true })
  })
  const url = await waitForServer(dataDir, server)
  const health = await (await fetch(url + '/health')).json() as { status: string }
  t.equal(health.status, 'ok')

  const mode = (await stat(join(dataDir, 'admin-token'))).mode & 0o777
  t.equal(mode, 0o600, 'admin token is readable by its owner only')

  const add = await run(['admin', 'user', 'add', 'alice', '--password', 'password123', '--premium', 'trial', '--age', '40', '--data-dir', dataDir, '--json'])
  t.equal(add.code, 0, add.stderr)
  const user = JSON.parse(add.stdout)
  t.equal(user.username, 'alice')
  t.match(user.profile_id, /^[0-9a-f-]{36}$/)

  const dup = await runCli(['admin', 'user', 'add', 'alice', '--password', 'password123', '--data-dir', dataDir, '--json'])
  t.equal(dup.code, 1)
  const dupBody = JSON.parse(dup.stdout)
  t.match(dupBody.error, /HTTP 409/)
  t.equal(dupBody.response.error_code, 9409)

  const client = await run(['admin', 'client', 'add', '--name', 'My App', '--redirect-uri', 'https://app.example/cb', '--redirect-uri', 'http://127.0.0.1/cb', '--data-dir', dataDir, '--json'])
  t.equal(client.code, 0, client.stderr)
  const c = JSON.parse(client.stdout)
  t.match(c, { client_id: /^[0-9a-f-]{36}$/, client_secret: /^[A-Za-z0-9_-]{40,}$/ })

  const list = await run(['admin', 'client', 'list', '--data-dir', dataDir, '--json'])
  t.equal(list.code, 0)
  const listed = JSON.parse(list.stdout).clients
  t.equal(listed.length, 1)
  t.same(listed[0].redirect_uris, ['https://app.example/cb', 'http://127.0.0.1/cb'])
  t.notOk(list.stdout.includes(c.client_secret), 'the secret is never listed')

  const grant = await run(['admin', 'user', 'grant', 'alice', 'game_mod', '--data-dir', dataDir, '--json'])
  t.equal(grant.code, 0)
  t.same(JSON.parse(grant.stdout), { username: 'alice', features: ['game_mod'] })

  const tok = await run(['admin', 'token', 'issue', 'alice', '--scope', 'data:heart_rate:read,profile:read', '--expires-in', '3600', '--data-dir', dataDir, '--json'])
  t.equal(tok.code, 0, tok.stderr)
  const token = JSON.parse(tok.stdout)
  t.match(token, { access_token: /^[0-9a-f]{8}-([0-9a-f]{4}-){3}[0-9a-f]{12}$/, expires_in: 3600, scope: 'data:heart_rate:read profile:read' })

  const badScope = await run(['admin', 'token', 'issue', 'alice', '--scope', 'everything', '--data-dir', dataDir, '--json'])
  t.equal(badScope.code, 1)
  t.equal(JSON.parse(badScope.stdout).response.error_code, 7011)

  const usage = await run(['admin', 'user', 'add', '--data-dir', dataDir, '--json'])
  t.equal(usage.code, 2)
  t.match(JSON.parse(usage.stdout).error, /expected <username>/)

  const human = await run(['admin', 'user', 'list', '--data-dir', dataDir])
  t.equal(human.code, 0)
  t.match(human.stdout, /^alice\t[0-9a-f-]{36}\tpremium=trial$/m)

  const second = await run(['start', '--data-dir', dataDir, '--http-port', '0', '--mqtt-port', '0', '--no-demo'])
  t.equal(second.code, 1)
  t.match(second.stderr, /is in use by another hr-relay process/)
  t.notMatch(second.stderr, /\n\s+at /, 'no stack trace')
  t.notOk(serverOut.includes(token.access_token), 'the server never logs a token')
})

t.test('admin without a running server, and a broken configuration file', async t => {
  const dataDir = await mkdtemp(join(tmpdir(), 'hr-cli-'))
  t.teardown(() => rm(dataDir, { recursive: true, force: true }))
  const r = await run(['admin', 'user', 'list', '--data-dir', dataDir, '--json'])
  t.equal(r.code, 1)
  t.match(JSON.parse(r.stdout).error, /no running hr-relay found for data directory/)
  // A server.json left by a service that is gone: its port refuses the connection.
  const { createServer } = await import('node:net')
  const probe = createServer()
  await new Promise<void>(resolve => { probe.listen(0, '127.0.0.1', resolve) })
  const port = (probe.address() as { port: number }).port
  await new Promise<void>(resolve => { probe.close(() => { resolve() }) })
  const fs = await import('node:fs/promises')
  await fs.writeFile(join(dataDir, 'server.json'), JSON.stringify({ url: `http://127.0.0.1:${port}`, pid: 1, mqtt_port: null, started_at: new Date().toISOString() }))
  await fs.writeFile(join(dataDir, 'admin-token'), 'a'.repeat(32))
  const gone = await run(['admin', 'user', 'list', '--data-dir', dataDir])
  t.equal(gone.code, 1)
  t.match(gone.stderr, new RegExp(`cannot reach hr-relay at http://127\\.0\\.0\\.1:${port}: connect ECONNREFUSED 127\\.0\\.0\\.1:${port} \\(is it running\\?\\)`))
  const cfg = join(dataDir, 'bad.json')
  await import('node:fs/promises').then(fs => fs.writeFile(cfg, JSON.stringify({ http: { port: 'x' }, nope: 1 })))
  const s = await run(['start', '--config', cfg, '--data-dir', dataDir])
  t.equal(s.code, 1)
  t.match(s.stderr, /invalid configuration in .*bad\.json:\n {2}- /)
  t.match(s.stderr, /http\.port: must be integer/)
  t.match(s.stderr, /\(root\): must NOT have additional properties 'nope'/)
  const unknown = await run(['frobnicate'])
  t.equal(unknown.code, 2)
  t.match(unknown.stderr, /unknown command frobnicate/)
})
