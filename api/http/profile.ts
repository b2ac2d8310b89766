// GET /api/v1/profile (spec 4.4, 2.5): the flat profile. `heart_rate` is true
// when the user has ever had a stored reading.
import type { FastifyPluginAsync } from 'fastify'
import { ApiError } from '../errors.ts'
import { guard, type GuardUses } from './data-auth.ts'
import type { Services } from '../services.ts'
import { profileOf } from './auth.ts'

/** What the profile uses: the account and whether it has a stored reading. */
export type ProfileUses = GuardUses & Pick<Services, 'users' | 'readings'>

export const profilePlugin: FastifyPluginAsync<ProfileUses> = async (app, uses) => {
  const { users, readings } = uses
  app.get('/api/v1/profile', {
    onRequest: guard(uses, { scope: 'profile:read' }),
    schema: {
      response: {
        200: {
          type: 'object',
          additionalProperties: false,
          required: ['channel', 'username', 'mobile_login', 'heart_rate'],
          properties: { channel: { type: 'string' }, username: { type: 'string' }, mobile_login: { type: 'boolean' }, heart_rate: { type: 'boolean' } }
        }
      }
    }
  }, async request => {
    const profileId = profileOf(request)
    const user = await users.get(profileId)
    if (user === undefined) throw new ApiError('token_not_found')
    return {
      channel: user.channel,
      username: user.username,
      mobile_login: user.mobile_login,
      heart_rate: (await readings.latest(profileId)) !== undefined
    }
  })
}
