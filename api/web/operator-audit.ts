// /operator/audit: the audit log (api/audit/), newest first, read-only; `?since=` (ISO time or Unix ms) pages back.
import type { FastifyInstance } from 'fastify'
import { auditLogOf, sinceMs } from '../audit/log.ts'
import { esc, notice, sendPage, table, when } from './html.ts'
import { operatorNav } from './nav.ts'
import { operatorPage, type OperatorUses } from './operator-auth.ts'
import type { Services } from '../services.ts'

export type OperatorAuditUses = OperatorUses & Pick<Services, 'store'>

const PAGE = 200

export async function auditRoutes (app: FastifyInstance, uses: OperatorAuditUses): Promise<void> {
  app.get<{ Querystring: { since?: string } }>('/operator/audit', async (request, reply) => {
    const session = await operatorPage(uses, request, reply)
    if (session === null) return reply
    const since = sinceMs(request.query.since)
    if (since !== undefined && !Number.isFinite(since)) {
      return await sendPage(reply, 400, 'Audit log', notice('since must be an ISO 8601 time or Unix milliseconds.', 'error'), operatorNav(session.csrf, '/operator/audit'))
    }
    const entries = await auditLogOf(uses.store).list({ ...(since === undefined ? {} : { since }), limit: PAGE })
    const rows = entries.map(e => [esc(when(e.at)), esc(e.actor), `<code>${esc(e.action)}</code>`, esc(`${e.object.kind}${e.object.id === null ? '' : ` ${e.object.id}`}`), esc(e.ip), esc(`${e.result} (${e.status})`)])
    const body = `${table('Audit log, newest first', ['When', 'Who', 'What', 'Object', 'From', 'Result'], rows, 'No entries yet.')}
<p class="muted">Every change made through the admin API or these pages. Entries cannot be changed; erasing a member replaces their name and profile id by a digest. The same list: <code>hr-relay admin audit list</code>.</p>`
    return await sendPage(reply.header('cache-control', 'no-store'), 200, 'Audit log', body, operatorNav(session.csrf, '/operator/audit'))
  })
}
