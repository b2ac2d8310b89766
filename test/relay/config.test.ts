import t from 'tap'
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Writable } from 'node:stream'
import pino from 'pino'
import { ConfigError, loadConfig, validateConfig } from '../../relay/config.ts'
import { IGNORED_DATA_KEYS } from '../../relay/config-schema.ts'
import { startService } from '../../relay/main.ts'

t.test('defaults with no configuration', async t => {
  const c = await loadConfig({ env: {} })
  t.equal(c.data_dir, './data')
  t.same(c.http, {
    host: '127.0.0.1',
    port: 8080,
    body_limit_bytes: 65536,
    rate_limit_per_second: 20,
    admin_remote: false,
    headers_timeout_ms: 10000,
    request_timeout_ms: 30000,
    keep_alive_timeout_ms: 5000,
    max_connections_per_address: 256,
    max_connections_loopback: 4096
  })
  t.equal(c.mqtt.port, 1883)
  t.equal(c.oauth.implicit_expires_in, 90000)
  t.equal(c.oauth.code_expires_in, 3600)
  t.equal(c.oauth.authorization_code_ttl, 600)
  t.equal(c.data.raw_retention_days, 35)
  t.equal(c.data.rollup_retention_days, 400)
  t.equal(c.data.session_gap_seconds, 300)
  t.equal(c.demo, true)
  t.same(c.serial, [])
  t.equal(c.upstream, undefined)
})

t.test('every error is reported with its path', async t => {
  const err = (() => {
    try {
      validateConfig({ htttp: {}, http: { port: 70000, host: 5 }, serial: [{ format: 'morse' }], oauth: { authorization_code_ttl: 3600 } }, 'x.json')
    } catch (e) { return e }
    return null
  })()
  t.type(err, ConfigError)
  const problems = (err as ConfigError).problems
  t.ok(problems.includes("(root): must NOT have additional properties 'htttp'"), problems.join('\n'))
  t.ok(problems.includes('http.port: must be <= 65535'))
  t.ok(problems.includes('http.host: must be string'))
  t.ok(problems.includes("serial.0: must have required property 'path'"))
  t.ok(problems.includes('serial.0.format: must be equal to one of the allowed values (framed, text, hrmi)'))
  t.ok(problems.includes('oauth.authorization_code_ttl: must be <= 600'))
  t.match((err as Error).message, /^invalid configuration in x\.json:\n {2}- /)
})

t.test('files: unreadable, not JSON, not an object; environment and flags override', async t => {
  const dir = await mkdtemp(join(tmpdir(), 'hr-config-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  await t.rejects(loadConfig({ file: join(dir, 'missing.json'), env: {} }), { name: 'ConfigError', message: /cannot read the file/ })
  await writeFile(join(dir, 'bad.json'), '{ "http": ')
  await t.rejects(loadConfig({ file: join(dir, 'bad.json'), env: {} }), { name: 'ConfigError', message: /not valid JSON/ })
  await writeFile(join(dir, 'array.json'), '[1]')
  await t.rejects(loadConfig({ file: join(dir, 'array.json'), env: {} }), { name: 'ConfigError', message: /must be a JSON object/ })
  await writeFile(join(dir, 'ok.json'), JSON.stringify({ http: { port: 9000 }, data_dir: '/srv/a' }))
  const c = await loadConfig({
    file: join(dir, 'ok.json'),
    env: { HR_RELAY_HTTP_PORT: '9100', HR_RELAY_DATA_DIR: '/srv/b', HR_RELAY_BLE: '0' },
    overrides: raw => { raw.http.port = 9200 }
  })
  t.equal(c.http.port, 9200, 'flags win over the environment')
  t.equal(c.data_dir, '/srv/b', 'environment wins over the file')
  t.equal(c.ble.enabled, false)
  t.equal(c.demo, false, 'a configuration file turns the demo off unless it asks for it')
  await writeFile(join(dir, 'demo.json'), JSON.stringify({ demo: true }))
  t.equal((await loadConfig({ file: join(dir, 'demo.json'), env: {} })).demo, true)
  await t.rejects(loadConfig({ env: { HR_RELAY_HTTP_PORT: 'eighty' } }), { name: 'ConfigError', message: /http\.port: must be integer/ })
})

t.test('osc: defaults, every key validated, min_bpm below max_bpm', async t => {
  t.same((await loadConfig({ env: {} })).osc, [], 'OSC is off by default')
  const c = validateConfig({ osc: [{ username: 'alice' }, { host: '192.168.1.20', port: 9001, username: 'bob', min_bpm: 40, max_bpm: 200, parameter_prefix: '/avatar/parameters/hr/' }] })
  t.same(c.osc, [
    { host: '127.0.0.1', port: 9000, username: 'alice', min_bpm: 0, max_bpm: 255, parameter_prefix: '/avatar/parameters/' },
    { host: '192.168.1.20', port: 9001, username: 'bob', min_bpm: 40, max_bpm: 200, parameter_prefix: '/avatar/parameters/hr/' }
  ])
  const problems = (input: unknown): string[] => {
    try { validateConfig(input) } catch (e) { return (e as ConfigError).problems }
    return []
  }
  t.same(problems({ osc: [{ host: 'x' }] }), ["osc.0: must have required property 'username'"])
  t.same(problems({ osc: [{ username: 'a', port: 70000, min_bpm: -1, max_bpm: 'high', parameter_prefix: 'avatar', colour: 1 }] }), [
    "osc.0: must NOT have additional properties 'colour'",
    'osc.0.port: must be <= 65535',
    'osc.0.min_bpm: must be >= 0',
    'osc.0.max_bpm: must be integer',
    'osc.0.parameter_prefix: must match pattern "^/[!-~]*$"'
  ])
  t.same(problems({ osc: [{ username: 'a', min_bpm: 120, max_bpm: 120 }] }), ['osc.0: min_bpm must be below max_bpm'])
  t.same(problems({ osc: {} }), ['osc: must be array'])
})

t.test('data.max_clock_skew_ms: default 30000, an integer 0..600000', async t => {
  t.equal(validateConfig({}).data.max_clock_skew_ms, 30_000)
  t.equal(validateConfig({ data: { max_clock_skew_ms: 0 } }).data.max_clock_skew_ms, 0)
  for (const [v, problem] of [[-1, 'data.max_clock_skew_ms: must be >= 0'], [1.5, 'data.max_clock_skew_ms: must be integer'], [600_001, 'data.max_clock_skew_ms: must be <= 600000']] as const) {
    try { validateConfig({ data: { max_clock_skew_ms: v } }); t.fail('accepted') } catch (err) { t.same((err as ConfigError).problems, [problem]) }
  }
})

t.test('data.journal_mb and data.sync_below_per_s, from earlier versions, are accepted and ignored', async t => {
  const config = validateConfig({ data: { journal_mb: 16, sync_below_per_s: 500, raw_retention_days: 10 } })
  t.equal(config.data.raw_retention_days, 10, 'the rest of the section applies')
  t.same([config.data.journal_mb, config.data.sync_below_per_s], [16, 500], 'kept as written, for the start to name them in its warning')
  t.same(IGNORED_DATA_KEYS, ['journal_mb', 'sync_below_per_s'])
  const fresh = validateConfig({})
  t.same([fresh.data.journal_mb, fresh.data.sync_below_per_s], [undefined, undefined], 'no default: absent unless written')
})

t.test('data.session_gap_seconds is validated like the other keys', async t => {
  t.equal(validateConfig({ data: { session_gap_seconds: 60 } }).data.session_gap_seconds, 60)
  for (const [v, problem] of [[0, 'data.session_gap_seconds: must be > 0'], ['300', 'data.session_gap_seconds: must be number'], [86401, 'data.session_gap_seconds: must be <= 86400']] as const) {
    try { validateConfig({ data: { session_gap_seconds: v } }); t.fail('accepted') } catch (err) { t.same((err as ConfigError).problems, [problem]) }
  }
})

t.test('a configuration that still has data.journal_mb and data.sync_below_per_s starts, with one warning naming them', async t => {
  const dataDir = await mkdtemp(join(tmpdir(), 'hr-config-ignored-'))
  t.teardown(async () => { await rm(dataDir, { recursive: true, force: true }) })
  const file = join(dataDir, 'config.json')
  // And the journal file an earlier version left: named in a warning, neither read nor deleted.
  await mkdir(join(dataDir, 'data'))
  await writeFile(join(dataDir, 'data', 'readings-journal'), 'old')
  await writeFile(file, JSON.stringify({ data_dir: join(dataDir, 'data'), data: { journal_mb: 16, sync_below_per_s: 500 }, http: { port: 0 }, mqtt: { enabled: false }, ble: { enabled: false } }))
  const lines: Array<Record<string, unknown>> = []
  const logger = pino({ level: 'info' }, new Writable({ write (chunk: Buffer, _enc, cb) { lines.push(JSON.parse(chunk.toString('utf8')) as Record<string, unknown>); cb() } }))
  const running = await startService(await loadConfig({ file, env: {} }), { logger })
  t.teardown(async () => { await running.close() })
  const warnings = lines.filter(l => l.level === 40 && String(l.msg).startsWith('ignored configuration keys'))
  t.equal(warnings.length, 1, 'one warning')
  t.match(warnings[0], { keys: ['data.journal_mb', 'data.sync_below_per_s'], msg: /^ignored configuration keys: data\.journal_mb, data\.sync_below_per_s \(/ })
  t.equal((await fetch(`${running.httpUrl}/health`)).status, 200, 'the service runs')
  const leftover = lines.filter(l => l.level === 40 && String(l.msg).startsWith('found the write-ahead journal of an earlier hr-relay'))
  t.equal(leftover.length, 1, 'one warning about the old journal file')
  t.match(leftover[0], { file: join(dataDir, 'data', 'readings-journal') }, 'naming it')
  t.equal(await readFile(join(dataDir, 'data', 'readings-journal'), 'utf8'), 'old', 'which is left as it was')
})

t.test('ant: a stick per entry, baud rate 115200 by default; a bad network key is named with what it must be', async t => {
  const c = validateConfig({ ant: [{ path: '/dev/ttyUSB0', network_key: '0123456789abcdef' }, { path: '/dev/ant-stick-2' }] })
  t.same(c.ant, [{ path: '/dev/ttyUSB0', baud_rate: 115200, network_key: '0123456789abcdef' }, { path: '/dev/ant-stick-2', baud_rate: 115200 }])
  t.same(validateConfig({}).ant, [], 'no stick unless configured')
  const problems = (bad: unknown): string[] => {
    try { validateConfig(bad, 'x.json') } catch (e) { return (e as ConfigError).problems }
    return []
  }
  t.same(problems({ ant: [{ path: '/dev/ttyUSB0', network_key: '0123456789abcde' }] }), ['ant.0.network_key: must be the ANT+ network key as 16 hex digits (8 bytes)'])
  t.same(problems({ ant: [{ path: '/dev/ttyUSB0', network_key: '0123456789abcdeg' }] }), ['ant.0.network_key: must be the ANT+ network key as 16 hex digits (8 bytes)'])
  t.same(problems({ ant: [{ path: '/dev/ttyUSB0', network_key: 1234567890123456 }] }), ['ant.0.network_key: must be string'])
  t.same(problems({ ant: [{ network_key: '0123456789abcdef', baud: 9600 }] }), ["ant.0: must have required property 'path'", "ant.0: must NOT have additional properties 'baud'"])
})

t.test('chain: the box id sets the upstream topic prefix; it needs an upstream; another prefix is refused', async t => {
  const up = { url: 'mqtts://broker.example.org:8883' }
  t.equal(validateConfig({ chain: { box_id: 'gym-a' }, upstream: up }).upstream?.topic_prefix, 'hr-relay-chain/v1/boxes/gym-a')
  t.equal(validateConfig({ chain: { box_id: 'gym-a', topic_root: 'acme/hr/' }, upstream: up }).upstream?.topic_prefix, 'acme/hr/boxes/gym-a')
  t.equal(validateConfig({ chain: { box_id: 'gym-a' }, upstream: { ...up, topic_prefix: 'hr-relay-chain/v1/boxes/gym-a' } }).upstream?.topic_prefix, 'hr-relay-chain/v1/boxes/gym-a', 'the same prefix written out is accepted')
  t.equal(validateConfig({ upstream: up }).upstream?.topic_prefix, 'hr-relay/v1', 'no chain: the upstream default is unchanged')
  const problems = (input: unknown): string[] => { try { validateConfig(input); return [] } catch (err) { return (err as ConfigError).problems } }
  t.same(problems({ chain: { box_id: 'gym-a' } }), ['chain: needs upstream (the broker of the chain, docs/hub.md)'])
  t.same(problems({ chain: { box_id: 'gym-a' }, upstream: { ...up, topic_prefix: 'gyms/a' } }), ['upstream.topic_prefix: must be hr-relay-chain/v1/boxes/gym-a for chain.box_id gym-a, or left out'])
  t.same(problems({ chain: { box_id: 'gym/a' }, upstream: up }), ['chain.box_id: must match pattern "^[A-Za-z0-9._:-]{1,64}$"'])
  t.same(problems({ chain: {}, upstream: up }), ["chain: must have required property 'box_id'"])
})
