// A member's class as CSV, TCX or FIT: the session exports (csv.ts, tcx.ts,
// fit.ts) over the class window [started_at, ended_at) of their readings, the
// zones against the maximum the class used. GET /api/v1/classes/{id}/export and
// /me/classes/{id}/export send it.
import type { FastifyReply } from 'fastify'
import { ApiError } from '../errors.ts'
import { summarise, type SessionReading } from '../sessions.ts'
import { EXPORT_FORMATS, optionsFor, type ExportFormat, type SessionUses } from '../http/sessions.ts'
import type { ClassSummary } from '../classes/types.ts'
import type { Services } from '../services.ts'
import { sessionCsv } from './csv.ts'
import { sessionTcx } from './tcx.ts'
import { sessionFit } from './fit.ts'

/** What a class export reads: the member's class summaries, their readings and settings. */
export type ClassExportUses = SessionUses & Pick<Services, 'classStore'>

/** The member's readings of a class window, time order. */
export async function classReadings (uses: Pick<Services, 'readings'>, profileId: string, s: Pick<ClassSummary, 'started_at' | 'ended_at'>): Promise<SessionReading[]> {
  const out: SessionReading[] = []
  for await (const r of uses.readings.range(profileId, s.started_at, s.ended_at - 1)) {
    out.push({
      measured_at: r.measured_at,
      heart_rate: r.heart_rate,
      ...(r.rr_intervals_ms === undefined || r.rr_intervals_ms.length === 0 ? {} : { rr_intervals_ms: r.rr_intervals_ms }),
      ...(r.energy_expended_kj === undefined ? {} : { energy_expended_kj: r.energy_expended_kj })
    })
  }
  return out
}

/** One class of the member in a format: the file's bytes, or undefined when there is no reading of theirs left in it. */
export async function classFile (uses: ClassExportUses, profileId: string, s: ClassSummary, format: ExportFormat): Promise<string | Buffer | undefined> {
  const readings = await classReadings(uses, profileId, s)
  if (readings.length === 0) return undefined
  const o = await optionsFor(uses, profileId)
  const summary = summarise(readings, { ...o, maxHeartRate: s.max_heart_rate })
  return format === 'csv' ? sessionCsv(readings) : format === 'tcx' ? sessionTcx(summary, readings) : Buffer.from(await sessionFit(summary, readings))
}

/** Sends one class of the member; 400 for an unknown format, 404 for a class they have no summary of (or no reading left in). */
export async function sendClassExport (uses: ClassExportUses, reply: FastifyReply, profileId: string, classId: string, format: unknown): Promise<FastifyReply> {
  if (typeof format !== 'string' || !Object.hasOwn(EXPORT_FORMATS, format)) throw new ApiError('invalid_request', { detail: 'format must be csv, tcx or fit' })
  const f = EXPORT_FORMATS[format as ExportFormat]
  const s = await uses.classStore.summaryOf(profileId, classId)
  const body = s === undefined ? undefined : await classFile(uses, profileId, s, format as ExportFormat)
  if (s === undefined || body === undefined) throw new ApiError('not_found', { detail: 'no class with this id' })
  return await reply
    .header('content-type', f.type)
    .header('content-disposition', `attachment; filename="hr-relay-class-${s.started_at}.${f.ext}"`)
    .header('cache-control', 'no-store')
    .send(body)
}
