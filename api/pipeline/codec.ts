// Keys and the compact binary value of a stored raw reading. Pure functions:
// no I/O. Keys are `<profile_id>!<13-digit ms timestamp>` so that a range scan
// over one profile's readings is a key range (LevelDB prefix-compresses the
// shared part). The value is 3 bytes for a plain reading:
//   byte 0   flags: bits 0-2 source code, bit 3 sensor contact known,
//            bit 4 sensor contact, bit 5 energy present, bit 6 RR present
//   byte 1-2 heart rate, uint16 little-endian
//   [energy expended, uint16 LE kJ]  when bit 5
//   [n uint8, n × uint16 LE RR interval ms]  when bit 6
// device_id is not stored per reading (it is on the live message and in the
// latest record); this keeps a stored reading near 12 bytes after compaction.
import type { ReadingSource } from './reading.ts'
import { MEASURED_AT, RR_MAX_COUNT } from '../../firmware-protocol/reading-contract.ts'
import { apiErrorMessage } from '../error-codes.ts'

export const TS_WIDTH = 13
export const MAX_TIMESTAMP = MEASURED_AT.max
export const MINUTE_MS = 60_000
export const HOUR_MS = 3_600_000
/** The reading contract's RR count; the stored count is one byte. */
export const MAX_RR = RR_MAX_COUNT

// A stored reading keeps its source as an index into this list: new sources are added at the end.
const SOURCES: readonly ReadingSource[] = ['http', 'ble', 'serial', 'mqtt', 'sim', 'ant']

export function padTs (t: number): string {
  return Math.trunc(t).toString().padStart(TS_WIDTH, '0')
}

export function readingKey (profileId: string, t: number): string {
  return `${profileId}!${padTs(t)}`
}

/** The lowest and highest key of one profile (`!` < digits < `~`). */
export function profileLow (profileId: string): string { return `${profileId}!` }
export function profileHigh (profileId: string): string { return `${profileId}!~` }

export function minuteOf (t: number): number {
  return Math.floor(t / MINUTE_MS) * MINUTE_MS
}

export function hourOf (t: number): number {
  return Math.floor(t / HOUR_MS) * HOUR_MS
}

/** Splits a key back into profile and timestamp; undefined for a foreign key. */
export function splitKey (key: string): { profile_id: string, t: number } | undefined {
  const i = key.lastIndexOf('!')
  if (i <= 0 || key.length - i - 1 !== TS_WIDTH) return undefined
  const t = Number(key.slice(i + 1))
  if (!Number.isSafeInteger(t)) return undefined
  return { profile_id: key.slice(0, i), t }
}

export interface RawValue {
  heart_rate: number
  source: ReadingSource
  rr_intervals_ms?: number[]
  energy_expended_kj?: number
  sensor_contact?: boolean
}

const u16 = (n: number): number => Math.min(0xffff, Math.max(0, Math.round(n)))

export function encodeRaw (v: RawValue): Uint8Array {
  const rr = v.rr_intervals_ms?.slice(0, MAX_RR)
  const hasEnergy = v.energy_expended_kj !== undefined
  const hasRr = rr !== undefined && rr.length > 0
  const size = 3 + (hasEnergy ? 2 : 0) + (hasRr ? 1 + 2 * rr.length : 0)
  const out = new Uint8Array(size)
  const view = new DataView(out.buffer)
  let flags = Math.max(0, SOURCES.indexOf(v.source))
  if (v.sensor_contact !== undefined) flags |= 0x08 | (v.sensor_contact ? 0x10 : 0)
  if (hasEnergy) flags |= 0x20
  if (hasRr) flags |= 0x40
  out[0] = flags
  view.setUint16(1, u16(v.heart_rate), true)
  let o = 3
  if (hasEnergy) { view.setUint16(o, u16(v.energy_expended_kj ?? 0), true); o += 2 }
  if (hasRr) {
    out[o++] = rr.length
    for (const r of rr) { view.setUint16(o, u16(r), true); o += 2 }
  }
  return out
}

export class RawDecodeError extends Error {
  readonly code = 'HR_RAW_DECODE'
  constructor (detail: string) { super(apiErrorMessage('HR_RAW_DECODE', { detail })); this.name = 'RawDecodeError' }
}

export function decodeRaw (bytes: Uint8Array): RawValue {
  if (bytes.length < 3) throw new RawDecodeError(`raw reading too short: ${bytes.length} bytes`)
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  const flags = bytes[0] ?? 0
  const source = SOURCES[flags & 0x07]
  if (source === undefined) throw new RawDecodeError(`unknown source code ${flags & 0x07}`)
  const v: RawValue = { heart_rate: view.getUint16(1, true), source }
  if ((flags & 0x08) !== 0) v.sensor_contact = (flags & 0x10) !== 0
  let o = 3
  if ((flags & 0x20) !== 0) {
    if (bytes.length < o + 2) throw new RawDecodeError('truncated energy field')
    v.energy_expended_kj = view.getUint16(o, true); o += 2
  }
  if ((flags & 0x40) !== 0) {
    const n = bytes[o++]
    if (n === undefined || bytes.length < o + 2 * n) throw new RawDecodeError('truncated RR field')
    const rr: number[] = []
    for (let i = 0; i < n; i++) { rr.push(view.getUint16(o, true)); o += 2 }
    v.rr_intervals_ms = rr
  }
  return v
}
