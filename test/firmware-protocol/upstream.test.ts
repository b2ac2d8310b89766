// The upstream wire format both ways: what a box writes (relay/upstream.ts) is what a hub decodes.
import t from 'tap'
import { chainBoxPrefix, chainFilters, decodeChainMessage, erasurePayload, erasureTopic, upstreamPayload, upstreamTopic } from '../../firmware-protocol/upstream.ts'

const ROOT = 'acme/hr/v1'
const PREFIX = chainBoxPrefix(ROOT, 'gym-7')
const PID = '0b9f6a3e-2c1d-4e5f-8a7b-9c0d1e2f3a4b'
const enc = (s: string): Buffer => Buffer.from(s, 'utf8')

t.test('a reading round-trips: box topic and payload, hub decode', async t => {
  t.equal(PREFIX, 'acme/hr/v1/boxes/gym-7')
  const topic = upstreamTopic(PREFIX + '/', PID)
  t.equal(topic, `acme/hr/v1/boxes/gym-7/users/${PID}/heart_rate`)
  const payload = upstreamPayload({ measured_at: 1_800_000_000_123, heart_rate: 142, source: 'ant', device_id: 'ant:12345' })
  t.equal(payload, '{"measured_at":1800000000123,"data":{"heart_rate":142},"source":"ant","device_id":"ant:12345"}')
  t.same(decodeChainMessage(ROOT, topic, enc(payload)), { kind: 'reading', box_id: 'gym-7', profile_id: PID, reading: { measured_at: 1_800_000_000_123, heart_rate: 142, source: 'ant', device_id: 'ant:12345' } })
  t.same(decodeChainMessage(ROOT + '/', topic, enc(upstreamPayload({ measured_at: 1_800_000_000_000.7, heart_rate: 60, source: 'ble' }))),
    { kind: 'reading', box_id: 'gym-7', profile_id: PID, reading: { measured_at: 1_800_000_000_000, heart_rate: 60, source: 'ble' } }, 'a fraction of a ms is truncated, as the box stores it')
})

t.test('an erasure notice round-trips', async t => {
  const topic = erasureTopic(PREFIX, PID)
  t.equal(topic, `acme/hr/v1/boxes/gym-7/users/${PID}/erased`)
  t.same(decodeChainMessage(ROOT, topic, enc(erasurePayload(PID, 1_800_000_000_000))), { kind: 'erasure', box_id: 'gym-7', profile_id: PID, erased_at: 1_800_000_000_000 })
})

t.test('the hub subscribes to both kinds under the root', async t => {
  t.same(chainFilters('acme/hr/v1/'), ['acme/hr/v1/boxes/+/users/+/heart_rate', 'acme/hr/v1/boxes/+/users/+/erased'])
})

t.test('what is refused, and why', async t => {
  const ok = '{"measured_at":1800000000000,"data":{"heart_rate":70},"source":"ble"}'
  const cases: Array<[string, string, string]> = [
    ['other/boxes/g/users/p/heart_rate', ok, 'topic outside the chain root'],
    [`${ROOT}/boxes/g/people/p/heart_rate`, ok, 'topic is not <box_id>/users/<profile_id>/<kind>'],
    [`${ROOT}/boxes/g/users/p/x/heart_rate`, ok, 'topic is not <box_id>/users/<profile_id>/<kind>'],
    [`${ROOT}/boxes/${'b'.repeat(65)}/users/p/heart_rate`, ok, 'box id is not 1 to 64 of A-Z a-z 0-9 . _ : -'],
    [`${ROOT}/boxes/g/users/p q/heart_rate`, ok, 'profile id is not 1 to 64 of A-Z a-z 0-9 . _ : -'],
    [`${ROOT}/boxes/g/users/p/battery`, ok, 'unknown message kind battery'],
    [`${ROOT}/boxes/g/users/p/heart_rate`, '{"measured_at":', 'payload is not JSON'],
    [`${ROOT}/boxes/g/users/p/heart_rate`, '[1,2]', 'payload is not a JSON object'],
    [`${ROOT}/boxes/g/users/p/heart_rate`, '{"measured_at":"x","data":{"heart_rate":70},"source":"ble"}', '/measured_at must be a number (Unix ms)'],
    [`${ROOT}/boxes/g/users/p/heart_rate`, '{"measured_at":1800000000000,"data":{"heart_rate":70.5},"source":"ble"}', '/data/heart_rate must be an integer at most 300'],
    [`${ROOT}/boxes/g/users/p/heart_rate`, '{"measured_at":1800000000000,"data":{"heart_rate":0},"source":"ble"}', '/data/heart_rate must be above 0'],
    [`${ROOT}/boxes/g/users/p/heart_rate`, '{"measured_at":1800000000000,"heart_rate":70,"source":"ble"}', '/data/heart_rate must be an integer at most 300'],
    [`${ROOT}/boxes/g/users/p/heart_rate`, '{"measured_at":1800000000000,"data":{"heart_rate":70}}', 'source must be a string of 1 to 32 characters'],
    [`${ROOT}/boxes/g/users/p/heart_rate`, '{"measured_at":1800000000000,"data":{"heart_rate":70},"source":"ble","device_id":7}', 'device_id must be a string of at most 64 characters'],
    [`${ROOT}/boxes/g/users/p/erased`, '{"profile_id":"q","erased_at":1}', 'erasure profile_id differs from the topic'],
    [`${ROOT}/boxes/g/users/p/erased`, '{"profile_id":"p","erased_at":-1}', 'erased_at is not Unix ms']
  ]
  for (const [topic, payload, error] of cases) t.same(decodeChainMessage(ROOT, topic, enc(payload)), { error }, `${topic} ${payload}`)
})
