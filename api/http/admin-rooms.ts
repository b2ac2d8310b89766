// Admin API for rooms (the operator's CLI `hr-relay admin room ...`) and a
// read-only view of stored readings and ingest counters (debugging, tests).
// Same admin-token authentication as api/http/admin.ts. Every room change
// publishes its room event (room_updated, room_member_updated,
// room_member_removed) through the rooms store.
import type { FastifyInstance } from 'fastify'
import { ApiError } from '../errors.ts'
import { checkAdmin } from './admin.ts'
import type { RoomRecord } from '../store/rooms.ts'
import { MAX_TIMESTAMP } from '../pipeline/codec.ts'

const roomName = { type: 'string', minLength: 1, maxLength: 200 }
const username = { type: 'string', minLength: 1, maxLength: 100 }
const roomParams = { type: 'object', properties: { room_id: { type: 'string', maxLength: 100 }, username } }
const memberBody = {
  type: 'object',
  additionalProperties: false,
  properties: {
    display_name: { type: 'string', minLength: 1, maxLength: 100 },
    max_heart_rate: { type: ['integer', 'null'], minimum: 60, maximum: 260 },
    zones: { type: 'array', minItems: 5, maxItems: 5, items: { type: 'integer', minimum: 1, maximum: 100 } }
  }
}

export async function adminRoomsPlugin (app: FastifyInstance): Promise<void> {
  await app.register(async admin => {
    admin.addHook('onRequest', async (request, reply) => { checkAdmin(app, request, reply) })
    const rooms = app.hr.rooms

    const view = async (r: RoomRecord): Promise<unknown> => ({
      room_id: r.room_id,
      name: r.name,
      display_id: r.display_id,
      created_at: r.created_at,
      members: await Promise.all(r.members.map(async m => ({ ...m, username: (await app.hr.users.get(m.profile_id))?.username ?? null })))
    })
    const roomOr404 = (roomId: string): RoomRecord => {
      const r = rooms.get(roomId)
      if (r === undefined) throw new ApiError('not_found', { detail: `no room ${roomId}` })
      return r
    }
    const userOr404 = async (name: string): Promise<{ profile_id: string, display_name?: string, username: string, max_heart_rate?: number }> => {
      const u = await app.hr.users.byUsername(name)
      if (u === undefined) throw new ApiError('not_found', { detail: `no user ${name}` })
      return u
    }

    admin.post('/admin/rooms', {
      schema: { body: { type: 'object', additionalProperties: false, required: ['name'], properties: { name: roomName } } }
    }, async (request, reply) => {
      const room = await rooms.create((request.body as { name: string }).name)
      return await reply.code(201).send({ room_id: room.room_id, name: room.name, display_id: room.display_id })
    })

    admin.get('/admin/rooms', async () => ({ rooms: await Promise.all(rooms.list().map(view)) }))

    admin.get('/admin/rooms/:room_id', { schema: { params: roomParams } }, async request => {
      return await view(roomOr404((request.params as { room_id: string }).room_id))
    })

    admin.patch('/admin/rooms/:room_id', {
      schema: { params: roomParams, body: { type: 'object', additionalProperties: false, required: ['name'], properties: { name: roomName } } }
    }, async request => {
      const { room_id: roomId } = request.params as { room_id: string }
      roomOr404(roomId)
      const room = await rooms.rename(roomId, (request.body as { name: string }).name)
      if (room === undefined) throw new ApiError('not_found')
      return await view(room)
    })

    admin.post('/admin/rooms/:room_id/members', {
      schema: { params: roomParams, body: { ...memberBody, required: ['username'], properties: { ...memberBody.properties, username } } }
    }, async request => {
      const { room_id: roomId } = request.params as { room_id: string }
      roomOr404(roomId)
      const body = request.body as { username: string, display_name?: string, max_heart_rate?: number | null, zones?: number[] }
      const user = await userOr404(body.username)
      const existing = rooms.get(roomId)?.members.find(m => m.profile_id === user.profile_id)
      const member = await rooms.upsertMember(roomId, user.profile_id, {
        display_name: body.display_name ?? existing?.display_name ?? user.display_name ?? user.username,
        ...(body.max_heart_rate !== undefined ? { max_heart_rate: body.max_heart_rate } : existing === undefined ? { max_heart_rate: user.max_heart_rate ?? null } : {}),
        ...(body.zones === undefined ? {} : { zones: body.zones })
      })
      if (member === undefined) throw new ApiError('not_found')
      return { room_id: roomId, member: { ...member, username: user.username } }
    })

    admin.delete('/admin/rooms/:room_id/members/:username', { schema: { params: roomParams } }, async request => {
      const { room_id: roomId, username: name } = request.params as { room_id: string, username: string }
      roomOr404(roomId)
      const user = await userOr404(name)
      if (!await rooms.removeMember(roomId, user.profile_id)) throw new ApiError('not_found', { detail: `${name} is not a member of room ${roomId}` })
      return { room_id: roomId, profile_id: user.profile_id, removed: true }
    })

    admin.post('/admin/rooms/:room_id/display', { schema: { params: roomParams } }, async request => {
      const { room_id: roomId } = request.params as { room_id: string }
      roomOr404(roomId)
      const room = await rooms.rotateDisplay(roomId)
      return { room_id: roomId, display_id: room?.display_id }
    })

    // Stored raw readings of a user, oldest first (from/to in ms, inclusive).
    admin.get('/admin/readings/:username', {
      schema: {
        params: roomParams,
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: {
            from: { type: 'string', pattern: '^[0-9]{1,13}$' },
            to: { type: 'string', pattern: '^[0-9]{1,13}$' },
            limit: { type: 'string', pattern: '^[0-9]{1,6}$' }
          }
        }
      }
    }, async request => {
      const user = await userOr404((request.params as { username: string }).username)
      const q = request.query as { from?: string, to?: string, limit?: string }
      const limit = Math.min(100_000, Number(q.limit ?? 10_000))
      const readings = []
      for await (const r of app.hr.readings.range(user.profile_id, Number(q.from ?? 0), Number(q.to ?? MAX_TIMESTAMP), limit)) readings.push(r)
      return { profile_id: user.profile_id, readings }
    })

    admin.get('/admin/ingest', async () => ({ pipeline: app.hr.pipeline.counters, hub: app.hr.hub.counters, streams: app.hr.hub.streams }))
  })
}
