// Game-mod configuration (spec 4.5, 2.6). Read: 404 JSON (9404) when unset.
// Write replaces the whole object and answers with all twelve keys (unset ones
// null); wrong types and unknown keys are 400 code 7013 (types: api/store/gamemod.ts).
import { Type } from '@sinclair/typebox'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { ApiError } from '../errors.ts'
import { guard, type GuardUses } from './data-auth.ts'
import type { Services } from '../services.ts'
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

/** What the game-mod routes use: the game-mod configuration store. */
export type GameModUses = GuardUses & Pick<Services, 'gameMod'>

export const gameModPlugin: FastifyPluginAsyncTypebox<GameModUses> = async (app, uses) => {
  const { gameMod } = uses
  app.get(PATH, {
    onRequest: guard(uses, { scope: 'game_mod:configuration:read' }),
    schema: { response: { 200: responseSchema } }
  }, async request => {
    const configuration = await gameMod.get(profileOf(request))
    if (configuration === undefined) throw new ApiError('not_found', { detail: 'no game-mod configuration' })
    return { configuration }
  })

  app.post(PATH, {
    onRequest: guard(uses, { scope: 'game_mod:configuration:write' }),
    schema: {
      body: Type.Object({ configuration: Type.Unsafe<Record<string, unknown>>(GAME_MOD_SCHEMA) }, { additionalProperties: false }),
      response: { 200: responseSchema }
    }
  }, async request => {
    return { configuration: await gameMod.set(profileOf(request), request.body.configuration) }
  })
}
