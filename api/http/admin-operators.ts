// Admin API of the operator accounts (operator CLI: `hr-relay admin operator add|list|remove`):
//   POST   /admin/operators {name, role: owner|coach, password} → 201 {name, role, created_at}
//   GET    /admin/operators                                     → {operators: [{name, role, created_at}]}
//   DELETE /admin/operators/:name                               → {name, role, created_at} (409 for the last owner)
import { Type } from '@sinclair/typebox'
import type { FastifyPluginAsyncTypebox, TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { ApiError } from '../errors.ts'
import { checkAdmin, type AdminUses } from './admin.ts'
import { Params } from './schema.ts'
import { OperatorError, operatorsOf, type OperatorRole } from '../store/operators.ts'
import type { Services } from '../services.ts'

export type AdminOperatorsUses = AdminUses & Pick<Services, 'store'>

const View = { type: 'object', properties: { name: { type: 'string' }, role: { type: 'string' }, created_at: { type: 'number' } } } as const

function apiError (err: unknown): unknown {
  if (!(err instanceof OperatorError)) return err
  switch (err.reason) {
    case 'exists': case 'last_owner': return new ApiError('conflict', { detail: err.message })
    case 'not_found': return new ApiError('not_found', { detail: err.message })
    default: return new ApiError('invalid_request', { detail: err.message })
  }
}

export const adminOperatorsPlugin: FastifyPluginAsyncTypebox<AdminOperatorsUses> = async (app, uses) => {
  const operators = operatorsOf(uses.store)
  await app.register(async scope => {
    const admin = scope.withTypeProvider<TypeBoxTypeProvider>()
    admin.addHook('onRequest', async (request, reply) => { checkAdmin(uses, request, reply) })
    admin.post('/admin/operators', {
      schema: {
        body: Type.Object({ name: Type.String({ maxLength: 64 }), role: Type.Union([Type.Literal('owner'), Type.Literal('coach')]), password: Type.String({ maxLength: 200 }) }, { additionalProperties: false }),
        response: { 201: View }
      }
    }, async (request, reply) => {
      try {
        const added = await operators.add(request.body.name, request.body.role as OperatorRole, request.body.password)
        return await reply.code(201).send(added)
      } catch (err) { throw apiError(err) }
    })
    admin.get('/admin/operators', { schema: { response: { 200: { type: 'object', properties: { operators: { type: 'array', items: View } } } } } }, async () => ({ operators: await operators.list() }))
    admin.delete('/admin/operators/:name', { schema: { params: Params({ name: Type.String({ maxLength: 64 }) }), response: { 200: View } } }, async request => {
      try { return await operators.remove(request.params.name) } catch (err) { throw apiError(err) }
    })
  })
}
