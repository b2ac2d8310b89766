// Ingestion pause (hr-relay's definition of the specification's
// data:ingestion_pause scopes; the deck_ingestion_pause_feature flag is always
// on; docs/api.md "Ingestion pause"). GET answers {paused, until}; POST
// {"paused": true, "duration_s": n} pauses for n seconds (1..604800), without
// duration_s until turned off, {"paused": false} resumes. While paused, the
// member's readings are acknowledged and withheld by the ingest pipeline's
// `paused` step (never stored, never streamed), and room displays show the
// member as paused. Stored on the user record (ingestion_paused).
import { Type } from '@sinclair/typebox'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { ApiError } from '../errors.ts'
import { guard, type GuardUses } from './data-auth.ts'
import { profileOf } from './auth.ts'
import { announceRoomPause, type AnnounceUses } from '../web/member-rooms.ts'

const PATH = '/api/v1/data/ingestion_pause'
/** The longest pause with a duration: 7 days. */
export const MAX_PAUSE_S = 7 * 86_400

const stateSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['paused', 'until'],
  properties: { paused: { type: 'boolean' }, until: { type: ['number', 'null'] } }
} as const

/** What the pause uses: the account's pause, and the rooms and hub that announce it. */
export type IngestionPauseUses = GuardUses & AnnounceUses

export const ingestionPausePlugin: FastifyPluginAsyncTypebox<IngestionPauseUses> = async (app, uses) => {
  const { users } = uses
  app.get(PATH, {
    onRequest: guard(uses, { scope: 'data:ingestion_pause:read' }),
    schema: { response: { 200: stateSchema } }
  }, async request => users.ingestionPause(profileOf(request)))

  app.post(PATH, {
    onRequest: guard(uses, { scope: 'data:ingestion_pause:write' }),
    schema: {
      body: Type.Object({ paused: Type.Boolean(), duration_s: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_PAUSE_S })) }, { additionalProperties: false }),
      response: { 200: stateSchema }
    }
  }, async request => {
    const body = request.body
    if (!body.paused && body.duration_s !== undefined) throw new ApiError('invalid_request', { detail: 'duration_s goes only with paused: true' })
    const profileId = profileOf(request)
    const now = Date.now()
    const updated = await users.update(profileId, u => {
      if (body.paused) u.ingestion_paused = { since: now, until: body.duration_s === undefined ? null : now + body.duration_s * 1000 }
      else delete u.ingestion_paused
      return u
    })
    if (updated === undefined) throw new ApiError('token_not_found')
    announceRoomPause(uses, profileId, now)
    return users.ingestionPause(profileId, now)
  })
}
