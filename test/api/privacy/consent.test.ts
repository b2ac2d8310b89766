// Consent to the privacy notice (issue 41 §1), over real sockets: while
// privacy.require_consent is on, a member's readings are refused before they
// are acknowledged (HTTP 403 9451; over MQTT no PUBACK: the connection closes)
// and nothing is stored; a consent recorded by the operator (admin API and
// CLI) lets them through, for the current notice version only; withdrawing
// refuses them again and deletes nothing. With require_consent off, as by
// default, nothing changes. An unreadable notice file stops the start with a
// clear message.
import t from 'tap'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import mqtt, { type MqttClient } from 'mqtt'
import { startTestService, type TestService } from '../../helpers/service.ts'
import { call } from '../http/fetch.ts'
import { runCli } from '../../helpers/cli.ts'
import { validateConfig } from '../../../relay/config.ts'
import { startService } from '../../../relay/main.ts'

const WRITE = 'data:heart_rate:read data:heart_rate:write'

async function write (s: TestService, token: string, measuredAt: number, bpm: number): Promise<{ status: number, json: any }> {
  return await call(s.url, 'POST', '/api/v1/data', { token, body: { measured_at: measuredAt, data: { heart_rate: bpm } } })
}

async function latest (s: TestService, token: string): Promise<number | null> {
  const r = await call(s.url, 'GET', '/api/v1/data/heart_rate/latest', { token })
  return r.status === 412 ? null : r.json.data.heart_rate
}

t.test('required: refused with 403 9451 until the operator records consent; withdrawn: refused again, nothing deleted', async t => {
  const s = await startTestService(t, { privacy: { require_consent: true, notice_version: '2026-11' } })
  await s.user('alice')
  const token = await s.token('alice', WRITE)
  const t0 = Date.now() - 10_000

  const refused = await write(s, token, t0, 70)
  t.equal(refused.status, 403)
  t.same(refused.json, { error_code: 9451, error_message: 'consent_required', detail: 'the member has not consented to the current privacy notice: accept it on /me' })
  t.equal(await latest(s, token), null, 'nothing stored')

  const given = await s.admin('PUT', '/admin/users/alice/consent', {})
  t.equal(given.username, 'alice')
  t.match(given.consent, { version: '2026-11', how: 'operator' }, 'the current notice version, recorded by the operator')
  t.type(given.consent.given_at, 'number')
  t.same([(await write(s, token, t0 + 1000, 71)).status, await latest(s, token)], [200, 71], 'stored once consent is in force')

  const withdrawn = await s.admin('DELETE', '/admin/users/alice/consent')
  t.same(withdrawn, { username: 'alice', consent: null })
  t.equal((await write(s, token, t0 + 2000, 72)).status, 403, 'refused again after withdrawal')
  t.equal(await latest(s, token), 71, 'withdrawing deletes nothing')

  const metrics = await (await fetch(`${s.url}/metrics`)).text()
  t.match(metrics, /hr_relay_ingest_dropped_total\{reason="no_consent"\} 2\n/, 'both refusals counted')
})

t.test('a consent to an older notice version does not count', async t => {
  const s = await startTestService(t, { privacy: { require_consent: true, notice_version: '3' } })
  await s.user('bob')
  const token = await s.token('bob', WRITE)
  await s.admin('PUT', '/admin/users/bob/consent', { version: '2' })
  t.equal((await write(s, token, Date.now() - 5000, 80)).status, 403, 'consent to version 2 while the notice is version 3')
  const again = await s.admin('PUT', '/admin/users/bob/consent', { version: '3' })
  t.equal(again.consent.version, '3')
  t.equal((await write(s, token, Date.now() - 4000, 81)).status, 200)
  // The history keeps both: the record of version 2 ended when version 3 was given.
  const users = await s.admin('GET', '/admin/users')
  const bob = (users.users as any[]).find(u => u.username === 'bob')
  t.same(bob.consents.map((c: any) => [c.version, c.how, typeof c.withdrawn_at]), [['2', 'operator', 'number'], ['3', 'operator', 'undefined']])
})

t.test('not required (the default): readings are stored without any consent', async t => {
  const s = await startTestService(t)
  await s.user('carol')
  const token = await s.token('carol', WRITE)
  t.same([(await write(s, token, Date.now() - 1000, 66)).status, await latest(s, token)], [200, 66])
})

t.test('MQTT: a member without consent gets no PUBACK (the connection closes) and nothing is stored', async t => {
  const s = await startTestService(t, { privacy: { require_consent: true } })
  await s.user('dave')
  const token = await s.token('dave', WRITE)
  const cred = await s.admin('POST', '/admin/devices', { device_id: 'esp-c', username: 'dave', kind: 'mqtt' })
  const info = JSON.parse(await readFile(join(s.dataDir, 'server.json'), 'utf8')) as { mqtt_port: number }
  const connect = async (): Promise<MqttClient> => {
    const client = mqtt.connect(`mqtt://127.0.0.1:${info.mqtt_port}`, { protocolVersion: 4, reconnectPeriod: 0, username: cred.mqtt_username, password: cred.mqtt_password })
    t.teardown(() => { client.end(true) })
    await new Promise<void>((resolve, reject) => { client.once('connect', () => { resolve() }); client.once('error', reject) })
    return client
  }
  const topic = 'hr-relay/v1/devices/esp-c/heart_rate'
  const device = await connect()
  let pubacks = 0
  device.on('packetreceive', p => { if (p.cmd === 'puback') pubacks++ })
  const closed = new Promise<void>(resolve => { device.once('close', () => { resolve() }) })
  device.publish(topic, JSON.stringify({ measured_at: Date.now() - 2000, heart_rate: 90 }), { qos: 1 })
  await closed
  t.equal(pubacks, 0, 'no PUBACK: the reading was not acknowledged')
  t.equal(await latest(s, token), null, 'and not stored')

  await s.admin('PUT', '/admin/users/dave/consent', {})
  const again = await connect()
  await again.publishAsync(topic, JSON.stringify({ measured_at: Date.now() - 1000, heart_rate: 91 }), { qos: 1 })
  t.equal(await latest(s, token), 91, 'acknowledged and stored once consent is in force')
})

t.test('hr-relay admin user consent: records, shows and withdraws; unknown users and bad flags are clear errors', async t => {
  const s = await startTestService(t, { privacy: { require_consent: true, notice_version: 'v7' } })
  await s.user('erin')
  const env = { HR_RELAY_DATA_DIR: s.dataDir }
  const given = await runCli(['admin', 'user', 'consent', 'erin', '--data-dir', s.dataDir], env)
  t.equal(given.code, 0, given.stderr)
  t.match(given.stdout, /^erin: consent to notice version v7, recorded by operator at \d{4}-\d\d-\d\dT/)
  const json = await runCli(['admin', 'user', 'consent', 'erin', '--withdraw', '--json', '--data-dir', s.dataDir], env)
  t.same(JSON.parse(json.stdout), { username: 'erin', consent: null })
  const unknown = await runCli(['admin', 'user', 'consent', 'nobody', '--data-dir', s.dataDir], env)
  t.not(unknown.code, 0)
  t.match(unknown.stderr, /no user nobody/)
  const both = await runCli(['admin', 'user', 'consent', 'erin', '--withdraw', '--version', '2', '--data-dir', s.dataDir], env)
  t.equal(both.code, 2)
  t.match(both.stderr, /--withdraw takes no --version/)
})

t.test('an unreadable privacy.notice_file stops the start and names the key', async t => {
  const dir = await mkdtemp(join(tmpdir(), 'hr-relay-notice-'))
  t.teardown(async () => { await rm(dir, { recursive: true, force: true }) })
  const config = (noticeFile: string): ReturnType<typeof validateConfig> => validateConfig({ demo: false, log_level: 'silent', data_dir: join(dir, 'data'), http: { host: '127.0.0.1', port: 0 }, mqtt: { port: 0 }, ble: { enabled: false }, privacy: { require_consent: true, notice_file: noticeFile } })
  await t.rejects(startService(config(join(dir, 'missing.md'))), { name: 'ConfigError', message: /privacy\.notice_file: cannot read .*missing\.md/ })
  await writeFile(join(dir, 'empty.md'), '  \n')
  await t.rejects(startService(config(join(dir, 'empty.md'))), { name: 'ConfigError', message: /privacy\.notice_file: .*empty\.md is empty/ })
})
