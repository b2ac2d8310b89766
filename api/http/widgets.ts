// Widgets (spec 4.3): create, list, update, plus DELETE (hr-relay's addition:
// revokes the widget and its public overlay stream /widgets/<id>/stream).
// Only the basic bpm widget's meta id is supported; anything else is 400 7014.
import { Type } from '@sinclair/typebox'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { ApiError } from '../errors.ts'
import { guard, type GuardUses } from './data-auth.ts'
import { Params } from './schema.ts'
import type { Services } from '../services.ts'
import { profileOf } from './auth.ts'
import { SUPPORTED_META_IDS, TooManyWidgetsError, publicWidget } from '../store/widgets.ts'

const widgetSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['id', 'meta_id', 'name', 'configuration', 'premium'],
  properties: { id: { type: 'string' }, meta_id: { type: 'string' }, name: { type: 'string' }, configuration: {}, premium: { type: 'boolean' } }
}
const one = { type: 'object', additionalProperties: false, required: ['widget'], properties: { widget: widgetSchema } }
const params = Params({ widget_id: Type.String({ maxLength: 100 }) })
// configuration: any JSON value (the body is JSON, so it is valid JSON); null is refused.
const configuration = Type.Unsafe<unknown>({ anyOf: [{ type: 'object' }, { type: 'array' }, { type: 'string' }, { type: 'number' }, { type: 'boolean' }] })
const name = Type.String({ minLength: 1, maxLength: 200 })

/** What the widget routes use: the widget store (and the guard's token store and rate limit). */
export type WidgetsUses = GuardUses & Pick<Services, 'widgets'>

export const widgetsPlugin: FastifyPluginAsyncTypebox<WidgetsUses> = async (app, uses) => {
  const { widgets } = uses
  const update = guard(uses, { scope: 'widgets:update' })

  app.post('/api/v1/widgets', {
    onRequest: update,
    schema: {
      body: Type.Object({ configuration, name, meta_id: Type.String({ maxLength: 100 }) }, { additionalProperties: false }),
      response: { 200: one }
    }
  }, async request => {
    const body = request.body
    if (!SUPPORTED_META_IDS.has(body.meta_id)) throw new ApiError('not_supported_meta_id')
    try {
      return { widget: publicWidget(await widgets.create(profileOf(request), body)) }
    } catch (err) {
      if (err instanceof TooManyWidgetsError) throw new ApiError('conflict', { detail: err.message })
      throw err
    }
  })

  app.get('/api/v1/widgets', {
    onRequest: guard(uses, { scope: 'widgets:read' }),
    schema: { response: { 200: { type: 'object', additionalProperties: false, required: ['widgets'], properties: { widgets: { type: 'array', items: widgetSchema } } } } }
  }, async request => ({ widgets: (await widgets.list(profileOf(request))).map(publicWidget) }))

  app.post('/api/v1/widgets/:widget_id', {
    onRequest: update,
    schema: {
      params,
      body: Type.Object({ configuration, name: Type.Optional(name) }, { additionalProperties: false }),
      response: { 200: one }
    }
  }, async request => {
    const w = await widgets.update(profileOf(request), request.params.widget_id, request.body)
    if (w === undefined) throw new ApiError('not_found', { detail: 'no such widget' })
    return { widget: publicWidget(w) }
  })

  app.delete('/api/v1/widgets/:widget_id', {
    onRequest: update,
    schema: { params, response: { 200: { type: 'object', additionalProperties: false, properties: { id: { type: 'string' }, deleted: { type: 'boolean' } } } } }
  }, async request => {
    const { widget_id: id } = request.params
    if (!await widgets.delete(profileOf(request), id)) throw new ApiError('not_found', { detail: 'no such widget' })
    return { id, deleted: true }
  })
}
