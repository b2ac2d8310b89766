// Chat-app rich-presence configuration (hr-relay's definition of the
// specification's chatapp:rich_presence:config scopes; docs/integrations.md "Rich presence"). Both routes need the chatapp_rich_presence feature (402
// 7007 otherwise, checked before the body is read). Read answers the stored
// configuration, every key null when none is stored; write replaces the whole
// object, and a key it leaves out is null. Wrong types, unknown keys and long
// strings are 400 code 7013 (api/store/rich-presence.ts).
import { Type } from '@sinclair/typebox'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { guard, type GuardUses } from './data-auth.ts'
import type { Services } from '../services.ts'
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

/** What rich presence uses: the store it keeps its configuration in, and the user's features. */
export type RichPresenceUses = GuardUses & Pick<Services, 'store' | 'users'>

export const richPresencePlugin: FastifyPluginAsyncTypebox<RichPresenceUses> = async (app, uses) => {
  const store = new RichPresence(uses.store)

  app.get(PATH, {
    onRequest: [guard(uses, { scope: 'chatapp:rich_presence:config:read' }), requireFeature(uses.users, FEATURE)],
    schema: { response: { 200: responseSchema } }
  }, async request => ({ configuration: await store.get(profileOf(request)) }))

  app.post(PATH, {
    onRequest: [guard(uses, { scope: 'chatapp:rich_presence:config:write' }), requireFeature(uses.users, FEATURE)],
    schema: {
      body: Type.Object({ configuration: Type.Unsafe<Partial<RichPresenceConfig>>(RICH_PRESENCE_SCHEMA) }, { additionalProperties: false }),
      response: { 200: responseSchema }
    }
  }, async request => {
    return { configuration: await store.set(profileOf(request), request.body.configuration) }
  })
}
