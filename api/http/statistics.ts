// GET /api/v1/statistics?time_range=24h|7d|30d (spec 4.2, 2.3). Definitions of
// each field, the stream gap and the Keytel (2005) calorie equation: api/stats.ts.
import type { FastifyInstance } from 'fastify'
import { ApiError } from '../errors.ts'
import { guard } from './data-auth.ts'
import { profileOf } from './auth.ts'
import { statistics, TIME_RANGES, type TimeRange } from '../stats.ts'

const num = { type: 'number' }

export async function statisticsPlugin (app: FastifyInstance): Promise<void> {
  app.get('/api/v1/statistics', {
    onRequest: guard(app, { scope: 'data:statistics:read' }),
    schema: {
      querystring: { type: 'object', properties: { time_range: { type: 'string' } } },
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
    const range = (request.query as { time_range?: string }).time_range ?? '24h'
    if (!Object.hasOwn(TIME_RANGES, range)) throw new ApiError('unsupported_time_range')
    const profileId = profileOf(request)
    const user = await app.hr.users.get(profileId)
    const body = {
      ...(user?.age === undefined ? {} : { age: user.age }),
      ...(user?.weight_kg === undefined ? {} : { weight_kg: user.weight_kg }),
      ...(user?.sex === undefined ? {} : { sex: user.sex })
    }
    return await statistics(app.hr.readings, profileId, range as TimeRange, body)
  })
}
