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
import type { FastifyReply, FastifyRequest } from 'fastify'
import { ApiError } from '../errors.ts'
import { guard, guardNow, responseMode, type GuardUses, type ResponseMode } from './data-auth.ts'
import { profileOf, type AuthOptions } from './auth.ts'
import { isRefused } from '../pipeline/reading.ts'
import { HEART_RATE, MEASURED_AT } from '../../firmware-protocol/reading-contract.ts'
import type { Services } from '../services.ts'
import type { LatestRecord } from '../store/types.ts'

/** What the data routes use: the ingest pipeline to write, the readings store to read the latest. */
export type DataUses = GuardUses & Pick<Services, 'pipeline' | 'readings'>

export const LATEST_PATH = '/api/v1/data/heart_rate/latest'
const READ: AuthOptions = { scope: 'data:heart_rate:read' }

/** A poll of the latest reading: its querystring is validated or not (attachValidation). */
type LatestRequest = FastifyRequest & { query: { response_mode?: unknown } }

/** The error body (errors.ts) of each error status a route answers, for its serializer. */
const ErrorBody = Type.Object({ error_code: Type.Number(), error_message: Type.String(), detail: Type.Optional(Type.String()) })

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
    if (isRefused(result) && result.reason === 'no_consent') throw new ApiError('consent_required', { detail: 'the member has not consented to the current privacy notice: accept it on /me' })
    if (isRefused(result)) throw new ApiError('invalid_request', { detail: `reading not stored: ${result.reason}` })
    return {}
  })

  // What widgets and apps poll every second or so. No route hooks: the handler authenticates first (the token
  // in the header only), and answers in callback style without a promise when the token and the reading are in
  // memory (the token store's and the readings' caches); otherwise it waits for the store. Each status it
  // answers has a response schema, so Fastify serializes the body with fast-json-stringify.
  app.get(LATEST_PATH, {
    attachValidation: true,
    validatorCompiler: latestQueryValidator,
    schema: {
      querystring: Type.Object({ response_mode: Type.Optional(Type.String()) }),
      response: {
        200: Type.Object({ measured_at: Type.Number(), data: Type.Object({ heart_rate: Type.Number() }) }),
        400: ErrorBody,
        401: ErrorBody,
        403: ErrorBody,
        412: ErrorBody,
        422: ErrorBody,
        429: ErrorBody,
        500: ErrorBody
      }
    }
  }, (request, reply) => { pollLatest(request, reply) })

  /** Authenticates a poll, then answers it: without a promise when the token is in the token store's cache. */
  function pollLatest (request: LatestRequest, reply: FastifyReply): void {
    let profile: string | Promise<string>
    try { profile = guardNow(uses, request, reply, READ) } catch (err) { reply.send(err); return }
    if (typeof profile === 'string') answerLatest(request, reply, profile)
    else profile.then(p => { answerLatest(request, reply, p) }, (err: unknown) => { reply.send(err) })
  }

  /** The answer to a poll whose profile is known: the reading from the latest-reading cache, or from the store. */
  function answerLatest (request: LatestRequest, reply: FastifyReply, profile: string): void {
    // The querystring's error, raised only now: a refused token is answered first, as the guard does in onRequest.
    if (request.validationError !== undefined) { reply.send(request.validationError); return }
    let mode: ResponseMode
    try { mode = responseMode(request.query.response_mode) } catch (err) { reply.send(err); return }
    const cached = readings.cachedLatest(profile)
    if (cached !== undefined) { sendLatest(reply, mode, cached); return }
    readings.latest(profile).then(
      latest => { sendLatest(reply, mode, latest ?? null) },
      (err: unknown) => { reply.send(new ApiError('latest_failed', { cause: err })) })
  }
}

/**
 * The poll's querystring validator: the rule of its schema (response_mode, when given, is one string; a repeated
 * parameter is an array) checked by hand, with Ajv's error text, instead of a call to Ajv with an options object on
 * every poll. The schema stays the route's, for the API document.
 */
function latestQueryValidator (): (query: unknown) => true | { error: Error } {
  return query => {
    const mode = (query as { response_mode?: unknown } | null)?.response_mode
    return mode === undefined || typeof mode === 'string' ? true : { error: new Error('querystring/response_mode must be string') }
  }
}

/** Sends the latest reading in the response mode, or 412 when the profile has none (null). */
function sendLatest (reply: FastifyReply, mode: ResponseMode, latest: LatestRecord | null): void {
  if (latest === null) reply.send(new ApiError('no_heart_rate_data'))
  else if (mode === 'text_plain_only_heart_rate') reply.header('content-type', 'text/plain; charset=UTF-8').send(String(latest.heart_rate))
  else reply.send({ measured_at: latest.measured_at, data: { heart_rate: latest.heart_rate } })
}
