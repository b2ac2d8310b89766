import t from 'tap'
import { readFileSync } from 'node:fs'
import { Ajv } from 'ajv'
import {
  TOPIC_PREFIX, deviceHeartRateTopic, deviceStatusTopic, userHeartRateTopic, parseDeviceTopic, parseUserTopic,
  isValidDeviceId, decodeDevicePayload, encodeDevicePayload, encodeUserReading, STATUS_ONLINE, STATUS_OFFLINE,
  MAX_DEVICE_PAYLOAD_BYTES, filterMatchesUserHeartRate
} from '../../firmware-protocol/mqtt.ts'
import { ProtocolError } from '../../firmware-protocol/errors.ts'

function error (fn: () => unknown): { code: string, message: string } {
  try {
    fn()
  } catch (err) {
    if (err instanceof ProtocolError) return { code: err.code, message: err.message }
    throw err
  }
  return { code: 'no error', message: '' }
}

t.test('topic builders', async (t) => {
  t.equal(TOPIC_PREFIX, 'hr-relay/v1')
  t.equal(deviceHeartRateTopic('esp32-c8f09e1a2b3c'), 'hr-relay/v1/devices/esp32-c8f09e1a2b3c/heart_rate')
  t.equal(deviceStatusTopic('C8:2F:9A:11:22:33'), 'hr-relay/v1/devices/C8:2F:9A:11:22:33/status')
  t.equal(userHeartRateTopic('3f2b8c1e-1d2a-4c11-9e0b-6a7d5e4c3b2a'), 'hr-relay/v1/users/3f2b8c1e-1d2a-4c11-9e0b-6a7d5e4c3b2a/heart_rate')
  for (const bad of ['', 'a/b', '+', '#', 'a+b', 'dev#1', 'nul\u0000', 'x'.repeat(65), 'sp ace', 'caf\u00e9']) {
    t.equal(error(() => deviceHeartRateTopic(bad)).code, 'bad_topic', JSON.stringify(bad))
    t.equal(isValidDeviceId(bad), false)
  }
  t.equal(isValidDeviceId('x'.repeat(64)), true)
  t.equal(error(() => userHeartRateTopic('a:b')).code, 'bad_topic')
  t.equal(STATUS_ONLINE, 'online')
  t.equal(STATUS_OFFLINE, 'offline')
})

t.test('parseDeviceTopic and parseUserTopic', async (t) => {
  t.same(parseDeviceTopic('hr-relay/v1/devices/hr-01/heart_rate'), { device_id: 'hr-01', kind: 'heart_rate' })
  t.same(parseDeviceTopic('hr-relay/v1/devices/C8:2F:9A:11:22:33/status'), { device_id: 'C8:2F:9A:11:22:33', kind: 'status' })
  for (const bad of [
    '', 'hr-relay/v1/devices//heart_rate', 'hr-relay/v1/devices/+/heart_rate', 'hr-relay/v1/devices/#',
    'hr-relay/v1/devices/a/b/heart_rate', 'hr-relay/v1/devices/hr-01/battery', 'hr-relay/v1/devices/hr-01/heart_rate/',
    'hr-relay/v2/devices/hr-01/heart_rate', '/hr-relay/v1/devices/hr-01/heart_rate', 'hr-relay/v1/devices/hr\u000001/heart_rate',
    `hr-relay/v1/devices/${'x'.repeat(65)}/heart_rate`, 'hr-relay/v1/users/p1/heart_rate', 'hr-relay/v1/devices/hr-01'
  ]) t.equal(parseDeviceTopic(bad), null, JSON.stringify(bad))
  t.equal(parseDeviceTopic(42 as unknown as string), null)
  t.same(parseUserTopic('hr-relay/v1/users/p_1/heart_rate'), { profile_id: 'p_1' })
  t.equal(parseUserTopic('hr-relay/v1/users/+/heart_rate'), null)
  t.equal(parseUserTopic('hr-relay/v1/users/p1/status'), null)
  t.equal(parseUserTopic('hr-relay/v1/devices/p1/heart_rate'), null)
})

t.test('decodeDevicePayload accepts bytes and strings', async (t) => {
  const full = '{"measured_at":1700000000000,"heart_rate":72,"rr_intervals_ms":[833,812],"energy_expended_kj":12,"sensor_contact":true,"battery_percent":87}'
  const expected = { measured_at: 1700000000000, heart_rate: 72, rr_intervals_ms: [833, 812], energy_expended_kj: 12, sensor_contact: true, battery_percent: 87 }
  t.same(decodeDevicePayload(full), expected)
  t.same(decodeDevicePayload(Buffer.from(full)), expected)
  t.same(decodeDevicePayload(new TextEncoder().encode('{"measured_at":1700000000000,"heart_rate":0}')), { measured_at: 1700000000000, heart_rate: 0 })
  t.equal(encodeDevicePayload(expected), full)
})

t.test('decodeDevicePayload errors name the offending path', async (t) => {
  const at = 1700000000000
  const cases: Array<[string | Uint8Array, string, string]> = [
    ['{"measured_at":', 'bad_json', 'not JSON'],
    ['', 'bad_json', 'not JSON'],
    [Uint8Array.of(0x7b, 0xff, 0x7d), 'bad_json', 'UTF-8'],
    ['[]', 'schema', '/: must be an object'],
    ['null', 'schema', '/: must be an object'],
    ['72', 'schema', '/: must be an object'],
    ['{"heart_rate":72}', 'schema', '/measured_at: is required'],
    [`{"measured_at":${at}}`, 'schema', '/heart_rate: is required'],
    [`{"measured_at":${at},"heart_rate":"72"}`, 'schema', '/heart_rate: must be an integer'],
    [`{"measured_at":${at},"heart_rate":72.5}`, 'schema', '/heart_rate: must be an integer'],
    [`{"measured_at":${at},"heart_rate":301}`, 'schema', '/heart_rate: must be between 0 and 300'],
    [`{"measured_at":${at},"heart_rate":-1}`, 'schema', '/heart_rate: must be between 0 and 300'],
    ['{"measured_at":1700000000,"heart_rate":72}', 'schema', '/measured_at: must be between'],
    [`{"measured_at":${at},"heart_rate":72,"rr_intervals_ms":[800,"x"]}`, 'schema', '/rr_intervals_ms/1: must be an integer'],
    [`{"measured_at":${at},"heart_rate":72,"rr_intervals_ms":[800,0]}`, 'schema', '/rr_intervals_ms/1: must be between 1 and 65535'],
    [`{"measured_at":${at},"heart_rate":72,"rr_intervals_ms":800}`, 'schema', '/rr_intervals_ms: must be an array'],
    [`{"measured_at":${at},"heart_rate":72,"rr_intervals_ms":[${Array(65).fill(800).join(',')}]}`, 'schema', '/rr_intervals_ms: must have at most 64 items'],
    [`{"measured_at":${at},"heart_rate":72,"sensor_contact":1}`, 'schema', '/sensor_contact: must be a boolean'],
    [`{"measured_at":${at},"heart_rate":72,"battery_percent":101}`, 'schema', '/battery_percent: must be between 0 and 100'],
    [`{"measured_at":${at},"heart_rate":72,"energy_expended_kj":-1}`, 'schema', '/energy_expended_kj: must be between 0 and 65535'],
    [`{"measured_at":${at},"heart_rate":72,"bpm":72}`, 'schema', '/bpm: is not an allowed property'],
    [`{"measured_at":${at},"heart_rate":72,"a/b":1}`, 'schema', '/a~1b: is not an allowed property'],
    [`{"__proto__":{"x":1},"measured_at":${at},"heart_rate":72}`, 'schema', '/__proto__: is not an allowed property'],
    [`{"measured_at":${at},"heart_rate":72,"pad":"${'x'.repeat(MAX_DEVICE_PAYLOAD_BYTES)}"}`, 'too_long', 'above 4096']
  ]
  for (const [payload, code, message] of cases) {
    const e = error(() => decodeDevicePayload(payload))
    t.equal(e.code, code, String(payload).slice(0, 80))
    t.match(e.message, message, String(payload).slice(0, 80))
  }
  t.equal(error(() => decodeDevicePayload(Buffer.alloc(MAX_DEVICE_PAYLOAD_BYTES + 1, 0x20))).code, 'too_long')
  t.equal(error(() => encodeDevicePayload({ measured_at: at, heart_rate: 400 })).code, 'schema')
})

t.test('encodeUserReading gives the spec reading shape', async (t) => {
  t.equal(encodeUserReading({ measured_at: 1625310655000, heart_rate: 40 }), '{"measured_at":1625310655000,"data":{"heart_rate":40}}')
})

t.test('the JSON Schema file (ajv) and decodeDevicePayload agree', async (t) => {
  const schema = JSON.parse(readFileSync(new URL('../../firmware-protocol/schemas/device-heart-rate.schema.json', import.meta.url), 'utf8'))
  const ajv = new Ajv({ allErrors: true, strict: true })
  const validate = ajv.compile(schema)
  const at = 1700000000000
  const samples: unknown[] = [
    { measured_at: at, heart_rate: 72 },
    { measured_at: at, heart_rate: 0, sensor_contact: false },
    { measured_at: at, heart_rate: 300, rr_intervals_ms: [1, 65535], energy_expended_kj: 65535, battery_percent: 100 },
    { measured_at: 946684800000, heart_rate: 72, rr_intervals_ms: [] },
    { measured_at: 9999999999999, heart_rate: 72, rr_intervals_ms: Array(64).fill(800) },
    { measured_at: at, heart_rate: 72, energy_expended_kj: 0, battery_percent: 0 },
    { measured_at: at, heart_rate: 72.0 },
    // invalid
    { measured_at: at },
    { heart_rate: 72 },
    { measured_at: at, heart_rate: 301 },
    { measured_at: at, heart_rate: -1 },
    { measured_at: at, heart_rate: 72.5 },
    { measured_at: at, heart_rate: '72' },
    { measured_at: 946684799999, heart_rate: 72 },
    { measured_at: 10000000000000, heart_rate: 72 },
    { measured_at: at, heart_rate: 72, rr_intervals_ms: [0] },
    { measured_at: at, heart_rate: 72, rr_intervals_ms: [65536] },
    { measured_at: at, heart_rate: 72, rr_intervals_ms: Array(65).fill(800) },
    { measured_at: at, heart_rate: 72, rr_intervals_ms: '800' },
    { measured_at: at, heart_rate: 72, energy_expended_kj: 65536 },
    { measured_at: at, heart_rate: 72, sensor_contact: 'yes' },
    { measured_at: at, heart_rate: 72, battery_percent: 100.5 },
    { measured_at: at, heart_rate: 72, device_id: 'hr-01' },
    { measured_at: at, heart_rate: null },
    [],
    null,
    'text',
    72
  ]
  let valid = 0
  for (const sample of samples) {
    const ajvSays = validate(sample)
    const e = error(() => decodeDevicePayload(JSON.stringify(sample)))
    const codecSays = e.code === 'no error'
    if (ajvSays) valid++
    t.equal(codecSays, ajvSays, `agree on ${JSON.stringify(sample).slice(0, 60)}`)
    if (!ajvSays && !codecSays) {
      // Both name the same first offending location.
      const paths = (validate.errors ?? []).map((err) => {
        const missing = err.params as { missingProperty?: string, additionalProperty?: string }
        if (missing.missingProperty !== undefined) return `/${missing.missingProperty}`
        if (missing.additionalProperty !== undefined) return `/${missing.additionalProperty}`
        return err.instancePath === '' ? '/' : err.instancePath
      })
      const codecPath = e.message.split(':')[0] as string
      t.ok(paths.includes(codecPath), `ajv paths ${paths.join(',')} include ${codecPath}`)
    }
  }
  t.equal(valid, 7)
})

t.test('filterMatchesUserHeartRate: which MQTT topic filters match some member heart-rate topic', async t => {
  const yes = ['#', 'hr-relay/#', 'hr-relay/v1/#', 'hr-relay/v1/users/#', 'hr-relay/v1/users/+/heart_rate', 'hr-relay/v1/users/abc/heart_rate',
    'hr-relay/v1/users/abc/#', '+/+/+/+/+', '+/v1/users/+/heart_rate', 'hr-relay/v1/users/abc/heart_rate/#']
  const no = ['hr-relay', 'hr-relay/v1/users', 'hr-relay/v1/users/+', 'hr-relay/v1/users/+/heart_rate/x', 'hr-relay/v1/devices/+/heart_rate',
    'hr-relay/v2/users/+/heart_rate', '+/+/+/+', '+/+/+/+/+/+', 'hr-relay/v1/users//heart_rate', '$SYS/#', 'other/#']
  for (const f of yes) t.equal(filterMatchesUserHeartRate(f), true, f)
  for (const f of no) t.equal(filterMatchesUserHeartRate(f), false, f)
})
