// Ingestion pause (hr-relay's definition of the specification's
// data:ingestion_pause scopes; the deck_ingestion_pause_feature flag is always
// on; README "Ingestion pause"). GET answers {paused, until}; POST
// {"paused": true, "duration_s": n} pauses for n seconds (1..604800), without
// duration_s until turned off, {"paused": false} resumes. While paused, the
// member's readings are acknowledged and withheld by the ingest pipeline's
// `paused` step (never stored, never streamed), and room displays show the
// member as paused. Stored on the user record (ingestion_paused).
import type { FastifyInstance } from 'fastify'
import { ApiError } from '../errors.ts'
import { guard } from './data-auth.ts'
import { profileOf } from './auth.ts'
import { announceRoomPause } from '../web/member-rooms.ts'

const PATH = '/api/v1/data/ingestion_pause'
/** The longest pause with a duration: 7 days. */
export const MAX_PAUSE_S = 7 * 86_400

const stateSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['paused', 'until'],
  properties: { paused: { type: 'boolean' }, until: { type: ['number', 'null'] } }
} as const

export async function ingestionPausePlugin (app: FastifyInstance): Promise<void> {
  app.get(PATH, {
    onRequest: guard(app, { scope: 'data:ingestion_pause:read' }),
    schema: { response: { 200: stateSchema } }
  }, async request => app.hr.users.ingestionPause(profileOf(request)))

  app.post(PATH, {
    onRequest: guard(app, { scope: 'data:ingestion_pause:write' }),
    schema: {
      body: {
        type: 'object',
        additionalProperties: false,
        required: ['paused'],
        properties: { paused: { type: 'boolean' }, duration_s: { type: 'integer', minimum: 1, maximum: MAX_PAUSE_S } }
      },
      response: { 200: stateSchema }
    }
  }, async request => {
    const body = request.body as { paused: boolean, duration_s?: number }
    if (!body.paused && body.duration_s !== undefined) throw new ApiError('invalid_request', { detail: 'duration_s goes only with paused: true' })
    const profileId = profileOf(request)
    const now = Date.now()
    const updated = await app.hr.users.update(profileId, u => {
      if (body.paused) u.ingestion_paused = { since: now, until: body.duration_s === undefined ? null : now + body.duration_s * 1000 }
      else delete u.ingestion_paused
      return u
    })
    if (updated === undefined) throw new ApiError('token_not_found')
    announceRoomPause(app, profileId, now)
    return app.hr.users.ingestionPause(profileId, now)
  })
}
