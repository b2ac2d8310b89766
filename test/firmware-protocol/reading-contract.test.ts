// The reading contract: its numbers, the JSON Schema file and both documented tables
// agree, and each codec applies it (BLE, serial; MQTT in mqtt.test.ts).
import t from 'tap'
import { readFileSync } from 'node:fs'
import {
  BATTERY_PERCENT, CONTRACT_TABLE, ENERGY_KJ, HEART_RATE, MEASURED_AT, RR_INTERVAL_MS, RR_MAX_COUNT, checkReading, measuredAtWindow
} from '../../firmware-protocol/reading-contract.ts'
import { decodeHeartRateMeasurement, measurementReading } from '../../firmware-protocol/ble.ts'
import { checksum, encodeFramedReading, parseLine } from '../../firmware-protocol/serial.ts'

const read = (rel: string): string => readFileSync(new URL(rel, import.meta.url), 'utf8')

t.test('the device JSON Schema file carries the contract\'s numbers', async t => {
  const p = JSON.parse(read('../../firmware-protocol/schemas/device-heart-rate.schema.json')).properties
  t.same([p.measured_at.minimum, p.measured_at.maximum], [MEASURED_AT.min, MEASURED_AT.max])
  t.same([p.heart_rate.minimum, p.heart_rate.maximum], [HEART_RATE.min, HEART_RATE.max])
  t.same([p.rr_intervals_ms.maxItems, p.rr_intervals_ms.items.minimum, p.rr_intervals_ms.items.maximum], [RR_MAX_COUNT, RR_INTERVAL_MS.min, RR_INTERVAL_MS.max])
  t.same([p.energy_expended_kj.minimum, p.energy_expended_kj.maximum], [ENERGY_KJ.min, ENERGY_KJ.max])
  t.same([p.battery_percent.minimum, p.battery_percent.maximum], [BATTERY_PERCENT.min, BATTERY_PERCENT.max])
})

t.test('docs/api.md and firmware-protocol/README.md show the contract table row for row', async t => {
  for (const file of ['../../docs/api.md', '../../firmware-protocol/README.md']) {
    const text = read(file)
    for (const [field, limit] of CONTRACT_TABLE) t.ok(text.includes(`| \`${field}\` | ${limit} |`), `${file}: ${field}`)
  }
})

t.test('checkReading and the measured_at window', async t => {
  const now = 1_780_000_000_000
  const w = measuredAtWindow({ now, rawRetentionDays: 35 })
  t.same(w, { min: now - 35 * 86_400_000, max: now + 30_000 })
  t.same(measuredAtWindow({ now, rawRetentionDays: 35, maxClockSkewMs: 0 }).max, now)
  t.equal(checkReading({ measured_at: now, heart_rate: 72, rr_intervals_ms: Array(64).fill(1) }, w), undefined)
  t.equal(checkReading({ measured_at: now, heart_rate: -5 }, w), undefined, 'negative bpm: accepted, not stored')
  t.same(checkReading({ measured_at: w.max + 1, heart_rate: 72 }, w), { path: '/measured_at', message: `must be between ${w.min} and ${w.max}` })
  t.same(checkReading({ measured_at: now, heart_rate: 72, rr_intervals_ms: Array(65).fill(800) }), { path: '/rr_intervals_ms', message: 'must have at most 64 items' })
  t.same(checkReading({ measured_at: now, heart_rate: 72, rr_intervals_ms: [800, 0] }), { path: '/rr_intervals_ms/1', message: 'must be an integer 1..65535' })
  t.same(checkReading({ measured_at: now, heart_rate: 301 }), { path: '/heart_rate', message: 'must be an integer at most 300' })
  t.same(checkReading({ measured_at: now, heart_rate: 72, battery_percent: 101 }), { path: '/battery_percent', message: 'must be an integer 0..100' })
})

t.test('BLE: measurementReading applies the contract to a decoded notification', async t => {
  // flags 0x10 (RR present), 72 bpm, RR 0x0320 (800 units = 781 ms)
  t.same(measurementReading(decodeHeartRateMeasurement(Buffer.from('1048' + '2003', 'hex')), 1_780_000_000_000), { heart_rate: 72, rr_intervals_ms: [781] })
  // flags 0x01 (UINT16), 301 bpm
  t.throws(() => measurementReading(decodeHeartRateMeasurement(Buffer.from('012d01', 'hex')), 1_780_000_000_000), { code: 'out_of_range' })
  // an RR value of 0 units
  t.throws(() => measurementReading(decodeHeartRateMeasurement(Buffer.from('10480000', 'hex')), 1_780_000_000_000), { code: 'out_of_range' })
  // 65 RR values (fits a 512-byte ATT MTU)
  t.throws(() => measurementReading(decodeHeartRateMeasurement(Buffer.from('1048' + '2003'.repeat(65), 'hex')), 1_780_000_000_000), { code: 'out_of_range' })
  t.equal(measurementReading(decodeHeartRateMeasurement(Buffer.from('1048' + '2003'.repeat(64), 'hex')), 1_780_000_000_000).rr_intervals_ms?.length, 64)
})

t.test('serial: a framed reading has at most 64 RR intervals', async t => {
  const body64 = ['HR', '72', ...Array(64).fill('1')].join(',')
  const body65 = ['HR', '72', ...Array(65).fill('1')].join(',')
  t.same(parseLine('framed', `$${body64}*${checksum(body64)}`), { kind: 'reading', heart_rate: 72, rr_intervals_ms: Array(64).fill(1) })
  t.same(parseLine('framed', `$${body65}*${checksum(body65)}`), { kind: 'error', reason: 'out_of_range' })
  t.throws(() => encodeFramedReading(72, Array(65).fill(1)), { code: 'out_of_range' })
})
