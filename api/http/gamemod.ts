// Game-mod configuration (spec 4.5, 2.6). Read: 404 JSON (9404) when unset.
// Write replaces the whole object and answers with all twelve keys (unset ones
// null); wrong types and unknown keys are 400 code 7013 (types: api/store/gamemod.ts).
import type { FastifyInstance } from 'fastify'
import { ApiError } from '../errors.ts'
import { guard } from './data-auth.ts'
import { profileOf } from './auth.ts'
import { GAME_MOD_KEYS, GAME_MOD_SCHEMA, GAME_MOD_TYPES } from '../store/gamemod.ts'

const PATH = '/api/v1/game-mod/configuration'
const responseSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['configuration'],
  properties: {
    configuration: {
      type: 'object',
      additionalProperties: false,
      required: GAME_MOD_KEYS,
      properties: Object.fromEntries(GAME_MOD_KEYS.map(k => [k, { type: [GAME_MOD_TYPES[k], 'null'] }]))
    }
  }
}

export async function gameModPlugin (app: FastifyInstance): Promise<void> {
  app.get(PATH, {
    onRequest: guard(app, { scope: 'game_mod:configuration:read' }),
    schema: { response: { 200: responseSchema } }
  }, async request => {
    const configuration = await app.hr.gameMod.get(profileOf(request))
    if (configuration === undefined) throw new ApiError('not_found', { detail: 'no game-mod configuration' })
    return { configuration }
  })

  app.post(PATH, {
    onRequest: guard(app, { scope: 'game_mod:configuration:write' }),
    schema: {
      body: { type: 'object', additionalProperties: false, required: ['configuration'], properties: { configuration: GAME_MOD_SCHEMA } },
      response: { 200: responseSchema }
    }
  }, async request => {
    const { configuration } = request.body as { configuration: Record<string, unknown> }
    return { configuration: await app.hr.gameMod.set(profileOf(request), configuration) }
  })
}
