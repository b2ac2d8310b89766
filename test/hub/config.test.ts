// The hub's configuration: defaults filled in, every problem named by its path.
import t from 'tap'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { HubConfigError, loadHubConfig, validateHubConfig } from '../../hub/config.ts'

const MIN = { postgres: { url: 'postgres://hub@db/hub' }, mqtt: { url: 'mqtt://broker:1883', client_id: 'hub-1' } }

t.test('the smallest configuration, with its defaults', async t => {
  t.same(validateHubConfig(MIN), {
    log_level: 'info',
    postgres: { url: 'postgres://hub@db/hub', pool_size: 10 },
    mqtt: { url: 'mqtt://broker:1883', client_id: 'hub-1', topic_root: 'hr-relay-chain/v1', share_group: 'hr-relay-hub', keepalive_s: 30, clean_start: false, receive_maximum: 1000 },
    http: { host: '127.0.0.1', port: 8090, rate_limit_per_second: 20 },
    data: { raw_retention_days: 35, rollup_retention_days: 400, stream_gap_seconds: 5, session_gap_seconds: 300 }
  })
})

t.test('every problem at once, by path', async t => {
  const err = t.throws(() => validateHubConfig({ postgres: {}, mqtt: { url: 'mqtt://b', client_id: '', share_group: 'a/b', extra: 1 }, http: { port: 70000 } })) as HubConfigError
  t.type(err, HubConfigError)
  t.same(err.problems.sort(), [
    "mqtt: must NOT have additional properties 'extra'",
    'http.port: must be <= 65535',
    'mqtt.client_id: must NOT have fewer than 1 characters',
    'mqtt.share_group: must match pattern "^[^/#+]+$"',
    "postgres: must have required property 'url'"
  ].sort())
  t.same((t.throws(() => validateHubConfig({ ...MIN, mqtt: { ...MIN.mqtt, url: 'http://broker' } })) as HubConfigError).problems, ['mqtt.url: must be a mqtt:// or mqtts:// URL'])
  t.same((t.throws(() => validateHubConfig({ ...MIN, postgres: { url: 'mysql://x/y' } })) as HubConfigError).problems, ['postgres.url: must be a postgres:// or postgresql:// URL'])
  t.same((t.throws(() => validateHubConfig([])) as HubConfigError).problems, ['(root): must be a JSON object'])
})

t.test('a file that is missing or not JSON', async t => {
  const dir = await mkdtemp(join(tmpdir(), 'hub-config-'))
  t.teardown(async () => { await rm(dir, { recursive: true, force: true }) })
  await t.rejects(loadHubConfig(join(dir, 'none.json')), { name: 'HubConfigError', problems: ['cannot be read: ENOENT'] })
  await writeFile(join(dir, 'bad.json'), '{ "postgres": ')
  const err = await loadHubConfig(join(dir, 'bad.json')).catch((e: unknown) => e) as HubConfigError
  t.match(err.problems[0], /^is not JSON: /)
  await writeFile(join(dir, 'ok.json'), JSON.stringify(MIN))
  t.equal((await loadHubConfig(join(dir, 'ok.json'))).mqtt.client_id, 'hub-1')
})
