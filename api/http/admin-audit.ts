// Admin API of the audit log (api/audit/): read-only. Operator CLI: `hr-relay admin audit list [--since T]`.
//   GET /admin/audit?since=<ISO time or Unix ms>&limit=N → {entries: [...]}, newest first (limit 1..10000, default 1000)
// No route changes or deletes an entry.
import { Type } from '@sinclair/typebox'
import type { FastifyPluginAsyncTypebox, TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { ApiError } from '../errors.ts'
import { checkAdmin, type AdminUses } from './admin.ts'
import { auditLogOf, sinceMs } from '../audit/log.ts'
import type { Services } from '../services.ts'

export type AdminAuditUses = AdminUses & Pick<Services, 'store'>

/** A time given as Unix ms or an ISO 8601 date; undefined when absent, an ApiError when it is neither. */
export function parseSince (since: string | undefined): number | undefined {
  const ms = since === '' ? Number.NaN : sinceMs(since)
  if (ms !== undefined && !Number.isFinite(ms)) throw new ApiError('invalid_request', { detail: 'since must be an ISO 8601 time or Unix milliseconds' })
  return ms
}

const Entry = {
  type: 'object',
  properties: {
    at: { type: 'number' },
    actor: { type: 'string' },
    action: { type: 'string' },
    object: { type: 'object', properties: { kind: { type: 'string' }, id: { type: ['string', 'null'] } } },
    ip: { type: 'string' },
    result: { type: 'string' },
    status: { type: 'integer' }
  }
} as const

export const adminAuditPlugin: FastifyPluginAsyncTypebox<AdminAuditUses> = async (app, uses) => {
  await app.register(async scope => {
    const admin = scope.withTypeProvider<TypeBoxTypeProvider>()
    admin.addHook('onRequest', async (request, reply) => { checkAdmin(uses, request, reply) })
    admin.get('/admin/audit', {
      schema: {
        querystring: Type.Object({ since: Type.Optional(Type.String({ maxLength: 40 })), limit: Type.Optional(Type.String({ pattern: '^[0-9]{1,5}$' })) }, { additionalProperties: false }),
        response: { 200: { type: 'object', properties: { entries: { type: 'array', items: Entry } } } }
      }
    }, async request => {
      const since = parseSince(request.query.since)
      const limit = request.query.limit === undefined ? 1000 : Number(request.query.limit)
      if (limit < 1 || limit > 10_000) throw new ApiError('invalid_request', { detail: 'limit must be 1 to 10000' })
      return { entries: await auditLogOf(uses.store).list({ ...(since === undefined ? {} : { since }), limit }) }
    })
  })
}
