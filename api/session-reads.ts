// Sessions read from the readings store (definitions: api/sessions.ts).
// A listing holds the sessions that start in [from, to), each read to its end
// (past `to` when it is still going on); a session is at most
// MAX_SESSION_MS long, readings after that stay out of it (and out of any
// other session), so the same readings give the same sessions whatever range
// is asked for.
import type { RawReading, ReadingStore } from './store/types.ts'
import type { UserRecord } from './store/users.ts'
import type { Body } from './stats.ts'
import { maxHeartRate } from './web/zones.ts'
import { summarise, type SessionReading, type SessionSummary } from './sessions.ts'

export const MAX_SESSION_MS = 86_400_000
const PAGE = 5000

export interface SessionOptions { sessionGapMs: number, streamGapMs: number, maxHeartRate: number, body: Body }

/** Summary options for a user: body for Keytel, maximum heart rate as the room display's. */
export function sessionOptions (user: UserRecord | undefined, sessionGapMs: number, streamGapMs: number): SessionOptions {
  return {
    sessionGapMs,
    streamGapMs,
    maxHeartRate: maxHeartRate(undefined, user?.max_heart_rate, user?.age).bpm,
    body: { ...(user?.age === undefined ? {} : { age: user.age }), ...(user?.weight_kg === undefined ? {} : { weight_kg: user.weight_kg }), ...(user?.sex === undefined ? {} : { sex: user.sex }) }
  }
}

function plain (r: RawReading): SessionReading {
  return {
    measured_at: r.measured_at,
    heart_rate: r.heart_rate,
    ...(r.rr_intervals_ms === undefined || r.rr_intervals_ms.length === 0 ? {} : { rr_intervals_ms: r.rr_intervals_ms }),
    ...(r.energy_expended_kj === undefined ? {} : { energy_expended_kj: r.energy_expended_kj })
  }
}

/** True when the reading at t starts a session (no reading within the gap before it). */
async function startsSession (readings: ReadingStore, profileId: string, t: number, gapMs: number): Promise<boolean> {
  const prev = await readings.before(profileId, t)
  return prev === undefined || t - prev.measured_at > gapMs
}

/** The readings of the session starting at `start`, read forward until a gap (or MAX_SESSION_MS). */
async function readFrom (readings: ReadingStore, profileId: string, start: number, gapMs: number, seed: SessionReading[] = []): Promise<SessionReading[]> {
  const out = seed
  let cursor = out.length === 0 ? start : (out[out.length - 1] as SessionReading).measured_at + 1
  const end = start + MAX_SESSION_MS
  for (;;) {
    const rows = await readings.page(profileId, cursor, end + 1, PAGE)
    for (const r of rows) {
      const prev = out[out.length - 1]
      if (prev !== undefined && r.measured_at - prev.measured_at > gapMs) return out
      out.push(plain(r))
    }
    if (rows.length < PAGE) return out
    cursor = (rows[rows.length - 1] as RawReading).measured_at + 1
  }
}

/** Sessions starting in [from, to), oldest first. */
export async function listSessions (readings: ReadingStore, profileId: string, from: number, to: number, o: SessionOptions): Promise<SessionSummary[]> {
  const out: SessionSummary[] = []
  const gap = o.sessionGapMs
  let current: SessionReading[] | null = null
  /** The session in progress started before `from` (or runs past its MAX_SESSION_MS): its readings are skipped. */
  let skipUntilGap = false
  let last: number | undefined
  let cursor = from
  for (;;) {
    const rows = await readings.page(profileId, cursor, to, PAGE)
    for (const r of rows) {
      const t = r.measured_at
      if (last === undefined) {
        skipUntilGap = !await startsSession(readings, profileId, t, gap)
      } else if (t - last > gap) {
        if (current !== null) out.push(summarise(current, o))
        current = null
        skipUntilGap = false
      }
      last = t
      if (skipUntilGap) continue
      if (current === null) current = []
      const first = current[0]
      if (first !== undefined && t - first.measured_at > MAX_SESSION_MS) { out.push(summarise(current, o)); current = null; skipUntilGap = true; continue }
      current.push(plain(r))
    }
    if (rows.length < PAGE) break
    cursor = (rows[rows.length - 1] as RawReading).measured_at + 1
  }
  if (current !== null) {
    const first = current[0] as SessionReading
    out.push(summarise(await readFrom(readings, profileId, first.measured_at, gap, current), o))
  }
  return out
}

/** A session id: its start in ms, as a decimal string. */
export function parseSessionId (id: string): number | undefined {
  if (!/^\d{1,13}$/.test(id)) return undefined
  return Number(id)
}

/** The readings of the session with this id, or undefined when no session starts there. */
export async function loadSession (readings: ReadingStore, profileId: string, id: string, gapMs: number): Promise<SessionReading[] | undefined> {
  const start = parseSessionId(id)
  if (start === undefined) return undefined
  const at = await readings.page(profileId, start, start + 1, 1)
  if (at.length === 0 || !await startsSession(readings, profileId, start, gapMs)) return undefined
  return await readFrom(readings, profileId, start, gapMs)
}
