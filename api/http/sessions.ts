// GET /api/v1/data/sessions and GET /api/v1/data/sessions/{id}/export
// (hr-relay extensions, docs/api.md "hr-relay extensions"). Definitions of a
// session, its zones and HRV: api/sessions.ts; store reads: api/session-reads.ts.
import type { FastifyReply } from 'fastify'
import { Type } from '@sinclair/typebox'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { ApiError } from '../errors.ts'
import { guard, type GuardUses } from './data-auth.ts'
import { Params } from './schema.ts'
import type { Services } from '../services.ts'
import { profileOf } from './auth.ts'
import { rangeOf } from './history.ts'
import { listSessions, loadSession, sessionOptions, type SessionOptions } from '../session-reads.ts'
import { summarise, type SessionSummary } from '../sessions.ts'
import { sessionCsv } from '../export/csv.ts'
import { sessionTcx } from '../export/tcx.ts'
import { sessionFit } from '../export/fit.ts'

export const EXPORT_FORMATS = {
  csv: { type: 'text/csv; charset=utf-8', ext: 'csv' },
  tcx: { type: 'application/vnd.garmin.tcx+xml; charset=utf-8', ext: 'tcx' },
  fit: { type: 'application/vnd.ant.fit', ext: 'fit' }
} as const
export type ExportFormat = keyof typeof EXPORT_FORMATS

/** What reading sessions takes: the stored readings, the user's body and maximum heart rate, and the session gap. */
export type SessionUses = Pick<Services, 'users' | 'config' | 'readings'>

/** Session options of a profile from the service's configuration and the user's body and maximum heart rate. */
export async function optionsFor (uses: SessionUses, profileId: string): Promise<SessionOptions> {
  const user = await uses.users.get(profileId)
  return sessionOptions(user, uses.config.data.sessionGapSeconds * 1000, uses.readings.gapMs)
}

export async function sessionsOfProfile (uses: SessionUses, profileId: string, from: number, to: number): Promise<SessionSummary[]> {
  return await listSessions(uses.readings, profileId, from, to, await optionsFor(uses, profileId))
}

/** Sends one session in a format; 400 for an unknown format, 404 for an unknown session (shared with the member page). */
export async function sendExport (uses: SessionUses, reply: FastifyReply, profileId: string, id: string, format: unknown): Promise<FastifyReply> {
  if (typeof format !== 'string' || !Object.hasOwn(EXPORT_FORMATS, format)) throw new ApiError('invalid_request', { detail: 'format must be csv, tcx or fit' })
  const f = EXPORT_FORMATS[format as ExportFormat]
  const o = await optionsFor(uses, profileId)
  const readings = await loadSession(uses.readings, profileId, id, o.sessionGapMs)
  if (readings === undefined) throw new ApiError('not_found', { detail: 'no session with this id' })
  const summary = summarise(readings, o)
  const body = format === 'csv' ? sessionCsv(readings) : format === 'tcx' ? sessionTcx(summary, readings) : Buffer.from(await sessionFit(summary, readings))
  return await reply
    .header('content-type', f.type)
    .header('content-disposition', `attachment; filename="hr-relay-session-${summary.id}.${f.ext}"`)
    .header('cache-control', 'no-store')
    .send(body)
}

const num = { type: 'number' }
const nullableNum = { type: ['number', 'null'] }

export const SESSION_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  required: ['id', 'start', 'end', 'duration_s', 'readings', 'avg', 'min', 'max', 'kcal', 'zones_s', 'max_heart_rate', 'rmssd_ms', 'sdnn_ms', 'rr_dropped'],
  properties: {
    id: { type: 'string' },
    start: num,
    end: num,
    duration_s: num,
    readings: num,
    avg: num,
    min: num,
    max: num,
    kcal: num,
    zones_s: { type: 'array', items: num, minItems: 5, maxItems: 5 },
    max_heart_rate: num,
    rmssd_ms: nullableNum,
    sdnn_ms: nullableNum,
    rr_dropped: num
  }
} as const

export const sessionsPlugin: FastifyPluginAsyncTypebox<GuardUses & SessionUses> = async (app, uses) => {
  app.get('/api/v1/data/sessions', {
    onRequest: guard(uses, { scope: 'data:heart_rate:read' }),
    schema: {
      querystring: Type.Object({ from: Type.Optional(Type.String()), to: Type.Optional(Type.String()) }),
      response: { 200: { type: 'object', additionalProperties: false, required: ['sessions'], properties: { sessions: { type: 'array', items: SESSION_SCHEMA } } } }
    }
  }, async request => {
    const { from, to } = rangeOf(request.query)
    return { sessions: await sessionsOfProfile(uses, profileOf(request), from, to) }
  })

  app.get('/api/v1/data/sessions/:id/export', {
    onRequest: guard(uses, { scope: 'data:heart_rate:read' }),
    schema: { params: Params({ id: Type.String() }), querystring: Type.Object({ format: Type.Optional(Type.String()) }) }
  }, async (request, reply) => {
    return await sendExport(uses, reply, profileOf(request), request.params.id, request.query.format)
  })
}
