// Admin API for integrations (operator CLI: `hr-relay admin integration add`,
// `hr-relay admin user set <name> --home-assistant on|off`):
//   POST /admin/integrations {name: "home-assistant"} → 201 {mqtt_username, mqtt_password}
//        (the password is shown once; only its digest is stored; a second add replaces it
//        and disconnects the connections made with the old one); 409 with a detail that
//        says how to turn it on while the integration is off (home_assistant.enabled), since
//        the broker refuses every login of a disabled integration
//   PUT  /admin/users/:username/home-assistant {enabled} → {username, home_assistant}
import { Type } from '@sinclair/typebox'
import type { FastifyPluginAsyncTypebox, TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { ApiError } from '../errors.ts'
import { checkAdmin, type AdminUses } from './admin.ts'
import { Enum, Params } from './schema.ts'
import { INTEGRATION_NAMES, type Integrations } from '../store/integrations.ts'
import type { Services } from '../services.ts'

/** What the integration routes use besides the integrations store: the accounts that opt in. */
export type AdminIntegrationsUses = AdminUses & Pick<Services, 'users'>

/** Which integrations this relay runs (from its configuration; none by default); credentials are issued only for those. */
export interface IntegrationsEnabled { home_assistant: boolean }

/** The 409 detail of `integration add` for an integration that is off. */
export const HOME_ASSISTANT_OFF = 'Home Assistant is off on this relay: set "home_assistant": {"enabled": true} in the configuration ' +
  '(or start with HR_RELAY_HOME_ASSISTANT=1), restart hr-relay, then add the integration'

export function adminIntegrationsPlugin (integrations: Integrations, enabled: IntegrationsEnabled = { home_assistant: false }): FastifyPluginAsyncTypebox<AdminIntegrationsUses> {
  return async (app, uses) => {
    const { users } = uses
    await app.register(async scope => {
      const admin = scope.withTypeProvider<TypeBoxTypeProvider>()
      admin.addHook('onRequest', async (request, reply) => { checkAdmin(uses, request, reply) })

      admin.post('/admin/integrations', {
        schema: {
          body: Type.Object({ name: Enum(INTEGRATION_NAMES) }, { additionalProperties: false }),
          response: { 201: { type: 'object', properties: { mqtt_username: { type: 'string' }, mqtt_password: { type: 'string' } } } }
        }
      }, async (request, reply) => {
        const { name } = request.body
        if (name === 'home-assistant' && !enabled.home_assistant) throw new ApiError('conflict', { detail: HOME_ASSISTANT_OFF })
        const { record, mqtt_password: password } = await integrations.add(name)
        request.log.info({ integration: name }, 'integration credentials issued')
        return await reply.code(201).header('cache-control', 'no-store').send({ mqtt_username: record.mqtt_username, mqtt_password: password })
      })

      admin.put('/admin/users/:username/home-assistant', {
        schema: {
          params: Params({ username: Type.String() }),
          body: Type.Object({ enabled: Type.Boolean() }, { additionalProperties: false }),
          response: { 200: { type: 'object', properties: { username: { type: 'string' }, home_assistant: { type: 'boolean' } } } }
        }
      }, async request => {
        const { username } = request.params
        const user = await users.byUsername(username)
        if (user === undefined) throw new ApiError('not_found', { detail: `no user ${username}` })
        const updated = await users.setHomeAssistant(user.profile_id, request.body.enabled)
        return { username: user.username, home_assistant: updated?.home_assistant === true }
      })
    })
  }
}
