import t from 'tap'
import {
  decodeHeartRateMeasurement, encodeHeartRateMeasurement, rrMsToUnits, rrUnitsToMs, uuid16,
  HEART_RATE_SERVICE_UUID, HEART_RATE_MEASUREMENT_UUID, BODY_SENSOR_LOCATION_UUID, HEART_RATE_CONTROL_POINT_UUID,
  BATTERY_SERVICE_UUID, BATTERY_LEVEL_UUID, BODY_SENSOR_LOCATIONS, decodeBodySensorLocation, encodeBodySensorLocation,
  HR_CONTROL_POINT_RESET_ENERGY, decodeBatteryLevel, encodeBatteryLevel
} from '../../firmware-protocol/ble.ts'
import { hex, toHex, code } from '../helpers/bytes.ts'

t.test('UUIDs are full lowercase 128-bit strings', async (t) => {
  t.equal(HEART_RATE_SERVICE_UUID, '0000180d-0000-1000-8000-00805f9b34fb')
  t.equal(HEART_RATE_MEASUREMENT_UUID, '00002a37-0000-1000-8000-00805f9b34fb')
  t.equal(BODY_SENSOR_LOCATION_UUID, '00002a38-0000-1000-8000-00805f9b34fb')
  t.equal(HEART_RATE_CONTROL_POINT_UUID, '00002a39-0000-1000-8000-00805f9b34fb')
  t.equal(BATTERY_SERVICE_UUID, '0000180f-0000-1000-8000-00805f9b34fb')
  t.equal(BATTERY_LEVEL_UUID, '00002a19-0000-1000-8000-00805f9b34fb')
  t.equal(uuid16(0x180d), HEART_RATE_SERVICE_UUID)
  t.equal(uuid16(0x2A19), BATTERY_LEVEL_UUID)
  t.equal(uuid16(0xffff), '0000ffff-0000-1000-8000-00805f9b34fb')
  t.equal(code(() => uuid16(0x10000)), 'out_of_range')
  t.equal(code(() => uuid16(1.5)), 'out_of_range')
})

t.test('flags 0x16 (contact detected, RR present) with one RR value (Polar H7)', async (t) => {
  t.same(decodeHeartRateMeasurement(hex('16 4d 16 03')), {
    heart_rate: 77, value_format: 'uint8', sensor_contact: 'detected', rr_intervals: [790], rr_intervals_ms: [771]
  })
})

t.test('flags 0x16 with two RR values', async (t) => {
  t.same(decodeHeartRateMeasurement(hex('16 42 18 04 70 01')), {
    heart_rate: 66, value_format: 'uint8', sensor_contact: 'detected', rr_intervals: [1048, 368], rr_intervals_ms: [1023, 359]
  })
})

t.test('flags 0x16 with several RR values, oldest first', async (t) => {
  const m = decodeHeartRateMeasurement(hex('16 48 20 03 1a 03 10 03 00 04'))
  t.equal(m.heart_rate, 72)
  t.same(m.rr_intervals, [800, 794, 784, 1024])
  t.same(m.rr_intervals_ms, [781, 775, 766, 1000])
  t.equal(m.energy_expended_kj, undefined)
})

t.test('flags 0x10: UINT8 value, contact unsupported, RR present', async (t) => {
  t.same(decodeHeartRateMeasurement(hex('10 3b 53 04')), {
    heart_rate: 59, value_format: 'uint8', sensor_contact: 'unsupported', rr_intervals: [1107], rr_intervals_ms: [1081]
  })
})

t.test('flags 0x14: contact supported but not detected (Wahoo TICKR)', async (t) => {
  const m = decodeHeartRateMeasurement(hex('14 46 59 03 58 03'))
  t.equal(m.sensor_contact, 'not_detected')
  t.equal(m.heart_rate, 70)
  t.same(m.rr_intervals, [857, 856])
})

t.test('flags 0x11 and 0x01: UINT16 value, 300 bpm', async (t) => {
  t.same(decodeHeartRateMeasurement(hex('11 2c 01 c8 00')), {
    heart_rate: 300, value_format: 'uint16', sensor_contact: 'unsupported', rr_intervals: [200], rr_intervals_ms: [195]
  })
  t.same(decodeHeartRateMeasurement(hex('01 2c 01')).heart_rate, 300)
  t.same(decodeHeartRateMeasurement(hex('01 48 00')), {
    heart_rate: 72, value_format: 'uint16', sensor_contact: 'unsupported', rr_intervals: [], rr_intervals_ms: []
  })
})

t.test('0 bpm while booting (0x06) and when contact is lost (0x04)', async (t) => {
  t.same(decodeHeartRateMeasurement(hex('06 00')), {
    heart_rate: 0, value_format: 'uint8', sensor_contact: 'detected', rr_intervals: [], rr_intervals_ms: []
  })
  t.same(decodeHeartRateMeasurement(hex('04 00')), {
    heart_rate: 0, value_format: 'uint8', sensor_contact: 'not_detected', rr_intervals: [], rr_intervals_ms: []
  })
  // Contact status value 1 (bit 1 without bit 2) also means "not supported" (HRS §3.1.1.3).
  t.equal(decodeHeartRateMeasurement(hex('02 48')).sensor_contact, 'unsupported')
})

t.test('energy expended (flag 0x08)', async (t) => {
  t.same(decodeHeartRateMeasurement(hex('0e 48 34 12')), {
    heart_rate: 72, value_format: 'uint8', sensor_contact: 'detected', energy_expended_kj: 4660, rr_intervals: [], rr_intervals_ms: []
  })
  const m = decodeHeartRateMeasurement(hex('19 2c 01 ff ff 20 03'))
  t.equal(m.heart_rate, 300)
  t.equal(m.energy_expended_kj, 65535)
  t.same(m.rr_intervals, [800])
})

t.test('RR flag with no RR bytes gives an empty list; extra bytes without the flag are ignored', async (t) => {
  t.same(decodeHeartRateMeasurement(hex('16 48')).rr_intervals, [])
  const m = decodeHeartRateMeasurement(hex('06 48 aa bb'))
  t.equal(m.heart_rate, 72)
  t.same(m.rr_intervals, [])
})

t.test('truncated payloads', async (t) => {
  for (const bytes of ['', '00', '01', '01 2c', '08 48', '08 48 01', '09 2c 01 ff', '1f 2c']) {
    t.equal(code(() => decodeHeartRateMeasurement(hex(bytes))), 'truncated', `[${bytes}]`)
  }
})

t.test('odd RR byte counts', async (t) => {
  for (const bytes of ['16 48 20', '16 48 20 03 1a', '18 48 10 00 20', '11 2c 01 c8']) {
    t.equal(code(() => decodeHeartRateMeasurement(hex(bytes))), 'odd_rr_bytes', `[${bytes}]`)
  }
})

t.test('encode gives the byte layout of the spec', async (t) => {
  t.equal(toHex(encodeHeartRateMeasurement({ heart_rate: 72 })), '00 48')
  t.equal(toHex(encodeHeartRateMeasurement({ heart_rate: 66, sensor_contact: 'detected', rr_intervals: [1048, 368] })), '16 42 18 04 70 01')
  t.equal(toHex(encodeHeartRateMeasurement({ heart_rate: 0, sensor_contact: 'not_detected' })), '04 00')
  t.equal(toHex(encodeHeartRateMeasurement({ heart_rate: 300 })), '01 2c 01')
  t.equal(toHex(encodeHeartRateMeasurement({ heart_rate: 72, value_format: 'uint16' })), '01 48 00')
  t.equal(toHex(encodeHeartRateMeasurement({ heart_rate: 72, sensor_contact: 'detected', energy_expended_kj: 4660 })), '0e 48 34 12')
  t.equal(toHex(encodeHeartRateMeasurement({ heart_rate: 72, energy_expended_kj: 16, rr_intervals: [800] })), '18 48 10 00 20 03')
  t.equal(toHex(encodeHeartRateMeasurement({ heart_rate: 72, rr_intervals: [] })), '00 48')
})

t.test('encode rejects invalid values with out_of_range', async (t) => {
  t.equal(code(() => encodeHeartRateMeasurement({ heart_rate: -1 })), 'out_of_range')
  t.equal(code(() => encodeHeartRateMeasurement({ heart_rate: 72.5 })), 'out_of_range')
  t.equal(code(() => encodeHeartRateMeasurement({ heart_rate: 65536 })), 'out_of_range')
  t.equal(code(() => encodeHeartRateMeasurement({ heart_rate: 256, value_format: 'uint8' })), 'out_of_range')
  t.equal(code(() => encodeHeartRateMeasurement({ heart_rate: 72, energy_expended_kj: 70000 })), 'out_of_range')
  t.equal(code(() => encodeHeartRateMeasurement({ heart_rate: 72, rr_intervals: [800, -1] })), 'out_of_range')
  t.equal(code(() => encodeHeartRateMeasurement({ heart_rate: Number.NaN })), 'out_of_range')
  t.equal(code(() => encodeHeartRateMeasurement({ heart_rate: 72, sensor_contact: 'maybe' as 'detected' })), 'out_of_range')
})

t.test('round trips', async (t) => {
  const inputs = [
    { heart_rate: 0, sensor_contact: 'detected' as const },
    { heart_rate: 255, sensor_contact: 'not_detected' as const, rr_intervals: [1, 65535] },
    { heart_rate: 256, energy_expended_kj: 0, rr_intervals: [512, 600, 700, 800, 900, 1000, 1100, 1200] },
    { heart_rate: 65535, value_format: 'uint16' as const, sensor_contact: 'unsupported' as const, energy_expended_kj: 65535 }
  ]
  for (const input of inputs) {
    const decoded = decodeHeartRateMeasurement(encodeHeartRateMeasurement(input))
    t.equal(decoded.heart_rate, input.heart_rate)
    t.equal(decoded.sensor_contact, input.sensor_contact ?? 'unsupported')
    t.equal(decoded.energy_expended_kj, input.energy_expended_kj)
    t.same(decoded.rr_intervals, input.rr_intervals ?? [])
    t.same(encodeHeartRateMeasurement(decoded), encodeHeartRateMeasurement(input))
  }
})

t.test('RR unit conversion', async (t) => {
  t.equal(rrUnitsToMs(1024), 1000)
  t.equal(rrUnitsToMs(790), 771)
  t.equal(rrMsToUnits(1000), 1024)
  t.equal(rrMsToUnits(781), 800)
  t.equal(rrMsToUnits(0), 0)
  t.equal(rrMsToUnits(63999), 65535)
  t.equal(code(() => rrMsToUnits(64000)), 'out_of_range')
  t.equal(code(() => rrMsToUnits(-5)), 'out_of_range')
  t.equal(code(() => rrMsToUnits(Number.NaN)), 'out_of_range')
})

t.test('body sensor location', async (t) => {
  t.same(BODY_SENSOR_LOCATIONS, ['Other', 'Chest', 'Wrist', 'Finger', 'Hand', 'Ear Lobe', 'Foot'])
  t.equal(decodeBodySensorLocation(hex('01')), 'Chest')
  t.equal(decodeBodySensorLocation(hex('05')), 'Ear Lobe')
  t.equal(decodeBodySensorLocation(hex('06')), 'Foot')
  t.equal(decodeBodySensorLocation(hex('07')), 'Unknown')
  t.equal(decodeBodySensorLocation(hex('ff')), 'Unknown')
  t.equal(code(() => decodeBodySensorLocation(hex(''))), 'truncated')
  t.equal(toHex(encodeBodySensorLocation('Chest')), '01')
  t.equal(toHex(encodeBodySensorLocation('ear lobe')), '05')
  t.equal(toHex(encodeBodySensorLocation(2)), '02')
  t.equal(code(() => encodeBodySensorLocation('Elbow')), 'out_of_range')
  t.equal(code(() => encodeBodySensorLocation(256)), 'out_of_range')
})

t.test('control point and battery level', async (t) => {
  t.equal(toHex(HR_CONTROL_POINT_RESET_ENERGY), '01')
  t.equal(decodeBatteryLevel(hex('64')), 100)
  t.equal(decodeBatteryLevel(hex('00')), 0)
  t.equal(decodeBatteryLevel(hex('57')), 87)
  t.equal(code(() => decodeBatteryLevel(hex('65'))), 'out_of_range')
  t.equal(code(() => decodeBatteryLevel(hex(''))), 'truncated')
  t.equal(toHex(encodeBatteryLevel(87)), '57')
  t.equal(code(() => encodeBatteryLevel(101)), 'out_of_range')
})
