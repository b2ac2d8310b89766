// Chat-app rich-presence configuration (hr-relay's definition of the
// specification's chatapp:rich_presence:config scopes; README "Rich-presence
// configuration"). Both routes need the chatapp_rich_presence feature (402
// 7007 otherwise, checked before the body is read). Read answers the stored
// configuration or the defaults; write replaces the whole object. Wrong
// types, unknown keys and long strings are 400 code 7013 (api/store/rich-presence.ts).
import type { FastifyInstance } from 'fastify'
import { guard } from './data-auth.ts'
import { profileOf } from './auth.ts'
import { requireFeature } from './feature-flags.ts'
import { RichPresence, RICH_PRESENCE_KEYS, RICH_PRESENCE_SCHEMA, type RichPresenceConfig } from '../store/rich-presence.ts'

const PATH = '/api/v1/chatapp/rich_presence/configuration'
const FEATURE = 'chatapp_rich_presence'

const responseSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['configuration'],
  properties: {
    configuration: { ...RICH_PRESENCE_SCHEMA, required: RICH_PRESENCE_KEYS }
  }
}

export async function richPresencePlugin (app: FastifyInstance): Promise<void> {
  const store = new RichPresence(app.hr.store)

  app.get(PATH, {
    onRequest: [guard(app, { scope: 'chatapp:rich_presence:config:read' }), requireFeature(app, FEATURE)],
    schema: { response: { 200: responseSchema } }
  }, async request => ({ configuration: await store.get(profileOf(request)) }))

  app.post(PATH, {
    onRequest: [guard(app, { scope: 'chatapp:rich_presence:config:write' }), requireFeature(app, FEATURE)],
    schema: {
      body: { type: 'object', additionalProperties: false, required: ['configuration'], properties: { configuration: RICH_PRESENCE_SCHEMA } },
      response: { 200: responseSchema }
    }
  }, async request => {
    const { configuration } = request.body as { configuration: Partial<RichPresenceConfig> }
    return { configuration: await store.set(profileOf(request), configuration) }
  })
}
