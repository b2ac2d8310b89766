// The class summaries of a class that ended (pure, no I/O).
//
// Every member with at least one reading measured in [started_at, ended_at)
// gets a summary: average and maximum bpm, seconds in each zone and calories
// as training sessions count them (api/sessions.ts summarise, over the class
// window), and effort points (effort.ts). Members are ranked by effort points,
// most first; members with the same points share a rank and the next rank
// skips as many (1, 2, 2, 4: standard competition ranking). `ranked` is the
// number of members with a summary.
import { summarise, type SessionReading } from '../sessions.ts'
import type { Body } from '../stats.ts'
import { effortPoints, type Effort } from './effort.ts'
import type { ClassRecord, ClassSummary } from './types.ts'

export interface ResultInput {
  profile_id: string
  display_name: string
  /** The member's readings, time order (those outside the class window are left out). */
  readings: readonly SessionReading[]
  /** The maximum the zones are computed against, and the zone bounds of the room member. */
  max: number
  bounds?: readonly number[]
  body: Body
}

export interface MemberResult { profile_id: string, display_name: string, summary: ClassSummary, effort: Effort }

/** Ranks of scores, most first, ties sharing a rank (1, 2, 2, 4). */
export function competitionRanks (scores: readonly number[]): number[] {
  return scores.map(s => 1 + scores.filter(o => o > s).length)
}

/** The summaries of the members of a class that ended at `endedAt`, in rank order (ties by display name). */
export function classResults (cls: Pick<ClassRecord, 'class_id' | 'room_id' | 'name' | 'started_at'>, endedAt: number, members: readonly ResultInput[], o: { streamGapMs: number }): MemberResult[] {
  const took: Array<{ m: ResultInput, rows: SessionReading[], effort: Effort }> = []
  for (const m of members) {
    const rows = m.readings.filter(r => r.measured_at >= cls.started_at && r.measured_at < endedAt)
    if (rows.length === 0) continue
    const effort = effortPoints(rows.map(r => ({ t: r.measured_at, bpm: r.heart_rate })), cls.started_at, endedAt, { max: m.max, ...(m.bounds === undefined ? {} : { bounds: m.bounds }) })
    took.push({ m, rows, effort })
  }
  const ranks = competitionRanks(took.map(x => x.effort.total))
  const out = took.map(({ m, rows, effort }, i): MemberResult => {
    const s = summarise(rows, { streamGapMs: o.streamGapMs, maxHeartRate: m.max, body: m.body })
    return {
      profile_id: m.profile_id,
      display_name: m.display_name,
      effort,
      summary: {
        class_id: cls.class_id,
        room_id: cls.room_id,
        name: cls.name,
        started_at: cls.started_at,
        ended_at: endedAt,
        duration_s: Math.round((endedAt - cls.started_at) / 1000),
        avg_bpm: s.avg,
        max_bpm: s.max,
        zones_s: s.zones_s,
        calories_kcal: s.kcal,
        effort_points: effort.total,
        rank: ranks[i] ?? took.length,
        ranked: took.length,
        max_heart_rate: m.max
      }
    }
  })
  return out.sort((a, b) => a.summary.rank - b.summary.rank || a.display_name.localeCompare(b.display_name))
}
