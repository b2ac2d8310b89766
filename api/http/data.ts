// POST /api/v1/data (write a reading) and GET /api/v1/data/heart_rate/latest
// (spec 4.2). The write goes through the one ingest pipeline and answers 200
// `{}` only after the reading is durably stored (or silently dropped: a heart
// rate of 0 or below is accepted and not stored, spec 8.2; a duplicate of a
// stored reading). The body schema's limits are the reading contract's
// (firmware-protocol/reading-contract.ts); a reading the pipeline will not
// store for any other reason (measured_at outside the window, a deleted
// user) is 400 `7013`, never 200.
import { Type } from '@sinclair/typebox'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { ApiError } from '../errors.ts'
import { guard, responseMode, type GuardUses } from './data-auth.ts'
import { profileOf } from './auth.ts'
import { LATEST_PATH, latestLane } from './latest-lane.ts'
import { isRefused } from '../pipeline/reading.ts'
import { HEART_RATE, MEASURED_AT } from '../../firmware-protocol/reading-contract.ts'
import type { Services } from '../services.ts'

/** What the data routes use: the ingest pipeline to write, the readings store to read the latest. */
export type DataUses = GuardUses & Pick<Services, 'pipeline' | 'readings'>

const errorBody = { type: 'object', properties: { error_code: { type: 'number' }, error_message: { type: 'string' } } }

export const dataPlugin: FastifyPluginAsyncTypebox<DataUses> = async (app, uses) => {
  const { pipeline, readings } = uses
  app.post('/api/v1/data', {
    // Token in the header or the access_token query (spec 5.2); a missing write scope is 401 (spec 7).
    onRequest: guard(uses, { scope: 'data:heart_rate:write', query: true, scopeError: { name: 'invalid_scope', status: 401 } }),
    schema: {
      querystring: Type.Object({ access_token: Type.Optional(Type.String()) }),
      body: Type.Object({
        measured_at: Type.Number({ minimum: MEASURED_AT.min, maximum: MEASURED_AT.max }),
        data: Type.Object({ heart_rate: Type.Integer({ maximum: HEART_RATE.max }) })
      }),
      response: { 200: { type: 'object', additionalProperties: false, properties: {} } }
    }
  }, async request => {
    const body = request.body
    let result
    try {
      result = await pipeline.submit({ profile_id: profileOf(request), measured_at: body.measured_at, heart_rate: body.data.heart_rate, source: 'http' })
    } catch (err) {
      throw new ApiError('unexpected', { cause: err })
    }
    if (isRefused(result)) throw new ApiError('invalid_request', { detail: `reading not stored: ${result.reason}` })
    return {}
  })

  // The plain poll is answered in front of the router when all it needs is in memory (latest-lane.ts).
  app.addFastLane(latestLane(uses))
  app.get(LATEST_PATH, {
    onRequest: guard(uses, { scope: 'data:heart_rate:read' }),
    schema: {
      querystring: Type.Object({ response_mode: Type.Optional(Type.String()) }),
      response: {
        200: {
          type: 'object',
          required: ['measured_at', 'data'],
          properties: { measured_at: { type: 'number' }, data: { type: 'object', required: ['heart_rate'], properties: { heart_rate: { type: 'number' } } } }
        },
        412: errorBody
      }
    }
  }, async (request, reply) => {
    const mode = responseMode(request.query.response_mode)
    let latest
    try {
      latest = await readings.latest(profileOf(request))
    } catch (err) {
      throw new ApiError('latest_failed', { cause: err })
    }
    if (latest === undefined) throw new ApiError('no_heart_rate_data')
    if (mode === 'text_plain_only_heart_rate') {
      return await reply.header('content-type', 'text/plain; charset=UTF-8').send(String(latest.heart_rate))
    }
    return { measured_at: latest.measured_at, data: { heart_rate: latest.heart_rate } }
  })
}
