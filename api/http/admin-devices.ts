// Admin API for device pairing (operator CLI: `hr-relay admin device ...`):
//   POST   /admin/devices {device_id, username, kind?, name?} → 201 {device_id, mqtt_username, mqtt_password}
//          (the password is shown once and stored only as a scrypt hash)
//   GET    /admin/devices            → {devices: [{device_id, username, profile_id, kind, name, mqtt_username, created_at, state}]}
//   GET    /admin/devices/unpaired   → {devices: [sightings not paired, most recent first]}
//   GET    /admin/devices/nearby     → {devices: [the same, strongest signal first, each with `nearest`], nearest: device_id | null}
//   DELETE /admin/devices/:device_id → {device_id, removed: true}
import { Type } from '@sinclair/typebox'
import type { FastifyPluginAsyncTypebox, TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { ApiError } from '../errors.ts'
import { checkAdmin, type AdminUses } from './admin.ts'
import { DEVICE_KINDS, DeviceExistsError, InvalidAntDeviceIdError, InvalidDeviceIdError, type DeviceState } from '../store/devices.ts'
import { nearbyUnpaired } from '../store/device-sightings.ts'
import { Enum, Params } from './schema.ts'
import type { Services } from '../services.ts'

/** What device pairing uses: the device registry and the accounts it pairs to. */
export type AdminDevicesUses = AdminUses & Pick<Services, 'devices' | 'users'>

const state = {
  type: ['object', 'null'],
  properties: {
    source: { type: 'string' },
    connected: { type: 'boolean' },
    seen_at: { type: 'integer' },
    name: { type: 'string' },
    rssi: { type: 'number' },
    battery_percent: { type: 'number' },
    last_reading: { type: 'object', properties: { heart_rate: { type: 'number' }, measured_at: { type: 'integer' } } }
  }
}

const sighting = {
  type: 'object',
  properties: { device_id: { type: 'string' }, ...state.properties }
}

function stateView (s: DeviceState | undefined): Omit<DeviceState, 'device_id'> | null {
  if (s === undefined) return null
  const { device_id: _id, ...rest } = s
  return rest
}

export const adminDevicesPlugin: FastifyPluginAsyncTypebox<AdminDevicesUses> = async (app, uses) => {
  const { devices, users } = uses
  await app.register(async scope => {
    const admin = scope.withTypeProvider<TypeBoxTypeProvider>()
    admin.addHook('onRequest', async (request, reply) => { checkAdmin(uses, request, reply) })

    admin.post('/admin/devices', {
      schema: {
        body: Type.Object({
          device_id: Type.String({ pattern: '^[A-Za-z0-9:_.-]{1,64}$' }),
          username: Type.String({ minLength: 1, maxLength: 100 }),
          kind: Type.Optional(Enum(DEVICE_KINDS)),
          name: Type.Optional(Type.String({ minLength: 1, maxLength: 100 }))
        }, { additionalProperties: false }),
        response: {
          201: {
            type: 'object',
            properties: {
              device_id: { type: 'string' },
              profile_id: { type: 'string' },
              kind: { type: 'string' },
              mqtt_username: { type: ['string', 'null'] },
              mqtt_password: { type: ['string', 'null'] }
            }
          }
        }
      }
    }, async (request, reply) => {
      const body = request.body
      const user = await users.byUsername(body.username)
      if (user === undefined) throw new ApiError('not_found', { detail: `no user ${body.username}` })
      try {
        const { device, mqtt_password: password } = await devices.add({
          device_id: body.device_id,
          profile_id: user.profile_id,
          ...(body.kind === undefined ? {} : { kind: body.kind }),
          ...(body.name === undefined ? {} : { name: body.name })
        })
        request.log.info({ device_id: device.device_id, profile_id: device.profile_id, kind: device.kind }, 'device paired')
        return await reply.code(201).header('cache-control', 'no-store').send({
          device_id: device.device_id,
          profile_id: device.profile_id,
          kind: device.kind,
          mqtt_username: device.mqtt_username ?? null,
          mqtt_password: password
        })
      } catch (err) {
        if (err instanceof DeviceExistsError) throw new ApiError('conflict', { detail: err.message })
        if (err instanceof InvalidDeviceIdError || err instanceof InvalidAntDeviceIdError) throw new ApiError('invalid_request', { detail: err.message })
        throw err
      }
    })

    admin.get('/admin/devices', {
      schema: {
        response: {
          200: {
            type: 'object',
            properties: {
              devices: {
                type: 'array',
                items: {
                  type: 'object',
                  properties: {
                    device_id: { type: 'string' },
                    profile_id: { type: 'string' },
                    username: { type: ['string', 'null'] },
                    kind: { type: 'string' },
                    name: { type: 'string' },
                    mqtt_username: { type: ['string', 'null'] },
                    created_at: { type: 'integer' },
                    state
                  }
                }
              }
            }
          }
        }
      }
    }, async () => {
      const list = await Promise.all(devices.list().map(async d => ({
        device_id: d.device_id,
        profile_id: d.profile_id,
        username: (await users.get(d.profile_id))?.username ?? null,
        kind: d.kind,
        ...(d.name === undefined ? {} : { name: d.name }),
        mqtt_username: d.mqtt_username ?? null,
        created_at: d.created_at,
        state: stateView(devices.stateOf(d.device_id))
      })))
      return { devices: list }
    })

    admin.get('/admin/devices/unpaired', {
      schema: { response: { 200: { type: 'object', properties: { devices: { type: 'array', items: sighting } } } } }
    }, async () => ({ devices: devices.unpaired() }))

    admin.get('/admin/devices/nearby', {
      schema: {
        response: {
          200: {
            type: 'object',
            properties: {
              devices: { type: 'array', items: { ...sighting, properties: { ...sighting.properties, nearest: { type: 'boolean' } } } },
              nearest: { type: ['string', 'null'] }
            }
          }
        }
      }
    }, async () => {
      const list = nearbyUnpaired(devices.unpaired(), Date.now())
      return { devices: list, nearest: list.find(d => d.nearest)?.device_id ?? null }
    })

    admin.delete('/admin/devices/:device_id', { schema: { params: Params({ device_id: Type.String() }) } }, async request => {
      const { device_id: id } = request.params
      const removed = await devices.remove(id)
      if (removed === undefined) throw new ApiError('not_found', { detail: `no paired device ${id}` })
      request.log.info({ device_id: removed.device_id }, 'device unpaired')
      return { device_id: removed.device_id, removed: true }
    })
  })
}
