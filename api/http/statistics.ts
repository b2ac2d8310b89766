// GET /api/v1/statistics?time_range=24h|7d|30d (spec 4.2, 2.3). Definitions of
// each field, the stream gap and the Keytel (2005) calorie equation: api/stats.ts.
import { Type } from '@sinclair/typebox'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { ApiError } from '../errors.ts'
import { guard, type GuardUses } from './data-auth.ts'
import type { Services } from '../services.ts'
import { profileOf } from './auth.ts'
import { statistics, TIME_RANGES, type TimeRange } from '../stats.ts'

const num = { type: 'number' }

/** What the statistics use: the stored readings and the user's body (for the calorie equation). */
export type StatisticsUses = GuardUses & Pick<Services, 'users' | 'readings'>

export const statisticsPlugin: FastifyPluginAsyncTypebox<StatisticsUses> = async (app, uses) => {
  const { users, readings } = uses
  app.get('/api/v1/statistics', {
    onRequest: guard(uses, { scope: 'data:statistics:read' }),
    schema: {
      querystring: Type.Object({ time_range: Type.Optional(Type.String()) }),
      response: {
        200: {
          type: 'object',
          additionalProperties: false,
          required: ['maximum_beats_per_minute', 'minimum_beats_per_minute', 'average_beats_per_minute', 'streamed_duration_in_seconds', 'calories_burned_in_kcal'],
          properties: { maximum_beats_per_minute: num, minimum_beats_per_minute: num, average_beats_per_minute: num, streamed_duration_in_seconds: num, calories_burned_in_kcal: num }
        }
      }
    }
  }, async request => {
    const range = request.query.time_range ?? '24h'
    if (!Object.hasOwn(TIME_RANGES, range)) throw new ApiError('unsupported_time_range')
    const profileId = profileOf(request)
    const user = await users.get(profileId)
    const body = {
      ...(user?.age === undefined ? {} : { age: user.age }),
      ...(user?.weight_kg === undefined ? {} : { weight_kg: user.weight_kg }),
      ...(user?.sex === undefined ? {} : { sex: user.sex })
    }
    return await statistics(readings, profileId, range as TimeRange, body)
  })
}
