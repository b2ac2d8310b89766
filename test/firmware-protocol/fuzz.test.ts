// Property tests: no decoder throws anything but ProtocolError, parseLine never
// throws, and encode/decode round-trip.
import t from 'tap'
import fc from 'fast-check'
import { ProtocolError } from '../../firmware-protocol/errors.ts'
import {
  decodeHeartRateMeasurement, encodeHeartRateMeasurement, decodeBodySensorLocation, decodeBatteryLevel
} from '../../firmware-protocol/ble.ts'
import { decodeMidiHeartRate } from '../../firmware-protocol/midi.ts'
import { decodeDevicePayload, parseDeviceTopic, parseUserTopic } from '../../firmware-protocol/mqtt.ts'
import { parseLine, encodeFramedReading, type SerialFormat } from '../../firmware-protocol/serial.ts'

const RUNS = 2000

function onlyProtocolErrors (fn: () => unknown): boolean {
  try {
    fn()
    return true
  } catch (err) {
    return err instanceof ProtocolError
  }
}

t.test('byte decoders throw only ProtocolError for random bytes', async (t) => {
  const decoders: Record<string, (b: Uint8Array) => unknown> = {
    decodeHeartRateMeasurement,
    decodeBodySensorLocation,
    decodeBatteryLevel,
    decodeMidiHeartRate,
    decodeMidiHeartRateTensOnes: (b) => decodeMidiHeartRate(b, { order: 'tens-ones' }),
    decodeDevicePayload
  }
  for (const [name, decode] of Object.entries(decoders)) {
    t.doesNotThrow(() => fc.assert(fc.property(fc.uint8Array({ maxLength: 64 }), (bytes) => onlyProtocolErrors(() => decode(bytes))), { numRuns: RUNS }), name)
  }
})

t.test('heart rate measurement errors are only truncated or odd_rr_bytes', async (t) => {
  const codes = new Set<string>()
  fc.assert(fc.property(fc.uint8Array({ maxLength: 24 }), (bytes) => {
    try {
      decodeHeartRateMeasurement(bytes)
    } catch (err) {
      codes.add((err as ProtocolError).code)
    }
  }), { numRuns: RUNS })
  t.same([...codes].sort(), ['odd_rr_bytes', 'truncated'])
})

t.test('decodeDevicePayload throws only ProtocolError for random JSON and strings', async (t) => {
  t.doesNotThrow(() => fc.assert(fc.property(fc.jsonValue(), (v) => onlyProtocolErrors(() => decodeDevicePayload(JSON.stringify(v) ?? ''))), { numRuns: RUNS }))
  t.doesNotThrow(() => fc.assert(fc.property(fc.string({ unit: 'binary', maxLength: 200 }), (s) => onlyProtocolErrors(() => decodeDevicePayload(s))), { numRuns: RUNS }))
  const record = fc.record({
    measured_at: fc.oneof(fc.integer(), fc.double(), fc.string()),
    heart_rate: fc.oneof(fc.integer({ min: -10, max: 400 }), fc.double(), fc.constant(null)),
    rr_intervals_ms: fc.array(fc.oneof(fc.integer({ min: -1, max: 70000 }), fc.boolean()), { maxLength: 70 }),
    sensor_contact: fc.oneof(fc.boolean(), fc.integer())
  }, { requiredKeys: [] })
  t.doesNotThrow(() => fc.assert(fc.property(record, (v) => onlyProtocolErrors(() => decodeDevicePayload(JSON.stringify(v)))), { numRuns: RUNS }))
})

t.test('parseLine never throws and always returns a known kind', async (t) => {
  const kinds = new Set(['reading', 'identity', 'no_value', 'ignored', 'error'])
  for (const format of ['framed', 'text', 'hrmi'] as SerialFormat[]) {
    t.doesNotThrow(() => fc.assert(fc.property(fc.string({ unit: 'binary', maxLength: 300 }), (line) => kinds.has(parseLine(format, line).kind)), { numRuns: RUNS }), format)
    // Lines built from the protocol's own alphabet reach the deeper branches.
    const alphabet = fc.string({ unit: fc.constantFrom(...'$*,HRIDBSQG:=0123456789-.AF \r'), maxLength: 40 })
    t.doesNotThrow(() => fc.assert(fc.property(alphabet, (line) => kinds.has(parseLine(format, line).kind)), { numRuns: RUNS }), `${format} alphabet`)
  }
})

t.test('topic parsers never throw', async (t) => {
  t.doesNotThrow(() => fc.assert(fc.property(fc.string({ unit: 'binary', maxLength: 120 }), (s) => {
    parseDeviceTopic(s)
    parseUserTopic(s)
    parseDeviceTopic(`hr-relay/v1/devices/${s}/heart_rate`)
    return true
  }), { numRuns: RUNS }))
})

t.test('round trips', async (t) => {
  const measurement = fc.record({
    heart_rate: fc.integer({ min: 0, max: 0xffff }),
    sensor_contact: fc.constantFrom('detected' as const, 'not_detected' as const, 'unsupported' as const),
    energy_expended_kj: fc.option(fc.integer({ min: 0, max: 0xffff }), { nil: undefined }),
    rr_intervals: fc.array(fc.integer({ min: 0, max: 0xffff }), { maxLength: 9 })
  })
  t.doesNotThrow(() => fc.assert(fc.property(measurement, (m) => {
    const d = decodeHeartRateMeasurement(encodeHeartRateMeasurement(m))
    return d.heart_rate === m.heart_rate && d.sensor_contact === m.sensor_contact &&
      d.energy_expended_kj === m.energy_expended_kj && JSON.stringify(d.rr_intervals) === JSON.stringify(m.rr_intervals)
  }), { numRuns: RUNS }))
  const framed = fc.tuple(fc.integer({ min: 0, max: 300 }), fc.array(fc.integer({ min: 1, max: 65535 }), { maxLength: 8 }))
  t.doesNotThrow(() => fc.assert(fc.property(framed, ([bpm, rr]) => {
    const e = parseLine('framed', encodeFramedReading(bpm, rr))
    return e.kind === 'reading' && e.heart_rate === bpm && JSON.stringify(e.rr_intervals_ms ?? []) === JSON.stringify(rr)
  }), { numRuns: RUNS }))
})
