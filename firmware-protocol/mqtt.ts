// MQTT topics and payloads for Wi-Fi devices and for the relay's own output.
// Topic rules cite MQTT v5.0 §4.7 (also v3.1.1 §4.7): ids become single topic
// levels, so they never contain '/', '+', '#' or NUL.
// Payload validation is hand-written and mirrors
// schemas/device-heart-rate.schema.json (a test keeps the two in agreement).
import { ProtocolError } from './errors.ts'
import { isValidDeviceId, isValidProfileId } from './device-id.ts'
import { BATTERY_PERCENT, ENERGY_KJ, HEART_RATE, MEASURED_AT, RR_INTERVAL_MS, RR_MAX_COUNT } from './reading-contract.ts'

export { isValidDeviceId, isValidProfileId, DEVICE_ID_PATTERN, PROFILE_ID_PATTERN } from './device-id.ts'

export const TOPIC_PREFIX = 'hr-relay/v1'
export const STATUS_ONLINE = 'online'
export const STATUS_OFFLINE = 'offline'
/** Largest accepted device payload in bytes (UTF-8). */
export const MAX_DEVICE_PAYLOAD_BYTES = 4096
/** [MQTT-4.7.3-3] a topic is at most 65535 bytes; ours are far shorter. */
const MAX_TOPIC_LENGTH = 256

export type DeviceTopicKind = 'heart_rate' | 'status'

function deviceId (id: string): string {
  if (!isValidDeviceId(id)) throw new ProtocolError('bad_topic', `device id ${JSON.stringify(id)} is not 1..64 of [A-Za-z0-9:_.-]`)
  return id
}

/** `hr-relay/v1/devices/{device_id}/heart_rate`: a device publishes readings here (QoS 1). */
export function deviceHeartRateTopic (id: string): string {
  return `${TOPIC_PREFIX}/devices/${deviceId(id)}/heart_rate`
}

/** `hr-relay/v1/devices/{device_id}/status`: retained 'online' / 'offline' (the last will). */
export function deviceStatusTopic (id: string): string {
  return `${TOPIC_PREFIX}/devices/${deviceId(id)}/status`
}

/** `hr-relay/v1/users/{profile_id}/heart_rate`: the relay publishes each stored reading here. */
export function userHeartRateTopic (profileId: string): string {
  if (!isValidProfileId(profileId)) throw new ProtocolError('bad_topic', `profile id ${JSON.stringify(profileId)} is not 1..64 of [A-Za-z0-9_-]`)
  return `${TOPIC_PREFIX}/users/${profileId}/heart_rate`
}

/**
 * Whether an MQTT topic filter matches some member's heart-rate topic
 * (`hr-relay/v1/users/<profile_id>/heart_rate`), with `+` and `#` as MQTT
 * 3.1.1 §4.7 defines them. A filter starting with a wildcard does not match a
 * topic starting with `$`, and ours do not, so that rule does not apply here.
 */
export function filterMatchesUserHeartRate (filter: string): boolean {
  const want = [...TOPIC_PREFIX.split('/'), 'users', undefined, 'heart_rate']
  const got = filter.split('/')
  for (let i = 0; i < got.length; i++) {
    const level = got[i]
    if (level === '#') return true
    if (i >= want.length) return false
    const w = want[i]
    if (level === '+') continue
    if (w === undefined ? level === '' : level !== w) return false
  }
  return got.length === want.length
}

/** Split a concrete topic name; null for anything that is not exactly one of our topics. */
function levels (topic: unknown): string[] | null {
  if (typeof topic !== 'string' || topic.length === 0 || topic.length > MAX_TOPIC_LENGTH) return null
  if (!topic.startsWith(`${TOPIC_PREFIX}/`)) return null
  return topic.slice(TOPIC_PREFIX.length + 1).split('/')
}

export function parseDeviceTopic (topic: string): { device_id: string, kind: DeviceTopicKind } | null {
  const parts = levels(topic)
  if (parts === null || parts.length !== 3 || parts[0] !== 'devices') return null
  const [, id, kind] = parts
  if (!isValidDeviceId(id)) return null
  if (kind !== 'heart_rate' && kind !== 'status') return null
  return { device_id: id, kind }
}

export function parseUserTopic (topic: string): { profile_id: string } | null {
  const parts = levels(topic)
  if (parts === null || parts.length !== 3 || parts[0] !== 'users' || parts[2] !== 'heart_rate') return null
  const id = parts[1]
  return isValidProfileId(id) ? { profile_id: id } : null
}

export interface DeviceHeartRatePayload {
  measured_at: number
  heart_rate: number
  rr_intervals_ms?: number[]
  energy_expended_kj?: number
  sensor_contact?: boolean
  battery_percent?: number
}

/**
 * Bounds of the device payload: the reading contract's (reading-contract.ts),
 * which the ingest pipeline applies too. The JSON Schema file repeats them
 * (a test keeps it equal).
 */
export const PAYLOAD_LIMITS = {
  measured_at: MEASURED_AT,
  heart_rate: HEART_RATE,
  rr_interval_ms: RR_INTERVAL_MS,
  rr_intervals_max_items: RR_MAX_COUNT,
  energy_expended_kj: ENERGY_KJ,
  battery_percent: BATTERY_PERCENT
} as const

function schemaError (path: string, what: string): ProtocolError {
  return new ProtocolError('schema', `${path === '' ? '/' : path}: ${what}`)
}

function checkInteger (value: unknown, path: string, range: { min: number, max: number }): number {
  if (typeof value !== 'number' || !Number.isInteger(value)) throw schemaError(path, 'must be an integer')
  if (value < range.min || value > range.max) throw schemaError(path, `must be between ${range.min} and ${range.max}`)
  return value
}

const KNOWN_FIELDS = new Set(['measured_at', 'heart_rate', 'rr_intervals_ms', 'energy_expended_kj', 'sensor_contact', 'battery_percent'])

/** Validate an already-parsed value against the device payload schema; returns a fresh, clean object. */
export function validateDevicePayload (value: unknown): DeviceHeartRatePayload {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw schemaError('', 'must be an object')
  const obj = value as Record<string, unknown>
  for (const key of Object.keys(obj)) {
    if (!KNOWN_FIELDS.has(key)) throw schemaError(`/${key.replace(/~/g, '~0').replace(/\//g, '~1')}`, 'is not an allowed property')
  }
  if (!Object.hasOwn(obj, 'measured_at')) throw schemaError('/measured_at', 'is required')
  if (!Object.hasOwn(obj, 'heart_rate')) throw schemaError('/heart_rate', 'is required')
  const out: DeviceHeartRatePayload = {
    measured_at: checkInteger(obj.measured_at, '/measured_at', PAYLOAD_LIMITS.measured_at),
    heart_rate: checkInteger(obj.heart_rate, '/heart_rate', PAYLOAD_LIMITS.heart_rate)
  }
  if (Object.hasOwn(obj, 'rr_intervals_ms')) {
    const rr = obj.rr_intervals_ms
    if (!Array.isArray(rr)) throw schemaError('/rr_intervals_ms', 'must be an array')
    if (rr.length > PAYLOAD_LIMITS.rr_intervals_max_items) throw schemaError('/rr_intervals_ms', `must have at most ${PAYLOAD_LIMITS.rr_intervals_max_items} items`)
    out.rr_intervals_ms = rr.map((v: unknown, i) => checkInteger(v, `/rr_intervals_ms/${i}`, PAYLOAD_LIMITS.rr_interval_ms))
  }
  if (Object.hasOwn(obj, 'energy_expended_kj')) out.energy_expended_kj = checkInteger(obj.energy_expended_kj, '/energy_expended_kj', PAYLOAD_LIMITS.energy_expended_kj)
  if (Object.hasOwn(obj, 'sensor_contact')) {
    if (typeof obj.sensor_contact !== 'boolean') throw schemaError('/sensor_contact', 'must be a boolean')
    out.sensor_contact = obj.sensor_contact
  }
  if (Object.hasOwn(obj, 'battery_percent')) out.battery_percent = checkInteger(obj.battery_percent, '/battery_percent', PAYLOAD_LIMITS.battery_percent)
  return out
}

const utf8 = new TextDecoder('utf-8', { fatal: true })

/**
 * Decode a device's heart-rate payload (UTF-8 JSON). Throws ProtocolError:
 * 'too_long' above MAX_DEVICE_PAYLOAD_BYTES, 'bad_json' for invalid UTF-8 or
 * JSON, 'schema' with the JSON Pointer of the offending value in the message.
 */
export function decodeDevicePayload (bytes: Uint8Array | string): DeviceHeartRatePayload {
  let text: string
  if (typeof bytes === 'string') {
    text = bytes
    if (Buffer.byteLength(text, 'utf8') > MAX_DEVICE_PAYLOAD_BYTES) throw new ProtocolError('too_long', `payload is above ${MAX_DEVICE_PAYLOAD_BYTES} bytes`)
  } else if (bytes instanceof Uint8Array) {
    if (bytes.length > MAX_DEVICE_PAYLOAD_BYTES) throw new ProtocolError('too_long', `payload is ${bytes.length} bytes, above ${MAX_DEVICE_PAYLOAD_BYTES}`)
    try {
      text = utf8.decode(bytes)
    } catch (err) {
      throw new ProtocolError('bad_json', 'payload is not valid UTF-8', { cause: err })
    }
  } else {
    throw new ProtocolError('bad_json', 'payload must be bytes or a string')
  }
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch (err) {
    throw new ProtocolError('bad_json', `payload is not JSON: ${(err as Error).message}`, { cause: err })
  }
  return validateDevicePayload(value)
}

/** Serialise a device payload (validated first; throws 'schema'). Field order is fixed. */
export function encodeDevicePayload (p: DeviceHeartRatePayload): string {
  return JSON.stringify(validateDevicePayload(p))
}

/** The specification's reading shape (spec 2.1), as published on the user topic. */
export function encodeUserReading (r: { measured_at: number, heart_rate: number }): string {
  return JSON.stringify({ measured_at: r.measured_at, data: { heart_rate: r.heart_rate } })
}
