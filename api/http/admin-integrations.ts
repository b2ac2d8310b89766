// Admin API for integrations (operator CLI: `hr-relay admin integration add`,
// `hr-relay admin user set <name> --home-assistant on|off`):
//   POST /admin/integrations {name: "home-assistant"} → 201 {mqtt_username, mqtt_password}
//        (the password is shown once; only its digest is stored; a second add replaces it
//        and disconnects the connections made with the old one)
//   PUT  /admin/users/:username/home-assistant {enabled} → {username, home_assistant}
import type { FastifyInstance, FastifyPluginAsync } from 'fastify'
import { ApiError } from '../errors.ts'
import { checkAdmin } from './admin.ts'
import { INTEGRATION_NAMES, type IntegrationName, type Integrations } from '../store/integrations.ts'

export function adminIntegrationsPlugin (integrations: Integrations): FastifyPluginAsync {
  return async (app: FastifyInstance): Promise<void> => {
    await app.register(async admin => {
      admin.addHook('onRequest', async (request, reply) => { checkAdmin(app, request, reply) })

      admin.post('/admin/integrations', {
        schema: {
          body: { type: 'object', required: ['name'], additionalProperties: false, properties: { name: { enum: INTEGRATION_NAMES } } },
          response: { 201: { type: 'object', properties: { mqtt_username: { type: 'string' }, mqtt_password: { type: 'string' } } } }
        }
      }, async (request, reply) => {
        const { name } = request.body as { name: IntegrationName }
        const { record, mqtt_password: password } = await integrations.add(name)
        request.log.info({ integration: name }, 'integration credentials issued')
        return await reply.code(201).header('cache-control', 'no-store').send({ mqtt_username: record.mqtt_username, mqtt_password: password })
      })

      admin.put('/admin/users/:username/home-assistant', {
        schema: {
          body: { type: 'object', required: ['enabled'], additionalProperties: false, properties: { enabled: { type: 'boolean' } } },
          response: { 200: { type: 'object', properties: { username: { type: 'string' }, home_assistant: { type: 'boolean' } } } }
        }
      }, async request => {
        const { username } = request.params as { username: string }
        const user = await app.hr.users.byUsername(username)
        if (user === undefined) throw new ApiError('not_found', { detail: `no user ${username}` })
        const { enabled } = request.body as { enabled: boolean }
        const updated = await app.hr.users.setHomeAssistant(user.profile_id, enabled)
        return { username: user.username, home_assistant: updated?.home_assistant === true }
      })
    })
  }
}
