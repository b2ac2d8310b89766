// Serial line protocols: the hr-relay framed format, plain text sensors
// (Arduino sketches, PulseSensor) and the HRMI board's polled replies.
// parseLine never throws: every input maps to exactly one SerialEvent.
// Framing (splitting the byte stream into lines, bounded) is in
// line-splitter.ts; this file only sees complete lines.
import { ProtocolError } from './errors.ts'
import { isValidDeviceId, isValidFirmwareVersion } from './device-id.ts'
import { HEART_RATE, RR_INTERVAL_MS, RR_MAX_COUNT } from './reading-contract.ts'

export { BoundedLineSplitter, type BoundedLineSplitterOptions, LF_DELIMITER, ANY_DELIMITER } from './line-splitter.ts'

export type SerialFormat = 'framed' | 'text' | 'hrmi'

export type SerialErrorReason = 'bad_checksum' | 'garbage' | 'too_long' | 'out_of_range'

export type SerialEvent =
  | { kind: 'reading', heart_rate: number, rr_intervals_ms?: number[] }
  | { kind: 'identity', device_id: string, firmware_version: string }
  | { kind: 'no_value' }
  | { kind: 'ignored' }
  | { kind: 'error', reason: SerialErrorReason }

export const SERIAL_FORMATS: readonly SerialFormat[] = Object.freeze(['framed', 'text', 'hrmi'])

/** Longest accepted line in characters, excluding the terminator. */
export const MAX_LINE_LENGTH = 256
/** bpm bounds for every serial format (the reading contract's). 0 is legal (no skin contact); the pipeline drops <= 0. */
export const MIN_BPM = HEART_RATE.min
export const MAX_BPM = HEART_RATE.max
/** RR interval bounds in ms and the most per framed reading (the reading contract's). */
export const MIN_RR_MS = RR_INTERVAL_MS.min
export const MAX_RR_MS = RR_INTERVAL_MS.max
export const MAX_RR_COUNT = RR_MAX_COUNT
/** The HRMI keeps a 32-entry history; G0..G32 are valid polls. */
export const HRMI_MAX_VALUES = 32

const IGNORED: SerialEvent = Object.freeze({ kind: 'ignored' })
const NO_VALUE: SerialEvent = Object.freeze({ kind: 'no_value' })
function fail (reason: SerialErrorReason): SerialEvent { return { kind: 'error', reason } }

/** A decimal number as a device may print it: optional sign, digits, optional fraction. */
const NUMBER = /^[+-]?\d+(?:\.\d+)?$/

/** Classify a numeric string as a bpm: a reading, 'out_of_range', or 'garbage' when it is not a number. */
function bpmEvent (text: string, rr?: number[]): SerialEvent {
  if (!NUMBER.test(text)) return fail('garbage')
  const value = Number(text)
  if (!Number.isInteger(value) || value < MIN_BPM || value > MAX_BPM) return fail('out_of_range')
  return rr === undefined ? { kind: 'reading', heart_rate: value } : { kind: 'reading', heart_rate: value, rr_intervals_ms: rr }
}

/** XOR of the character codes of `body` (the text between '$' and '*'), as two uppercase hex digits. */
export function checksum (body: string): string {
  let x = 0
  for (let i = 0; i < body.length; i++) x ^= body.charCodeAt(i) & 0xff
  return x.toString(16).toUpperCase().padStart(2, '0')
}

/** Printable ASCII other than the framing characters '$' and '*'. */
const FRAMED_BODY = /^[\x20-\x23\x25-\x29\x2b-\x7e]*$/
const FRAMED_LINE = /^\$([^*]*)\*([0-9A-Fa-f]{2})$/

function parseFramed (line: string): SerialEvent {
  const m = FRAMED_LINE.exec(line)
  if (m === null) return fail('garbage')
  const body = m[1] as string
  if (!FRAMED_BODY.test(body)) return fail('garbage')
  if (checksum(body) !== (m[2] as string).toUpperCase()) return fail('bad_checksum')
  const fields = body.split(',')
  const sentence = fields[0]
  if (sentence === 'HR') {
    const bpm = fields[1]
    if (bpm === undefined) return fail('garbage')
    const rrFields = fields.slice(2)
    if (rrFields.length > MAX_RR_COUNT) return fail('out_of_range')
    const rr: number[] = []
    for (const f of rrFields) {
      if (!NUMBER.test(f)) return fail('garbage')
      const v = Number(f)
      if (!Number.isInteger(v) || v < MIN_RR_MS || v > MAX_RR_MS) return fail('out_of_range')
      rr.push(v)
    }
    return bpmEvent(bpm, rr.length > 0 ? rr : undefined)
  }
  if (sentence === 'ID') {
    const [, deviceId, version] = fields
    if (fields.length !== 3 || !isValidDeviceId(deviceId) || !isValidFirmwareVersion(version)) return fail('garbage')
    return { kind: 'identity', device_id: deviceId, firmware_version: version }
  }
  // A well-formed sentence of a type this version does not know (forward compatible).
  return IGNORED
}

const KEYED = /^(?:bpm|hr)\s*[:=]\s*(\S+)$/i
const PULSE_SENSOR_BEAT = /^B(\S+)$/
const PULSE_SENSOR_OTHER = /^[SQ][+-]?\d+$/

function parseText (line: string): SerialEvent {
  if (/^getting reading/i.test(line)) return NO_VALUE
  // PulseSensor "Processing visualizer" output: S<signal>, B<bpm>, Q<IBI ms>.
  if (PULSE_SENSOR_OTHER.test(line)) return IGNORED
  const keyed = KEYED.exec(line)
  const beat = keyed === null ? PULSE_SENSOR_BEAT.exec(line) : null
  let value: string
  if (keyed !== null) value = keyed[1] as string
  else if (beat !== null) value = beat[1] as string
  else if (line.includes(',')) value = (line.split(',')[0] as string).trim()
  else value = line
  if (value === '-999') return NO_VALUE
  return bpmEvent(value)
}

function parseHrmi (line: string): SerialEvent {
  // Reply to G<n>: "<status> <count> <hr_newest> ... <hr_oldest>", decimal, space separated.
  const tokens = line.split(/\s+/)
  if (!tokens.every((t) => /^\d{1,5}$/.test(t))) return fail('garbage')
  if (tokens.length < 2) return fail('garbage')
  if (tokens.length - 2 > HRMI_MAX_VALUES) return fail('garbage')
  const [status, count, first] = tokens.map(Number)
  if ((status as number) > 255 || (count as number) > 255) return fail('out_of_range')
  if (first === undefined) return NO_VALUE // reply to G0: status and count only
  return bpmEvent(String(first))
}

/**
 * Parse one line (without its terminator; a trailing '\r' is stripped here
 * too). Never throws. Blank lines are 'ignored'.
 */
export function parseLine (format: SerialFormat, line: string): SerialEvent {
  try {
    if (typeof line !== 'string') return fail('garbage')
    const stripped = line.replace(/[\r\n]+$/, '')
    if (stripped.length > MAX_LINE_LENGTH) return fail('too_long')
    const trimmed = stripped.trim()
    if (trimmed === '') return IGNORED
    switch (format) {
      case 'framed': return parseFramed(trimmed)
      case 'text': return parseText(trimmed)
      case 'hrmi': return parseHrmi(trimmed)
      default: return fail('garbage')
    }
  } catch {
    return fail('garbage')
  }
}

/** The HRMI poll for the n most recent values (0..32), terminated by CR as the board expects. */
export function hrmiPollCommand (n: number): string {
  if (!Number.isInteger(n) || n < 0 || n > HRMI_MAX_VALUES) {
    throw new ProtocolError('out_of_range', `HRMI poll count must be an integer 0..${HRMI_MAX_VALUES}, got ${String(n)}`)
  }
  return `G${n}\r`
}

function frame (body: string): string {
  const line = `$${body}*${checksum(body)}`
  if (line.length > MAX_LINE_LENGTH) throw new ProtocolError('too_long', `framed line would be ${line.length} characters, above ${MAX_LINE_LENGTH}`)
  return line
}

/** `$HR,<bpm>[,<rr_ms>...]*XX` without a line terminator. Throws 'out_of_range' / 'too_long'. */
export function encodeFramedReading (bpm: number, rrMs?: number[]): string {
  if (!Number.isInteger(bpm) || bpm < MIN_BPM || bpm > MAX_BPM) {
    throw new ProtocolError('out_of_range', `bpm must be an integer ${MIN_BPM}..${MAX_BPM}, got ${String(bpm)}`)
  }
  if ((rrMs ?? []).length > MAX_RR_COUNT) throw new ProtocolError('out_of_range', `at most ${MAX_RR_COUNT} RR intervals, got ${(rrMs ?? []).length}`)
  for (const [i, v] of (rrMs ?? []).entries()) {
    if (!Number.isInteger(v) || v < MIN_RR_MS || v > MAX_RR_MS) {
      throw new ProtocolError('out_of_range', `rr_ms[${i}] must be an integer ${MIN_RR_MS}..${MAX_RR_MS}, got ${String(v)}`)
    }
  }
  return frame(['HR', String(bpm), ...(rrMs ?? []).map(String)].join(','))
}

/** `$ID,<device_id>,<firmware_version>*XX` without a line terminator. Throws 'bad_topic' for invalid ids. */
export function encodeIdentity (deviceId: string, firmwareVersion: string): string {
  if (!isValidDeviceId(deviceId)) throw new ProtocolError('bad_topic', `device id ${JSON.stringify(deviceId)} is not 1..64 of [A-Za-z0-9:_.-]`)
  if (!isValidFirmwareVersion(firmwareVersion)) throw new ProtocolError('bad_topic', `firmware version ${JSON.stringify(firmwareVersion)} is not 1..32 of [A-Za-z0-9._+-]`)
  return frame(`ID,${deviceId},${firmwareVersion}`)
}
