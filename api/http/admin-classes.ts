// Admin API for classes (the CLI's `hr-relay admin room class ...`, the
// operator pages): start and end a room's class, and read the class on view.
// Same admin-token authentication as api/http/admin.ts. A refused command
// (ClassError) is 404 without the room or without a running class, 409 when
// one is already running.
import { Type } from '@sinclair/typebox'
import type { FastifyPluginAsyncTypebox, TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { ApiError } from '../errors.ts'
import { checkAdmin, type AdminUses } from './admin.ts'
import { Params } from './schema.ts'
import type { Services } from '../services.ts'
import { ClassError } from '../classes/types.ts'
import { MAX_MINUTES } from '../classes/engine.ts'
import { CLASS_RECORD_SCHEMA, CLASS_VIEW_SCHEMA } from './classes.ts'

const params = Params({ room_id: Type.String({ maxLength: 100 }) })
const startBody = Type.Object({
  name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
  minutes: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_MINUTES }))
}, { additionalProperties: false })

/** The API error of a refused class command. */
export function classApiError (err: unknown): unknown {
  if (!(err instanceof ClassError)) return err
  return new ApiError(err.reason === 'class_running' ? 'conflict' : 'not_found', { detail: err.message })
}

export type AdminClassesUses = AdminUses & Pick<Services, 'classes'>

export const adminClassesPlugin: FastifyPluginAsyncTypebox<AdminClassesUses> = async (app, uses) => {
  const { classes } = uses
  await app.register(async scope => {
    const admin = scope.withTypeProvider<TypeBoxTypeProvider>()
    admin.addHook('onRequest', async (request, reply) => { checkAdmin(uses, request, reply) })

    admin.post('/admin/rooms/:room_id/class', {
      schema: { params, body: Type.Optional(startBody), response: { 201: CLASS_RECORD_SCHEMA } }
    }, async (request, reply) => {
      const body = request.body ?? {}
      const rec = await classes.start(request.params.room_id, { ...(body.name === undefined ? {} : { name: body.name }), ...(body.minutes === undefined ? {} : { minutes: body.minutes }) }).catch((err: unknown) => { throw classApiError(err) })
      return await reply.code(201).send(rec)
    })

    admin.post('/admin/rooms/:room_id/class/end', {
      schema: { params, response: { 200: CLASS_RECORD_SCHEMA } }
    }, async request => {
      return await classes.end(request.params.room_id).catch((err: unknown) => { throw classApiError(err) })
    })

    admin.get('/admin/rooms/:room_id/class', {
      schema: { params, response: { 200: CLASS_VIEW_SCHEMA } }
    }, async request => {
      const view = classes.view(request.params.room_id)
      if (view === null) throw new ApiError('not_found', { detail: `no class on view in room ${request.params.room_id}` })
      return view
    })
  })
}
