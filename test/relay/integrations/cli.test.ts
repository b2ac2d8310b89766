// `hr-relay admin integration add home-assistant` and `hr-relay admin user set
// --home-assistant` against a running service, run through the CLI's entry
// function in this process (test/helpers/cli.ts runMain); the admin command as a
// separate process is tested in test/relay/cli.test.ts.
import t from 'tap'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { runMain } from '../../helpers/cli.ts'
import { startTestService } from '../../helpers/service.ts'
import { connackCode } from '../../helpers/broker.ts'

t.test('integration add --json prints working credentials; user set toggles the opt-in', async t => {
  const svc = await startTestService(t, { home_assistant: { enabled: true } })
  const profile = await svc.user('olga')
  const dir = ['--data-dir', svc.dataDir]

  const add = await runMain(['admin', 'integration', 'add', 'home-assistant', ...dir, '--json'])
  t.equal(add.code, 0, add.stderr)
  const cred = JSON.parse(add.stdout)
  t.same(Object.keys(cred).sort(), ['mqtt_password', 'mqtt_username'])
  const info = JSON.parse(await readFile(join(svc.dataDir, 'server.json'), 'utf8')) as { mqtt_port: number }
  t.equal(await connackCode(`mqtt://127.0.0.1:${info.mqtt_port}`, { username: cred.mqtt_username, password: cred.mqtt_password }), 0)
  const other = await runMain(['admin', 'integration', 'add', 'node-red', ...dir])
  t.equal(other.code, 2)
  t.match(other.stderr, /the only integration is home-assistant/)

  const on = await runMain(['admin', 'user', 'set', 'olga', '--home-assistant', 'on', ...dir, '--json'])
  t.equal(on.code, 0, on.stderr)
  t.same(JSON.parse(on.stdout), { username: 'olga', home_assistant: true })
  t.equal((await svc.service.services.users.get(profile))?.home_assistant, true)
  const off = await runMain(['admin', 'user', 'set', 'olga', '--home-assistant', 'off', ...dir, '--json'])
  t.same(JSON.parse(off.stdout), { username: 'olga', home_assistant: false })
  const bad = await runMain(['admin', 'user', 'set', 'olga', '--home-assistant', 'yes', ...dir])
  t.equal(bad.code, 2)
  t.match(bad.stderr, /--home-assistant on\|off is required/)
  const nobody = await runMain(['admin', 'user', 'set', 'nobody', '--home-assistant', 'on', ...dir])
  t.equal(nobody.code, 1)
  t.match(nobody.stderr, /HTTP 404/)
})
