// Widgets (spec 4.3): create, list, update, plus DELETE (hr-relay's addition:
// revokes the widget and its public overlay stream /widgets/<id>/stream).
// Only the basic bpm widget's meta id is supported; anything else is 400 7014.
import type { FastifyInstance } from 'fastify'
import { ApiError } from '../errors.ts'
import { guard } from './data-auth.ts'
import { profileOf } from './auth.ts'
import { SUPPORTED_META_IDS, TooManyWidgetsError, publicWidget } from '../store/widgets.ts'

const widgetSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['id', 'meta_id', 'name', 'configuration', 'premium'],
  properties: { id: { type: 'string' }, meta_id: { type: 'string' }, name: { type: 'string' }, configuration: {}, premium: { type: 'boolean' } }
}
const one = { type: 'object', additionalProperties: false, required: ['widget'], properties: { widget: widgetSchema } }
const params = { type: 'object', properties: { widget_id: { type: 'string', maxLength: 100 } } }
// configuration: any JSON value (the body is JSON, so it is valid JSON); null is refused.
const configuration = { anyOf: [{ type: 'object' }, { type: 'array' }, { type: 'string' }, { type: 'number' }, { type: 'boolean' }] }

export async function widgetsPlugin (app: FastifyInstance): Promise<void> {
  const update = guard(app, { scope: 'widgets:update' })

  app.post('/api/v1/widgets', {
    onRequest: update,
    schema: {
      body: {
        type: 'object',
        additionalProperties: false,
        required: ['configuration', 'name', 'meta_id'],
        properties: { configuration, name: { type: 'string', minLength: 1, maxLength: 200 }, meta_id: { type: 'string', maxLength: 100 } }
      },
      response: { 200: one }
    }
  }, async request => {
    const body = request.body as { configuration: unknown, name: string, meta_id: string }
    if (!SUPPORTED_META_IDS.has(body.meta_id)) throw new ApiError('not_supported_meta_id')
    try {
      return { widget: publicWidget(await app.hr.widgets.create(profileOf(request), body)) }
    } catch (err) {
      if (err instanceof TooManyWidgetsError) throw new ApiError('conflict', { detail: err.message })
      throw err
    }
  })

  app.get('/api/v1/widgets', {
    onRequest: guard(app, { scope: 'widgets:read' }),
    schema: { response: { 200: { type: 'object', additionalProperties: false, required: ['widgets'], properties: { widgets: { type: 'array', items: widgetSchema } } } } }
  }, async request => ({ widgets: (await app.hr.widgets.list(profileOf(request))).map(publicWidget) }))

  app.post('/api/v1/widgets/:widget_id', {
    onRequest: update,
    schema: {
      params,
      body: { type: 'object', additionalProperties: false, required: ['configuration'], properties: { configuration, name: { type: 'string', minLength: 1, maxLength: 200 } } },
      response: { 200: one }
    }
  }, async request => {
    const { widget_id: id } = request.params as { widget_id: string }
    const body = request.body as { configuration: unknown, name?: string }
    const w = await app.hr.widgets.update(profileOf(request), id, body)
    if (w === undefined) throw new ApiError('not_found', { detail: 'no such widget' })
    return { widget: publicWidget(w) }
  })

  app.delete('/api/v1/widgets/:widget_id', {
    onRequest: update,
    schema: { params, response: { 200: { type: 'object', additionalProperties: false, properties: { id: { type: 'string' }, deleted: { type: 'boolean' } } } } }
  }, async request => {
    const { widget_id: id } = request.params as { widget_id: string }
    if (!await app.hr.widgets.delete(profileOf(request), id)) throw new ApiError('not_found', { detail: 'no such widget' })
    return { id, deleted: true }
  })
}
