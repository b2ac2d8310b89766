// The internal error codes: one table per layer (firmware-protocol, api,
// relay, device-sim), the README's "Internal error codes" table equal to them,
// and every error class carrying the code of its table entry, with the
// message built from the entry's template.
import t from 'tap'
import { Writable } from 'node:stream'
import { readFile } from 'node:fs/promises'
import pino from 'pino'
import { PROTOCOL_ERROR_CODES, ProtocolError, errorMessage, type ErrorCodeDef } from '../firmware-protocol/errors.ts'
import { API_ERROR_CODES } from '../api/error-codes.ts'
import { API_ERRORS, type ApiErrorName } from '../api/errors.ts'
import { RELAY_ERROR_CODES } from '../relay/error-codes.ts'
import { SIM_ERROR_CODES, SimError } from '../device-sim/errors.ts'
import { DeviceExistsError, InvalidAntDeviceIdError, InvalidDeviceIdError } from '../api/store/devices.ts'
import { UserExistsError } from '../api/store/users.ts'
import { MAX_WIDGETS_PER_USER, TooManyWidgetsError } from '../api/store/widgets.ts'
import { DataDirError, StoreLockedError, StoreOpenError } from '../api/store/db.ts'
import { InvalidRedirectUriError } from '../api/store/clients.ts'
import { PipelineStoppedError } from '../api/pipeline/ingest.ts'
import { RawDecodeError, decodeRaw } from '../api/pipeline/codec.ts'
import { ConfigError } from '../relay/config.ts'
import { MqttRefusal } from '../relay/broker/auth.ts'
import { MalformedLengthError, PacketTooLargeError } from '../relay/broker/limits.ts'
import { BleError } from '../relay/sources/ble/errors.ts'
import { CliError } from '../relay/cli-admin.ts'
import { ListenError } from '../relay/listen-error.ts'
import { DependencyInternalsError } from '../relay/dependency-internals.ts'
import { AdminHttpError } from '../device-sim/admin-client.ts'

const LAYERS: Array<[string, Record<string, ErrorCodeDef>]> = [
  ['firmware-protocol', PROTOCOL_ERROR_CODES],
  ['api', API_ERROR_CODES],
  ['relay', RELAY_ERROR_CODES],
  ['device-sim', SIM_ERROR_CODES]
]
const ALL = new Map(LAYERS.flatMap(([layer, table]) => Object.entries(table).map(([code, def]) => [code, { layer, ...def }])))

function apiAnswer (name: string | undefined): string {
  if (name === undefined) return '—'
  const a = API_ERRORS[name as ApiErrorName]
  return `${a.code} ${a.message} (${a.status})`
}

t.test('the table of docs/architecture.md lists exactly the codes of the layer tables', async t => {
  const readme = await readFile(new URL('../docs/architecture.md', import.meta.url), 'utf8')
  const start = readme.indexOf('\n## Internal error codes\n')
  t.ok(start > 0, 'docs/architecture.md has an "Internal error codes" section')
  const section = readme.slice(start + 1, readme.indexOf('\n#', start + 2))
  const lines = section.split('\n').filter(l => l.startsWith('| `'))
  const rows = lines.map(l => /^\| `([A-Za-z_]+)` \| ([a-z-]+) \| (\w+) \| `(.+)` \| (.+) \|$/.exec(l)).map(m => m === null ? 'unparsed row' : `${m[1]} | ${m[2]} | ${m[3]} | ${m[4]} | ${m[5]}`)
  t.notOk(rows.includes('unparsed row'), 'every row has the form | `code` | layer | class | `message` | API answer |')
  const table = [...ALL].map(([code, d]) => `${code} | ${d.layer} | ${d.class} | ${d.message.replace(/\n/g, ' ')} | ${apiAnswer(d.api)}`)
  t.same([...rows].sort(), [...table].sort(), 'same (code, layer, class, message, API answer) rows')
  t.equal(new Set(rows).size, rows.length, 'no row twice')
})

t.test('a code belongs to one layer, and an API answer names an entry of api/errors.ts', async t => {
  const count = LAYERS.reduce((n, [, table]) => n + Object.keys(table).length, 0)
  t.equal(ALL.size, count, 'no code in two layers')
  for (const [code, d] of ALL) if (d.api !== undefined) t.ok(d.api in API_ERRORS, `${code}: ${d.api}`)
})

t.test('every error class carries its code, and its message is the table template filled in', async t => {
  const cases: Array<[Error & { code: string }, string, Record<string, string | number>?]> = [
    [new DeviceExistsError('aa:bb'), 'HR_DEVICE_EXISTS', { id: 'aa:bb' }],
    [new InvalidDeviceIdError('a b'), 'HR_DEVICE_ID_INVALID', { id: '"a b"' }],
    [new InvalidAntDeviceIdError('ant:0'), 'HR_ANT_DEVICE_ID_INVALID', { id: '"ant:0"' }],
    [new UserExistsError('ann'), 'HR_USER_EXISTS', { username: 'ann' }],
    [new TooManyWidgetsError(), 'HR_TOO_MANY_WIDGETS', { max: MAX_WIDGETS_PER_USER }],
    [new InvalidRedirectUriError('x', 'not an absolute URL'), 'HR_REDIRECT_URI_INVALID', { uri: '"x"', why: 'not an absolute URL' }],
    [new StoreLockedError('/d'), 'HR_STORE_LOCKED', { dir: '/d' }],
    [new StoreOpenError('/d', { cause: new Error('bad') }), 'HR_STORE_OPEN', { dir: '/d', why: 'bad' }],
    [new DataDirError('/d', 'read-only file system', '/d/x'), 'HR_DATA_DIR', { dir: '/d', problem: 'read-only file system', path: '/d/x' }],
    [new PipelineStoppedError(), 'HR_PIPELINE_STOPPED'],
    [new RawDecodeError('truncated RR field'), 'HR_RAW_DECODE', { detail: 'truncated RR field' }],
    [new ConfigError('c.json', ['a', 'b']), 'HR_CONFIG_INVALID', { source: 'c.json', problems: '\n  - a\n  - b' }],
    [new PacketTooLargeError(300, 256), 'HR_MQTT_PACKET_TOO_LARGE', { size: 300, limit: 256 }],
    [new MalformedLengthError(), 'HR_MQTT_MALFORMED_LENGTH'],
    [new ListenError('MQTT', '127.0.0.1', 1883, { cause: Object.assign(new Error('x'), { code: 'EADDRINUSE' }) }), 'HR_LISTEN', { what: 'MQTT', port: 1883, host: '127.0.0.1', why: 'the port is already in use by another process [EADDRINUSE]' }],
    [new MqttRefusal('only devices may publish', 'mqtt_unauthorized_publish'), 'HR_MQTT_NOT_AUTHORIZED'],
    [new MqttRefusal('status must be online or offline', 'mqtt_bad_status'), 'HR_MQTT_BAD_STATUS'],
    [new MqttRefusal('a reading cannot be a last will', 'mqtt_will_reading'), 'HR_MQTT_WILL_READING'],
    [new MqttRefusal('bad payload: x', 'mqtt_bad_json'), 'HR_MQTT_BAD_PAYLOAD'],
    [new MqttRefusal('ingest failed', 'ingest_error'), 'HR_MQTT_INGEST_FAILED'],
    [new MqttRefusal('reading not stored: out_of_range', 'out_of_range'), 'HR_MQTT_NOT_STORED'],
    [new CliError('--name is required', 2), 'HR_CLI_USAGE'],
    [new CliError('POST /x failed: HTTP 409 conflict', 1, { error_code: 9409 }), 'HR_CLI_ADMIN_REFUSED'],
    [new CliError('no running hr-relay found'), 'HR_CLI_FAILED'],
    [new BleError('timeout'), 'timeout'],
    [new ProtocolError('bad_json'), 'bad_json'],
    [new SimError('bad_option', '--rate'), 'bad_option', { detail: '--rate' }],
    [new AdminHttpError(409, 'x', 'create user ann'), 'admin_failed', { detail: 'create user ann: HTTP 409 x' }]
  ]
  const dep = new DependencyInternalsError('aedes', 'Aedes#clients')
  t.equal(dep.code, 'HR_DEPENDENCY_INTERNALS')
  t.match(dep.message, /^aedes \S+ no longer has Aedes#clients, which hr-relay relies on; /)
  for (const [err, code, params] of cases) {
    t.equal(err.code, code, `${err.name}: ${code}`)
    const def = ALL.get(code)
    t.equal(def?.class, err.constructor.name, `${code} is ${err.constructor.name}'s in the table`)
    if (params !== undefined || !['MqttRefusal', 'CliError'].includes(err.name)) t.equal(err.message, errorMessage(def?.message ?? '', params), `${code}: message from the template`)
  }
  t.throws(() => decodeRaw(new Uint8Array([0])), { name: 'RawDecodeError', code: 'HR_RAW_DECODE', message: 'a stored raw reading does not decode: raw reading too short: 1 bytes' })
})

t.test('a log line for such an error carries its code', async t => {
  const lines: Array<{ err?: { code?: string, message?: string } }> = []
  const log = pino(new Writable({ write (chunk: Buffer, _enc, cb) { lines.push(JSON.parse(chunk.toString('utf8'))); cb() } }))
  log.error({ err: new ConfigError('c.json', ['x']) }, 'start failed')
  log.warn({ err: new MqttRefusal('ingest failed', 'ingest_error') }, 'refused')
  t.same(lines.map(l => l.err?.code), ['HR_CONFIG_INVALID', 'HR_MQTT_INGEST_FAILED'])
})
