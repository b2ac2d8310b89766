// GET /api/v1/features/{feature_id} (spec 4.6, 2.7). Any valid user token
// (no particular scope; spec 5.8 leaves it open). Unknown id: 404 JSON (9404).
import type { FastifyRequest } from 'fastify'
import { Type } from '@sinclair/typebox'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { ApiError } from '../errors.ts'
import { guard, type GuardUses } from './data-auth.ts'
import { Params } from './schema.ts'
import type { Services } from '../services.ts'
import { profileOf } from './auth.ts'
import { premiumActive, type UserRecord } from '../store/users.ts'

/** Whether a feature is enabled for a user; undefined for an unknown feature id. */
export const FEATURE_RULES: Record<string, (u: UserRecord, now: number) => boolean> = {
  game_mod: (u, now) => premiumActive(u, now) || u.features.includes('game_mod'),
  premium_widgets: (u, now) => premiumActive(u, now),
  deck_ingestion_pause_feature: () => true,
  chatapp_rich_presence: (u, now) => premiumActive(u, now) || u.features.includes('chatapp_rich_presence')
}

/**
 * A hook (after guard) that answers 402 premium_required (7007) unless the
 * feature is enabled for the token's user, by the same rule the feature-status
 * endpoint reports.
 */
export function requireFeature (users: Services['users'], featureId: keyof typeof FEATURE_RULES) {
  const rule = FEATURE_RULES[featureId]
  if (rule === undefined) throw new Error(`unknown feature ${featureId}`)
  return async (request: FastifyRequest): Promise<void> => {
    const user = await users.get(profileOf(request))
    if (user === undefined) throw new ApiError('token_not_found')
    if (!rule(user, Date.now())) throw new ApiError('premium_required')
  }
}

/** What the feature status uses: the user's plan and granted features. */
export type FeatureFlagsUses = GuardUses & Pick<Services, 'users'>

export const featureFlagsPlugin: FastifyPluginAsyncTypebox<FeatureFlagsUses> = async (app, uses) => {
  const { users } = uses
  app.get('/api/v1/features/:feature_id', {
    onRequest: guard(uses, {}),
    schema: {
      params: Params({ feature_id: Type.String({ maxLength: 100 }) }),
      response: { 200: { type: 'object', additionalProperties: false, required: ['id', 'enabled'], properties: { id: { type: 'string' }, enabled: { type: 'boolean' } } } }
    }
  }, async request => {
    const { feature_id: id } = request.params
    const rule = Object.hasOwn(FEATURE_RULES, id) ? FEATURE_RULES[id] : undefined
    if (rule === undefined) throw new ApiError('not_found', { detail: `unknown feature ${id}` })
    const user = await users.get(profileOf(request))
    if (user === undefined) throw new ApiError('token_not_found')
    return { id, enabled: rule(user, Date.now()) }
  })
}
