// `hr-relay admin device ...` against a running service, each command run through
// the CLI's entry function in this process (test/helpers/cli.ts runMain); the
// admin command as a separate process is tested in test/relay/cli.test.ts.
import t from 'tap'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { runMain } from '../../helpers/cli.ts'
import { startTestService } from '../../helpers/service.ts'
import { connackCode } from '../../helpers/broker.ts'

const run = runMain

t.test('device add --json prints working MQTT credentials; list, unpaired and remove', async t => {
  const svc = await startTestService(t)
  const profile = await svc.user('frank')
  const dir = ['--data-dir', svc.dataDir]

  const add = await run(['admin', 'device', 'add', 'esp-frank', '--user', 'frank', '--name', 'Rower 1', ...dir, '--json'])
  t.equal(add.code, 0, add.stderr)
  const cred = JSON.parse(add.stdout)
  t.same(Object.keys(cred).sort(), ['device_id', 'kind', 'mqtt_password', 'mqtt_username', 'profile_id'])
  t.match(cred, { device_id: 'esp-frank', mqtt_username: 'esp-frank', profile_id: profile, kind: 'any' })
  const info = JSON.parse(await readFile(join(svc.dataDir, 'server.json'), 'utf8')) as { mqtt_port: number }
  t.equal(await connackCode(`mqtt://127.0.0.1:${info.mqtt_port}`, { username: cred.mqtt_username, password: cred.mqtt_password }), 0)

  const again = await run(['admin', 'device', 'add', 'esp-frank', '--user', 'frank', ...dir])
  t.equal(again.code, 1)
  t.match(again.stderr, /HTTP 409/)
  const noUser = await run(['admin', 'device', 'add', 'esp-x', '--user', 'nobody', ...dir])
  t.equal(noUser.code, 1)
  t.match(noUser.stderr, /HTTP 404/)
  const missing = await run(['admin', 'device', 'add', 'esp-x', ...dir])
  t.equal(missing.code, 2)
  t.match(missing.stderr, /--user is required/)

  const list = await run(['admin', 'device', 'list', ...dir])
  t.equal(list.code, 0, list.stderr)
  t.equal(list.stdout, 'esp-frank\tany\tfrank\tRower 1\tnot connected, via mqtt\n', 'seen once, through the connection above')

  svc.service.services.devices.sighting({ device_id: 'C8:2F:9A:00:00:01', source: 'ble', name: 'Polar H10', rssi: -55, battery_percent: 90, connected: false, seen_at: 1_700_000_000_000 })
  const unpaired = await run(['admin', 'device', 'unpaired', ...dir, '--json'])
  t.same(JSON.parse(unpaired.stdout), { devices: [{ device_id: 'C8:2F:9A:00:00:01', source: 'ble', name: 'Polar H10', rssi: -55, battery_percent: 90, connected: false, seen_at: 1_700_000_000_000 }] })

  const remove = await run(['admin', 'device', 'remove', 'esp-frank', ...dir, '--json'])
  t.equal(remove.code, 0, remove.stderr)
  t.same(JSON.parse(remove.stdout), { device_id: 'esp-frank', removed: true })
  const removeAgain = await run(['admin', 'device', 'remove', 'esp-frank', ...dir])
  t.equal(removeAgain.code, 1)
  t.match(removeAgain.stderr, /HTTP 404/)
  t.equal(await connackCode(`mqtt://127.0.0.1:${info.mqtt_port}`, { username: cred.mqtt_username, password: cred.mqtt_password }), 4)
})
