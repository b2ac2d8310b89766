// Admin API for members' consent (operator CLI: `hr-relay admin user consent`):
//   PUT    /admin/users/:username/consent {version?} → {username, consent} : a consent recorded by the operator
//          (a paper form), to the given notice version or the current one (privacy.notice_version)
//   DELETE /admin/users/:username/consent            → {username, consent: null} : the consent in force withdrawn
//   GET    /admin/users/:username/export             → 200 application/zip: the member's data export
//          (api/export/member-export.ts), streamed
//   DELETE /admin/users/:username                    → {username, erased: {<kind>: count}} : the member's erasure
//          (api/privacy/erase.ts): every trace, then the bytes
// `consent` is the consent in force: {version, given_at, how}, or null.
import { Type } from '@sinclair/typebox'
import type { FastifyPluginAsyncTypebox, TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { ApiError } from '../errors.ts'
import { checkAdmin, type AdminUses } from './admin.ts'
import { Params } from './schema.ts'
import { activeConsent, type UserRecord } from '../store/users.ts'
import type { Services } from '../services.ts'
import { sendMemberExport, type MemberExportUses } from '../export/send-export.ts'
import { setAuditObject } from '../audit/capture.ts'
import { erasedDigest } from '../audit/log.ts'
import { eraseMember, type EraseUses } from '../privacy/erase.ts'

export type AdminPrivacyUses = AdminUses & MemberExportUses & EraseUses

/** The current notice version: privacy.notice_version (default "1"). */
export function noticeVersion (uses: Pick<Services, 'config'>): string {
  return uses.config.privacy?.noticeVersion ?? '1'
}

const ConsentBody = {
  type: ['object', 'null'],
  properties: { version: { type: 'string' }, given_at: { type: 'number' }, how: { type: 'string' } }
} as const

function answer (user: UserRecord): { username: string, consent: { version: string, given_at: number, how: string } | null } {
  const c = activeConsent(user)
  return { username: user.username, consent: c === undefined ? null : { version: c.version, given_at: c.given_at, how: c.how } }
}

export const adminPrivacyPlugin: FastifyPluginAsyncTypebox<AdminPrivacyUses> = async (app, uses) => {
  const { users } = uses
  await app.register(async scope => {
    const admin = scope.withTypeProvider<TypeBoxTypeProvider>()
    admin.addHook('onRequest', async (request, reply) => { checkAdmin(uses, request, reply) })

    const member = async (username: string): Promise<UserRecord> => {
      const user = await users.byUsername(username)
      if (user === undefined) throw new ApiError('not_found', { detail: `no user ${username}` })
      return user
    }
    const response = { 200: { type: 'object', properties: { username: { type: 'string' }, consent: ConsentBody } } }

    admin.put('/admin/users/:username/consent', {
      schema: {
        params: Params({ username: Type.String() }),
        body: Type.Object({ version: Type.Optional(Type.String({ minLength: 1, maxLength: 64, pattern: '^[!-~]+$' })) }, { additionalProperties: false }),
        response
      }
    }, async request => {
      const user = await member(request.params.username)
      const updated = await users.giveConsent(user.profile_id, request.body.version ?? noticeVersion(uses), 'operator')
      if (updated === undefined) throw new ApiError('not_found', { detail: `no user ${request.params.username}` })
      request.log.info({ profile_id: user.profile_id }, 'consent recorded by the operator')
      return answer(updated)
    })

    admin.get('/admin/users/:username/export', { schema: { params: Params({ username: Type.String() }) } }, async (request, reply) => {
      const user = await member(request.params.username)
      request.log.info({ profile_id: user.profile_id }, 'data export by the operator')
      return await sendMemberExport(uses, reply, user)
    })

    const counted = { type: 'integer' } as const
    admin.delete('/admin/users/:username', {
      schema: {
        params: Params({ username: Type.String() }),
        response: {
          200: {
            type: 'object',
            properties: {
              username: { type: 'string' },
              erased: {
                type: 'object',
                properties: Object.fromEntries(['account', 'readings', 'minute_rollups', 'hour_rollups', 'latest', 'consents', 'widgets', 'game_mod', 'rich_presence', 'devices', 'rooms', 'tokens', 'oauth_codes', 'sign_in_sessions', 'upstream_queue', 'class_summaries', 'learned_maxima'].map(k => [k, counted]))
              }
            }
          }
        }
      }
    }, async request => {
      const user = await member(request.params.username)
      const erased = await eraseMember(uses, user)
      setAuditObject(request, erasedDigest(user.profile_id))
      // The log keeps no username or profile id of an erased member: only what went.
      request.log.info({ erased }, 'member erased by the operator')
      return { username: user.username, erased }
    })

    admin.delete('/admin/users/:username/consent', {
      schema: { params: Params({ username: Type.String() }), response }
    }, async request => {
      const user = await member(request.params.username)
      const updated = await users.withdrawConsent(user.profile_id)
      if (updated === undefined) throw new ApiError('not_found', { detail: `no user ${request.params.username}` })
      request.log.info({ profile_id: user.profile_id }, 'consent withdrawn by the operator')
      return answer(updated)
    })
  })
}
