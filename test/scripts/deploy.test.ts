// The box as installed: deploy/hr-relay.service (checked by systemd-analyze
// verify where it exists, and key by key everywhere) and deploy/install.sh
// into a staging DESTDIR: the unit, /etc/hr-relay.json (valid, data_dir
// writable under ProtectSystem=strict) and an `hr-relay` command on the PATH
// that reaches the service's data directory without --data-dir.
import t from 'tap'
import { spawn, spawnSync } from 'node:child_process'
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { validateConfig } from '../../relay/config.ts'
import { startTestService } from '../helpers/service.ts'

const ROOT = resolve(fileURLToPath(new URL('../..', import.meta.url)))
const UNIT = join(ROOT, 'deploy/hr-relay.service')
const INSTALL = join(ROOT, 'deploy/install.sh')

/** Sections of a systemd unit file: key → every value given (in order). */
function parseUnit (text: string): Map<string, Map<string, string[]>> {
  const sections = new Map<string, Map<string, string[]>>()
  let current: Map<string, string[]> | undefined
  for (const raw of text.split('\n')) {
    const line = raw.trim()
    if (line === '' || line.startsWith('#') || line.startsWith(';')) continue
    const head = /^\[(.+)\]$/.exec(line)
    if (head?.[1] !== undefined) { current = new Map(); sections.set(head[1], current); continue }
    const eq = line.indexOf('=')
    if (current === undefined || eq < 1) throw new Error(`not a unit file line: ${line}`)
    const key = line.slice(0, eq)
    current.set(key, [...(current.get(key) ?? []), line.slice(eq + 1)])
  }
  return sections
}

function one (unit: Map<string, Map<string, string[]>>, section: string, key: string): string | undefined {
  const values = unit.get(section)?.get(key)
  return values?.[values.length - 1]
}

function install (env: Record<string, string>): { status: number | null, stdout: string, stderr: string } {
  const r = spawnSync('sh', [INSTALL], { encoding: 'utf8', env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env } })
  return { status: r.status, stdout: r.stdout, stderr: r.stderr }
}

t.test('the shipped unit has the keys the box needs', async t => {
  const unit = parseUnit(await readFile(UNIT, 'utf8'))
  t.equal(one(unit, 'Service', 'ExecStart'), '/usr/bin/node /opt/hr-relay/bin/hr-relay.cjs start --config /etc/hr-relay.json --no-demo')
  t.equal(one(unit, 'Service', 'WorkingDirectory'), '/opt/hr-relay')
  t.equal(one(unit, 'Service', 'User'), 'hr-relay')
  t.equal(one(unit, 'Service', 'Group'), 'hr-relay')
  t.same(one(unit, 'Service', 'SupplementaryGroups')?.split(' '), ['bluetooth', 'dialout', 'audio'])
  t.equal(one(unit, 'Service', 'Restart'), 'on-failure')
  t.equal(one(unit, 'Service', 'ProtectSystem'), 'strict')
  t.equal(one(unit, 'Service', 'ProtectHome'), 'true')
  t.equal(one(unit, 'Service', 'NoNewPrivileges'), 'true')
  t.equal(one(unit, 'Service', 'StateDirectory'), 'hr-relay', 'systemd creates /var/lib/hr-relay for User=')
  t.ok(one(unit, 'Service', 'ReadWritePaths')?.split(' ').includes('/var/lib/hr-relay'), 'the data directory is writable under ProtectSystem=strict')
  t.ok(Number(one(unit, 'Service', 'TimeoutStopSec')) >= 20, 'time to close the store')
  t.equal(one(unit, 'Install', 'WantedBy'), 'multi-user.target')
  t.match(one(unit, 'Unit', 'After') ?? '', /bluetooth\.service/)
})

t.test('the shipped unit passes systemd-analyze verify (where systemd-analyze exists)', async t => {
  const which = spawnSync('sh', ['-c', 'command -v systemd-analyze'], { encoding: 'utf8' })
  if (which.status !== 0) {
    // No systemd here: the key checks above are what this machine can assert.
    t.pass('systemd-analyze is not installed; the unit was checked key by key')
    return
  }
  // Installed with this machine's node, so that ExecStart names an executable that exists.
  const dest = await mkdtemp(join(tmpdir(), 'hr-deploy-'))
  t.teardown(async () => { await rm(dest, { recursive: true, force: true }) })
  const r = install({ DESTDIR: dest, PREFIX: ROOT, NODE: process.execPath })
  t.equal(r.status, 0, r.stderr)
  const verify = spawnSync('systemd-analyze', ['verify', join(dest, 'etc/systemd/system/hr-relay.service')], { encoding: 'utf8' })
  t.equal(verify.status, 0, verify.stderr)
  t.equal(verify.stderr.split('\n').filter(l => l.includes('hr-relay.service')).join('\n'), '', 'no warning about the unit')
})

t.test('install.sh into a DESTDIR writes the unit, a valid config and the command; keeps an existing config', async t => {
  const dest = await mkdtemp(join(tmpdir(), 'hr-deploy-'))
  t.teardown(async () => { await rm(dest, { recursive: true, force: true }) })
  const r = install({ DESTDIR: dest, PREFIX: '/opt/hr-relay', NODE: '/usr/bin/node' })
  // PREFIX must be a checkout: /opt/hr-relay is not one here.
  t.not(r.status, 0)
  t.match(r.stderr, /\/opt\/hr-relay\/bin\/hr-relay.cjs not found/)

  const ok = install({ DESTDIR: dest, PREFIX: ROOT, NODE: '/usr/bin/node' })
  t.equal(ok.status, 0, ok.stderr)
  const shipped = await readFile(UNIT, 'utf8')
  t.equal(await readFile(join(dest, 'etc/systemd/system/hr-relay.service'), 'utf8'), shipped.replaceAll('/opt/hr-relay', ROOT), 'the shipped unit with PREFIX filled in')

  const config = JSON.parse(await readFile(join(dest, 'etc/hr-relay.json'), 'utf8'))
  t.same(config, { data_dir: '/var/lib/hr-relay', demo: false })
  const valid = validateConfig(config, '/etc/hr-relay.json')
  t.equal(valid.data_dir, '/var/lib/hr-relay')
  t.equal(valid.demo, false)
  const unit = parseUnit(shipped)
  t.ok(one(unit, 'Service', 'ReadWritePaths')?.split(' ').includes(valid.data_dir), 'the config\'s data_dir is one the unit may write')

  const cmd = join(dest, 'usr/local/bin/hr-relay')
  t.equal((await stat(cmd)).mode & 0o777, 0o755)
  t.equal(await readFile(cmd, 'utf8'), [
    '#!/bin/sh',
    `# hr-relay, installed by ${ROOT}/deploy/install.sh: admin commands find the service's data directory by default.`,
    // eslint-disable-next-line no-template-curly-in-string -- shell syntax, written literally
    'HR_RELAY_DATA_DIR=${HR_RELAY_DATA_DIR:-/var/lib/hr-relay}',
    'export HR_RELAY_DATA_DIR',
    `exec /usr/bin/node ${ROOT}/bin/hr-relay.cjs "$@"`,
    ''
  ].join('\n'))

  // A second install keeps the operator's configuration.
  await writeFile(join(dest, 'etc/hr-relay.json'), '{"data_dir":"/var/lib/hr-relay","http":{"port":9000}}\n')
  const again = install({ DESTDIR: dest, PREFIX: ROOT, NODE: '/usr/bin/node' })
  t.equal(again.status, 0, again.stderr)
  t.match(again.stdout, /kept the existing/)
  t.equal(await readFile(join(dest, 'etc/hr-relay.json'), 'utf8'), '{"data_dir":"/var/lib/hr-relay","http":{"port":9000}}\n')
})

t.test('the installed command is on the PATH and reaches the service\'s data directory without --data-dir', async t => {
  const svc = await startTestService(t)
  await svc.user('alice')
  const dest = await mkdtemp(join(tmpdir(), 'hr-deploy-'))
  t.teardown(async () => { await rm(dest, { recursive: true, force: true }) })
  const r = install({ DESTDIR: dest, PREFIX: ROOT, NODE: process.execPath, DATA_DIR: svc.dataDir })
  t.equal(r.status, 0, r.stderr)
  const env: NodeJS.ProcessEnv = { ...process.env, PATH: `${join(dest, 'usr/local/bin')}:/usr/bin:/bin`, HR_RELAY_FROM_SOURCE: '1' }
  delete env.HR_RELAY_DATA_DIR
  const child = spawn('hr-relay', ['admin', 'user', 'list'], { env, cwd: dest, stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', d => { stdout += d })
  child.stderr.on('data', d => { stderr += d })
  const code = await new Promise<number | null>(resolve => { child.on('close', resolve) })
  t.equal(code, 0, stderr)
  t.match(stdout, /^alice\t[0-9a-f-]{36}\tpremium=none\n$/)
})

t.test('install.sh warns when the node it is given is older than 22, and not for a supported one', async t => {
  const dest = await mkdtemp(join(tmpdir(), 'hr-deploy-'))
  t.teardown(async () => { await rm(dest, { recursive: true, force: true }) })
  const old = join(dest, 'node20')
  await writeFile(old, '#!/bin/sh\necho 20.20.2\n', { mode: 0o755 })
  const r = install({ DESTDIR: join(dest, 'a'), PREFIX: ROOT, NODE: old })
  t.equal(r.status, 0, 'the files are still written: the operator may install a newer node at that path')
  t.match(r.stderr, `install.sh: warning: ${old} is Node 20.20.2; hr-relay needs Node 22 or newer (24 LTS recommended) and will refuse to start on it\n`)
  const current = install({ DESTDIR: join(dest, 'b'), PREFIX: ROOT, NODE: process.execPath })
  t.equal(current.status, 0, current.stderr)
  t.notMatch(current.stderr, /warning: .* is Node/)
})
