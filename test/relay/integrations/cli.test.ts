// `hr-relay admin integration add home-assistant` and `hr-relay admin user set
// --home-assistant` against a running service, run through the CLI's entry
// function in this process (test/helpers/cli.ts runMain); the admin command as a
// separate process is tested in test/relay/cli.test.ts.
import t from 'tap'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import mqtt from 'mqtt'
import { runMain } from '../../helpers/cli.ts'
import { startTestService } from '../../helpers/service.ts'
import { connackCode } from '../../helpers/broker.ts'
import { loadConfig } from '../../../relay/config.ts'
import { HOME_ASSISTANT_OFF } from '../../../api/http/admin-integrations.ts'

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

t.test('integration add while home_assistant is off: exit 1 with a message that says how to turn it on; --json gives {error}', async t => {
  const svc = await startTestService(t)
  const dir = ['--data-dir', svc.dataDir]
  const human = await runMain(['admin', 'integration', 'add', 'home-assistant', ...dir])
  t.equal(human.code, 1)
  t.equal(human.stdout, '')
  t.equal(human.stderr.trim(), `hr-relay: POST /admin/integrations failed: HTTP 409 conflict: ${HOME_ASSISTANT_OFF}`)
  const json = await runMain(['admin', 'integration', 'add', 'home-assistant', ...dir, '--json'])
  t.equal(json.code, 1)
  t.same(JSON.parse(json.stdout), {
    error: `POST /admin/integrations failed: HTTP 409 conflict: ${HOME_ASSISTANT_OFF}`,
    response: { error_code: 9409, error_message: 'conflict', detail: HOME_ASSISTANT_OFF }
  })
})

t.test('the documented steps: home_assistant enabled in the configuration file, integration add, then Home Assistant logs in with the printed credentials and receives discovery', async t => {
  const dir = await mkdtemp(join(tmpdir(), 'hr-relay-ha-config-'))
  t.teardown(async () => { await rm(dir, { recursive: true, force: true }) })
  const file = join(dir, 'config.json')
  await writeFile(file, JSON.stringify({ home_assistant: { enabled: true } }))
  const fromFile = await loadConfig({ file, env: {} })
  t.same(fromFile.home_assistant, { enabled: true, discovery_prefix: 'homeassistant' }, 'the one documented key turns it on')
  t.equal((await loadConfig({ env: { HR_RELAY_HOME_ASSISTANT: '1' } })).home_assistant.enabled, true, 'and so does HR_RELAY_HOME_ASSISTANT=1')

  const svc = await startTestService(t, { home_assistant: fromFile.home_assistant })
  await svc.user('dana')
  const data = ['--data-dir', svc.dataDir]
  t.equal((await runMain(['admin', 'user', 'set', 'dana', '--home-assistant', 'on', ...data])).code, 0)
  const add = await runMain(['admin', 'integration', 'add', 'home-assistant', ...data])
  t.equal(add.code, 0, add.stderr)
  const printed = Object.fromEntries(add.stdout.split('\n').filter(l => l.startsWith('mqtt_')).map(l => l.split(': ') as [string, string]))
  t.equal(printed.mqtt_username, 'home-assistant@hr-relay')
  t.match(printed.mqtt_password, /^[A-Za-z0-9_-]{32}$/)

  // Home Assistant's MQTT integration: MQTT 3.1.1, the printed credentials, the discovery prefix.
  const info = JSON.parse(await readFile(join(svc.dataDir, 'server.json'), 'utf8')) as { mqtt_port: number }
  const client = mqtt.connect(`mqtt://127.0.0.1:${info.mqtt_port}`, { protocolVersion: 4, reconnectPeriod: 0, username: printed.mqtt_username, password: printed.mqtt_password })
  t.teardown(() => { client.end(true) })
  const connack = await new Promise<number | undefined>((resolve, reject) => {
    client.on('packetreceive', p => { if (p.cmd === 'connack') resolve(p.returnCode) })
    client.once('error', reject)
  })
  t.equal(connack, 0, 'CONNACK 0')
  const discovery = new Promise<{ topic: string, retain: boolean }>(resolve => {
    client.on('message', (topic, _payload, packet) => { if (topic.endsWith('/heart_rate/config')) resolve({ topic, retain: packet.retain }) })
  })
  await client.subscribeAsync('homeassistant/#', { qos: 1 })
  const profileId = (await svc.service.services.users.byUsername('dana'))?.profile_id ?? ''
  t.same(await discovery, { topic: `homeassistant/sensor/hr_relay_${profileId.replace(/-/g, '_')}/heart_rate/config`, retain: true })
})
