// Reads of the readings store: raw readings of a profile (one, a range, a
// page) and minute or hour rollups over a range of buckets, with keys
// `<profile_id>!<13-digit ms>` (api/pipeline/codec.ts). A raw value that does
// not decode (or a key that does not parse) is skipped and reported through
// `corrupt`, so one damaged record neither fails a history page nor the
// statistics over it.
import type { Sub } from './sublevel.ts'
import type { RawReading } from './records.ts'
import { decodeRaw, profileHigh, profileLow, readingKey, splitKey } from '../pipeline/codec.ts'
import { isRollup, type Rollup } from './rollups.ts'

/** Told about each raw record that was skipped because it does not decode. */
export type OnCorrupt = (key: string, err: unknown) => void

/** The raw reading stored under a key, or undefined (and `corrupt` told) when the record does not decode. */
export function toRaw (key: string, value: Uint8Array, corrupt: OnCorrupt): RawReading | undefined {
  const k = splitKey(key)
  if (k === undefined) { corrupt(key, new Error('the key is not <profile_id>!<13-digit ms>')); return undefined }
  try {
    return { measured_at: k.t, ...decodeRaw(value) }
  } catch (err) {
    corrupt(key, err)
    return undefined
  }
}

/** The last reading strictly before t. */
export async function rawBefore (raw: Sub<Uint8Array>, profileId: string, t: number, corrupt: OnCorrupt): Promise<RawReading | undefined> {
  for await (const [k, v] of raw.iterator({ gte: profileLow(profileId), lt: readingKey(profileId, t), reverse: true, limit: 1 })) {
    return toRaw(k, v, corrupt)
  }
  return undefined
}

/** The first reading strictly after t. */
export async function rawAfter (raw: Sub<Uint8Array>, profileId: string, t: number, corrupt: OnCorrupt): Promise<RawReading | undefined> {
  for await (const [k, v] of raw.iterator({ gt: readingKey(profileId, t), lt: profileHigh(profileId), limit: 1 })) {
    return toRaw(k, v, corrupt)
  }
  return undefined
}

/** Raw readings with from <= measured_at <= to, oldest first. */
export async function * rawRange (raw: Sub<Uint8Array>, profileId: string, from: number, to: number, limit: number, corrupt: OnCorrupt): AsyncGenerator<RawReading> {
  if (to < from) return
  for await (const [k, v] of raw.iterator({ gte: readingKey(profileId, Math.max(0, from)), lte: readingKey(profileId, to), limit })) {
    const r = toRaw(k, v, corrupt)
    if (r !== undefined) yield r
  }
}

/**
 * At most `limit` raw readings with from <= measured_at < to (oldest first,
 * or newest first with `reverse`), read in one native call; nextv may answer
 * fewer rows than asked, so it loops.
 */
export async function rawPage (raw: Sub<Uint8Array>, profileId: string, from: number, to: number, limit: number, reverse: boolean, corrupt: OnCorrupt): Promise<RawReading[]> {
  if (to <= from || limit <= 0) return []
  const it = raw.iterator({ gte: readingKey(profileId, Math.max(0, from)), lt: readingKey(profileId, to), limit, reverse })
  try {
    const out: RawReading[] = []
    for (let read = 0; read < limit;) {
      const rows = await it.nextv(limit - read)
      if (rows.length === 0) break
      read += rows.length
      for (const [k, v] of rows) {
        const r = toRaw(k, v, corrupt)
        if (r !== undefined) out.push(r)
      }
    }
    return out
  } finally {
    await it.close()
  }
}

/** Rollups keyed in [from, to), read 1000 at a time (one native call each, not one per row). */
export async function * bucketRange (sub: Sub<Rollup>, profileId: string, from: number, to: number): AsyncGenerator<[number, Rollup]> {
  if (to <= from) return
  const it = sub.iterator({ gte: readingKey(profileId, from), lt: readingKey(profileId, to) })
  try {
    for (;;) {
      const rows = await it.nextv(1000)
      if (rows.length === 0) break
      for (const [k, v] of rows) {
        const key = splitKey(k)
        if (key !== undefined && isRollup(v)) yield [key.t, v]
      }
    }
  } finally {
    await it.close()
  }
}
