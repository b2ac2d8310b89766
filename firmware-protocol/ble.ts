// Bluetooth Heart Rate Service (HRS v1.0, adopted 2011-07-12) and Battery
// Service (BAS v1.0) codecs. Pure: bytes in, values out, ProtocolError on
// malformed input. Clause numbers refer to the HRS v1.0 specification unless
// marked GSS (GATT Specification Supplement, characteristic definitions) or
// BAS.
import { ProtocolError } from './errors.ts'
import { checkReading } from './reading-contract.ts'

const BASE_UUID_SUFFIX = '-0000-1000-8000-00805f9b34fb'

/**
 * Expand a 16-bit Bluetooth SIG UUID to the full lowercase 128-bit string
 * (Core v5.3 Vol 3 Part B §2.5.1: 0000xxxx-0000-1000-8000-00805F9B34FB).
 * node-ble matches UUIDs in this form only.
 */
export function uuid16 (short: number): string {
  if (!Number.isInteger(short) || short < 0 || short > 0xffff) {
    throw new ProtocolError('out_of_range', `16-bit UUID must be an integer 0..0xffff, got ${String(short)}`)
  }
  return `0000${short.toString(16).padStart(4, '0')}${BASE_UUID_SUFFIX}`
}

export const HEART_RATE_SERVICE_UUID = '0000180d-0000-1000-8000-00805f9b34fb'
export const HEART_RATE_MEASUREMENT_UUID = '00002a37-0000-1000-8000-00805f9b34fb'
export const BODY_SENSOR_LOCATION_UUID = '00002a38-0000-1000-8000-00805f9b34fb'
export const HEART_RATE_CONTROL_POINT_UUID = '00002a39-0000-1000-8000-00805f9b34fb'
export const BATTERY_SERVICE_UUID = '0000180f-0000-1000-8000-00805f9b34fb'
export const BATTERY_LEVEL_UUID = '00002a19-0000-1000-8000-00805f9b34fb'

/** Flag bits of the Heart Rate Measurement characteristic (HRS §3.1.1.1). */
export const HRM_FLAGS = {
  /** bit 0: Heart Rate Value Format, 1 = UINT16 (§3.1.1.2) */
  VALUE_UINT16: 0x01,
  /** bit 1: Sensor Contact Status, contact detected (§3.1.1.3) */
  CONTACT_DETECTED: 0x02,
  /** bit 2: Sensor Contact Status, feature supported (§3.1.1.3) */
  CONTACT_SUPPORTED: 0x04,
  /** bit 3: Energy Expended field present (§3.1.1.4) */
  ENERGY_EXPENDED: 0x08,
  /** bit 4: RR-Interval field present (§3.1.1.5) */
  RR_INTERVALS: 0x10
} as const

export type SensorContact = 'detected' | 'not_detected' | 'unsupported'

export interface HeartRateMeasurement {
  heart_rate: number
  value_format: 'uint8' | 'uint16'
  sensor_contact: SensorContact
  /** Accumulated energy since the last reset, kJ; 0xffff means "at least 65535" (§3.1.1.4). */
  energy_expended_kj?: number
  /** Raw RR intervals in 1/1024 s units, oldest first (§3.1.1.5). */
  rr_intervals: number[]
  /** The same intervals in milliseconds, rounded to the nearest integer. */
  rr_intervals_ms: number[]
}

export interface HeartRateMeasurementInput {
  heart_rate: number
  /** Default: 'uint8' when heart_rate <= 255, otherwise 'uint16'. */
  value_format?: 'uint8' | 'uint16'
  /** Default: 'unsupported' (both contact bits clear). */
  sensor_contact?: SensorContact
  energy_expended_kj?: number
  /** Raw 1/1024 s units, oldest first. An empty or absent list clears flag bit 4. */
  rr_intervals?: number[]
}

/** 1/1024 s units to milliseconds, rounded (§3.1.1.5: resolution 1/1024 second). */
export function rrUnitsToMs (units: number): number {
  return Math.round(units * 1000 / 1024)
}

/** Milliseconds to 1/1024 s units, rounded; throws 'out_of_range' outside 0..65535 units. */
export function rrMsToUnits (ms: number): number {
  const units = Math.round(ms * 1024 / 1000)
  if (!Number.isFinite(ms) || units < 0 || units > 0xffff) {
    throw new ProtocolError('out_of_range', `RR interval ${String(ms)} ms does not fit 0..65535 units of 1/1024 s`)
  }
  return units
}

function contactFromFlags (flags: number): SensorContact {
  // §3.1.1.3: bit 2 = feature supported, bit 1 = contact detected.
  // Values 0 and 1 both mean "not supported in the current connection".
  if ((flags & HRM_FLAGS.CONTACT_SUPPORTED) === 0) return 'unsupported'
  return (flags & HRM_FLAGS.CONTACT_DETECTED) !== 0 ? 'detected' : 'not_detected'
}

/**
 * Decode a Heart Rate Measurement notification (0x2A37).
 * Field order (§3.1.1): Flags, Heart Rate Measurement Value, Energy Expended
 * (if bit 3), RR-Interval values (if bit 4), all little-endian.
 * Throws ProtocolError 'truncated' or 'odd_rr_bytes'; nothing else.
 * Bytes after the value and energy fields when bit 4 is clear are ignored
 * (reserved for future use); bit 4 set with no RR bytes gives an empty list.
 */
export function decodeHeartRateMeasurement (bytes: Uint8Array): HeartRateMeasurement {
  if (!(bytes instanceof Uint8Array)) {
    throw new ProtocolError('truncated', 'Heart Rate Measurement must be a byte array')
  }
  const flags = bytes[0]
  if (flags === undefined) throw new ProtocolError('truncated', 'Heart Rate Measurement is empty (no Flags field)')
  let offset = 1
  const uint16 = (flags & HRM_FLAGS.VALUE_UINT16) !== 0
  // §3.1.1.2: UINT8 when bit 0 is 0, UINT16 (little-endian) when bit 0 is 1.
  const valueLength = uint16 ? 2 : 1
  if (bytes.length < offset + valueLength) {
    throw new ProtocolError('truncated', `Heart Rate Measurement value needs ${valueLength} byte(s) after the flags, got ${bytes.length - 1}`)
  }
  const heartRate = uint16 ? readU16(bytes, offset) : (bytes[offset] as number)
  offset += valueLength

  const result: HeartRateMeasurement = {
    heart_rate: heartRate,
    value_format: uint16 ? 'uint16' : 'uint8',
    sensor_contact: contactFromFlags(flags),
    rr_intervals: [],
    rr_intervals_ms: []
  }

  // §3.1.1.4: Energy Expended, UINT16 kJ, present when bit 3 is set.
  if ((flags & HRM_FLAGS.ENERGY_EXPENDED) !== 0) {
    if (bytes.length < offset + 2) {
      throw new ProtocolError('truncated', 'Energy Expended flag is set but the field is missing')
    }
    result.energy_expended_kj = readU16(bytes, offset)
    offset += 2
  }

  // §3.1.1.5: RR-Interval, one or more UINT16 in 1/1024 s, oldest first; the
  // count follows from the remaining length, so an odd remainder is malformed.
  if ((flags & HRM_FLAGS.RR_INTERVALS) !== 0) {
    const remaining = bytes.length - offset
    if (remaining % 2 !== 0) {
      throw new ProtocolError('odd_rr_bytes', `RR-Interval field has ${remaining} bytes; it must be a whole number of UINT16 values`)
    }
    for (; offset < bytes.length; offset += 2) {
      const units = readU16(bytes, offset)
      result.rr_intervals.push(units)
      result.rr_intervals_ms.push(rrUnitsToMs(units))
    }
  }
  return result
}

/** The reading fields a Heart Rate Measurement carries, in the reading contract's terms. */
export interface MeasurementReading {
  heart_rate: number
  rr_intervals_ms?: number[]
  energy_expended_kj?: number
  sensor_contact?: boolean
}

/**
 * The reading a decoded measurement gives, checked against the reading
 * contract (reading-contract.ts): throws 'out_of_range' when the strap sent a
 * value the relay would not store (a bpm above the contract's maximum, more RR
 * intervals than it allows, an RR interval of 0). `measured_at` is the
 * caller's, checked against the absolute bounds.
 */
export function measurementReading (m: HeartRateMeasurement, measuredAt: number): MeasurementReading {
  const out: MeasurementReading = { heart_rate: m.heart_rate }
  if (m.rr_intervals_ms.length > 0) out.rr_intervals_ms = m.rr_intervals_ms
  if (m.energy_expended_kj !== undefined) out.energy_expended_kj = m.energy_expended_kj
  if (m.sensor_contact !== 'unsupported') out.sensor_contact = m.sensor_contact === 'detected'
  const violation = checkReading({ measured_at: measuredAt, ...out })
  if (violation !== undefined) throw new ProtocolError('out_of_range', `${violation.path}: ${violation.message}`)
  return out
}

function assertUint (value: unknown, max: number, what: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > max) {
    throw new ProtocolError('out_of_range', `${what} must be an integer 0..${max}, got ${String(value)}`)
  }
  return value
}

/** Encode a Heart Rate Measurement notification; throws 'out_of_range' for invalid values. */
export function encodeHeartRateMeasurement (m: HeartRateMeasurementInput): Uint8Array {
  const heartRate = assertUint(m.heart_rate, 0xffff, 'heart_rate')
  const format = m.value_format ?? (heartRate <= 0xff ? 'uint8' : 'uint16')
  if (format !== 'uint8' && format !== 'uint16') {
    throw new ProtocolError('out_of_range', `value_format must be 'uint8' or 'uint16', got ${String(format)}`)
  }
  if (format === 'uint8' && heartRate > 0xff) {
    throw new ProtocolError('out_of_range', `heart_rate ${heartRate} does not fit UINT8`)
  }
  let flags = format === 'uint16' ? HRM_FLAGS.VALUE_UINT16 : 0
  const contact = m.sensor_contact ?? 'unsupported'
  if (contact === 'detected') flags |= HRM_FLAGS.CONTACT_SUPPORTED | HRM_FLAGS.CONTACT_DETECTED
  else if (contact === 'not_detected') flags |= HRM_FLAGS.CONTACT_SUPPORTED
  else if (contact !== 'unsupported') {
    throw new ProtocolError('out_of_range', `sensor_contact must be detected, not_detected or unsupported, got ${String(contact)}`)
  }
  const energy = m.energy_expended_kj === undefined ? undefined : assertUint(m.energy_expended_kj, 0xffff, 'energy_expended_kj')
  if (energy !== undefined) flags |= HRM_FLAGS.ENERGY_EXPENDED
  const rr = (m.rr_intervals ?? []).map((v, i) => assertUint(v, 0xffff, `rr_intervals[${i}]`))
  if (rr.length > 0) flags |= HRM_FLAGS.RR_INTERVALS

  const out = new Uint8Array(1 + (format === 'uint16' ? 2 : 1) + (energy === undefined ? 0 : 2) + rr.length * 2)
  out[0] = flags
  let offset = 1
  if (format === 'uint16') { writeU16(out, offset, heartRate); offset += 2 } else { out[offset] = heartRate; offset += 1 }
  if (energy !== undefined) { writeU16(out, offset, energy); offset += 2 }
  for (const units of rr) { writeU16(out, offset, units); offset += 2 }
  return out
}

/** Body Sensor Location values (HRS §3.2.1; GSS Body Sensor Location). 7..255 are reserved. */
export const BODY_SENSOR_LOCATIONS: readonly string[] = Object.freeze(['Other', 'Chest', 'Wrist', 'Finger', 'Hand', 'Ear Lobe', 'Foot'])

/** Decode Body Sensor Location (0x2A38): a name, 'Unknown' for reserved values; 'truncated' when empty. */
export function decodeBodySensorLocation (bytes: Uint8Array): string {
  const value = bytes instanceof Uint8Array ? bytes[0] : undefined
  if (value === undefined) throw new ProtocolError('truncated', 'Body Sensor Location is empty')
  return BODY_SENSOR_LOCATIONS[value] ?? 'Unknown'
}

/** Encode Body Sensor Location from a name (case-insensitive) or a number 0..255. */
export function encodeBodySensorLocation (location: string | number): Uint8Array {
  if (typeof location === 'number') return Uint8Array.of(assertUint(location, 0xff, 'body sensor location'))
  const index = BODY_SENSOR_LOCATIONS.findIndex((name) => name.toLowerCase() === String(location).toLowerCase())
  if (index < 0) throw new ProtocolError('out_of_range', `unknown body sensor location ${JSON.stringify(location)}`)
  return Uint8Array.of(index)
}

/**
 * Heart Rate Control Point (0x2A39) "Reset Energy Expended" (HRS §3.3.1, value
 * 0x01). Write it with a write-with-response; a server that does not support
 * it answers ATT error 0x80 "Control Point value not supported" (§3.3.2).
 * Shared constant: do not mutate; copy it if a library keeps the buffer.
 */
export const HR_CONTROL_POINT_RESET_ENERGY: Uint8Array = Uint8Array.of(0x01)

/** Battery Level (0x2A19, BAS v1.0 §3.1): UINT8 percent, 0..100. */
export function decodeBatteryLevel (bytes: Uint8Array): number {
  const value = bytes instanceof Uint8Array ? bytes[0] : undefined
  if (value === undefined) throw new ProtocolError('truncated', 'Battery Level is empty')
  if (value > 100) throw new ProtocolError('out_of_range', `Battery Level ${value} is above 100 %`)
  return value
}

export function encodeBatteryLevel (percent: number): Uint8Array {
  return Uint8Array.of(assertUint(percent, 100, 'battery level'))
}

function readU16 (bytes: Uint8Array, offset: number): number {
  return (bytes[offset] as number) | ((bytes[offset + 1] as number) << 8)
}

function writeU16 (bytes: Uint8Array, offset: number, value: number): void {
  bytes[offset] = value & 0xff
  bytes[offset + 1] = value >>> 8
}
