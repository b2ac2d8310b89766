// Deleting a member from /operator/users (issue 41 §2): a confirmation page on which the operator types the
// username, then the erasure (api/privacy/erase.ts): every trace of the member, then the bytes.
import type { FastifyInstance } from 'fastify'
import { setAuditObject } from '../audit/capture.ts'
import { erasedDigest } from '../audit/log.ts'
import { eraseMember, type EraseUses } from '../privacy/erase.ts'
import { esc, field, notice, postForm, sendPage } from './html.ts'
import { one } from './guard.ts'
import { operatorNav } from './nav.ts'
import { operatorForm, operatorPage, type OperatorUses } from './operator-auth.ts'

export type OperatorUsersUses = OperatorUses & EraseUses

function confirmBody (csrf: string, username: string, error?: string): string {
  const path = `/operator/users/${encodeURIComponent(username)}/delete`
  return `${notice(error, 'error')}<p>Deleting <strong>${esc(username)}</strong> removes their account and everything the box holds
about them: readings, sessions, widgets and settings, device pairings, room places, consents and every app's access. Their
open streams close. It cannot be undone; export their data first if they asked for a copy
(<code>hr-relay admin user export ${esc(username)} --out FILE</code>).</p>
${postForm(path, csrf, `${field('confirm-username', `Type ${username} to confirm`, '<input type="text" id="confirm-username" name="confirm" required autocomplete="off">')}<button type="submit" class="danger">Delete ${esc(username)} and all their data</button>`)}
<p><a href="/operator/users">Cancel</a></p>`
}

export async function userDeleteRoutes (app: FastifyInstance, uses: OperatorUsersUses): Promise<void> {
  app.get<{ Params: { username: string } }>('/operator/users/:username/delete', async (request, reply) => {
    const session = await operatorPage(uses, request, reply)
    if (session === null) return reply
    const user = await uses.users.byUsername(request.params.username)
    if (user === undefined) return await sendPage(reply, 404, 'Delete a member', `${notice('No such user.', 'error')}<p><a href="/operator/users">Users</a></p>`, operatorNav(session.csrf, '/operator/users'))
    return await sendPage(reply.header('cache-control', 'no-store'), 200, `Delete ${user.username}`, confirmBody(session.csrf, user.username), operatorNav(session.csrf, '/operator/users'))
  })

  app.post<{ Params: { username: string } }>('/operator/users/:username/delete', async (request, reply) => {
    const checked = await operatorForm(uses, request, reply)
    if (checked === null) return reply
    const user = await uses.users.byUsername(request.params.username)
    if (user === undefined) return await sendPage(reply, 404, 'Delete a member', `${notice('No such user.', 'error')}<p><a href="/operator/users">Users</a></p>`, operatorNav(checked.session.csrf, '/operator/users'))
    if (one(checked.form, 'confirm') !== user.username) {
      return await sendPage(reply, 400, `Delete ${user.username}`, confirmBody(checked.session.csrf, user.username, 'The username typed does not match. Nothing was deleted.'), operatorNav(checked.session.csrf, '/operator/users'))
    }
    const erased = await eraseMember(uses, user)
    setAuditObject(request, erasedDigest(user.profile_id))
    request.log.info({ erased }, 'member erased on the operator pages')
    return await reply.redirect('/operator/users?done=deleted', 303)
  })
}
