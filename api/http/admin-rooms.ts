// Admin API for rooms (the operator's CLI `hr-relay admin room ...`) and a
// read-only view of stored readings and ingest counters (debugging, tests).
// Same admin-token authentication as api/http/admin.ts. Every room change
// publishes its room event (room_updated, room_member_updated,
// room_member_removed) through the rooms store.
import { Type } from '@sinclair/typebox'
import type { FastifyPluginAsyncTypebox, TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { ApiError } from '../errors.ts'
import { checkAdmin, type AdminUses } from './admin.ts'
import type { RoomRecord } from '../store/rooms.ts'
import { MAX_TIMESTAMP } from '../pipeline/codec.ts'
import { Nullable, Params } from './schema.ts'
import type { Services } from '../services.ts'

const roomName = Type.String({ minLength: 1, maxLength: 200 })
const username = Type.String({ minLength: 1, maxLength: 100 })
// One schema for every route's parameters, as before (a route has the ones its path names).
const roomParams = Params({ room_id: Type.String({ maxLength: 100 }), username })
const nameBody = Type.Object({ name: roomName }, { additionalProperties: false })
const memberBody = Type.Object({
  display_name: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
  max_heart_rate: Type.Optional(Nullable('integer', { minimum: 60, maximum: 260 })),
  zones: Type.Optional(Type.Array(Type.Integer({ minimum: 1, maximum: 100 }), { minItems: 5, maxItems: 5 })),
  username
}, { additionalProperties: false })

/** What the room administration uses: rooms, the accounts of their members, and the stored readings and counters. */
export type AdminRoomsUses = AdminUses & Pick<Services, 'rooms' | 'users' | 'readings' | 'pipeline' | 'hub'>

export const adminRoomsPlugin: FastifyPluginAsyncTypebox<AdminRoomsUses> = async (app, uses) => {
  const { rooms, users, readings, pipeline, hub } = uses
  await app.register(async scope => {
    const admin = scope.withTypeProvider<TypeBoxTypeProvider>()
    admin.addHook('onRequest', async (request, reply) => { checkAdmin(uses, request, reply) })

    const view = async (r: RoomRecord): Promise<unknown> => ({
      room_id: r.room_id,
      name: r.name,
      display_id: r.display_id,
      created_at: r.created_at,
      members: await Promise.all(r.members.map(async m => ({ ...m, username: (await users.get(m.profile_id))?.username ?? null })))
    })
    const roomOr404 = (roomId: string): RoomRecord => {
      const r = rooms.get(roomId)
      if (r === undefined) throw new ApiError('not_found', { detail: `no room ${roomId}` })
      return r
    }
    const userOr404 = async (name: string): Promise<{ profile_id: string, display_name?: string, username: string, max_heart_rate?: number }> => {
      const u = await users.byUsername(name)
      if (u === undefined) throw new ApiError('not_found', { detail: `no user ${name}` })
      return u
    }

    admin.post('/admin/rooms', {
      schema: { body: nameBody }
    }, async (request, reply) => {
      const room = await rooms.create(request.body.name)
      return await reply.code(201).send({ room_id: room.room_id, name: room.name, display_id: room.display_id })
    })

    admin.get('/admin/rooms', async () => ({ rooms: await Promise.all(rooms.list().map(view)) }))

    admin.get('/admin/rooms/:room_id', { schema: { params: roomParams } }, async request => {
      return await view(roomOr404(request.params.room_id))
    })

    admin.patch('/admin/rooms/:room_id', {
      schema: { params: roomParams, body: nameBody }
    }, async request => {
      const { room_id: roomId } = request.params
      roomOr404(roomId)
      const room = await rooms.rename(roomId, request.body.name)
      if (room === undefined) throw new ApiError('not_found')
      return await view(room)
    })

    admin.post('/admin/rooms/:room_id/members', {
      schema: { params: roomParams, body: memberBody }
    }, async request => {
      const { room_id: roomId } = request.params
      roomOr404(roomId)
      const body = request.body
      const user = await userOr404(body.username)
      const existing = rooms.get(roomId)?.members.find(m => m.profile_id === user.profile_id)
      const member = await rooms.upsertMember(roomId, user.profile_id, {
        display_name: body.display_name ?? existing?.display_name ?? user.display_name ?? user.username,
        // Without --max-heart-rate the room has no maximum of its own: displays use the member's own, which a class may raise.
        ...(body.max_heart_rate !== undefined ? { max_heart_rate: body.max_heart_rate } : existing === undefined ? { max_heart_rate: null } : {}),
        ...(body.zones === undefined ? {} : { zones: body.zones })
      })
      if (member === undefined) throw new ApiError('not_found')
      return { room_id: roomId, member: { ...member, username: user.username } }
    })

    admin.delete('/admin/rooms/:room_id/members/:username', { schema: { params: roomParams } }, async request => {
      const { room_id: roomId, username: name } = request.params
      roomOr404(roomId)
      const user = await userOr404(name)
      if (!await rooms.removeMember(roomId, user.profile_id)) throw new ApiError('not_found', { detail: `${name} is not a member of room ${roomId}` })
      return { room_id: roomId, profile_id: user.profile_id, removed: true }
    })

    admin.post('/admin/rooms/:room_id/display', { schema: { params: roomParams } }, async request => {
      const { room_id: roomId } = request.params
      roomOr404(roomId)
      const room = await rooms.rotateDisplay(roomId)
      return { room_id: roomId, display_id: room?.display_id }
    })

    // Stored raw readings of a user, oldest first (from/to in ms, inclusive).
    admin.get('/admin/readings/:username', {
      schema: {
        params: roomParams,
        querystring: Type.Object({
          from: Type.Optional(Type.String({ pattern: '^[0-9]{1,13}$' })),
          to: Type.Optional(Type.String({ pattern: '^[0-9]{1,13}$' })),
          limit: Type.Optional(Type.String({ pattern: '^[0-9]{1,6}$' }))
        }, { additionalProperties: false })
      }
    }, async request => {
      const user = await userOr404(request.params.username)
      const q = request.query
      const limit = Math.min(100_000, Number(q.limit ?? 10_000))
      const stored = []
      for await (const r of readings.range(user.profile_id, Number(q.from ?? 0), Number(q.to ?? MAX_TIMESTAMP), limit)) stored.push(r)
      return { profile_id: user.profile_id, readings: stored }
    })

    admin.get('/admin/ingest', async () => ({ pipeline: pipeline.counters, hub: hub.counters, streams: hub.streams }))
  })
}
