// "Delete my account and all my data" on /me (issue 41 §2): the member confirms with their password, and
// the erasure (api/privacy/erase.ts) removes every trace of them, then the bytes. A wrong password deletes
// nothing. Their sign-in ends with it.
import type { FastifyInstance } from 'fastify'
import { setAuditObject } from '../audit/capture.ts'
import { erasedDigest } from '../audit/log.ts'
import { eraseMember, type EraseUses } from '../privacy/erase.ts'
import { esc, postForm, sendPage } from './html.ts'
import { checkedForm, memberOf, one, sessionsOf, type PageGuardUses } from './guard.ts'

export type MemberDeleteUses = PageGuardUses & EraseUses

function confirmForm (csrf: string, username: string, problem?: string): string {
  return `${problem === undefined ? '' : `<p class="notice error" role="alert">${esc(problem)}</p>`}
<p>This deletes your account <strong>${esc(username)}</strong> and everything the box holds about you: every reading, your
sessions, widgets and settings, your devices' pairings, your place in rooms, your consents and every app's access.
It cannot be undone. <a href="/me/export" download>Download your data</a> first if you want a copy.</p>
${postForm('/me/delete', csrf, '<label>Your password <input type="password" name="password" autocomplete="current-password" required></label><button type="submit" class="danger">Delete my account and all my data</button>')}
<p><a href="/me">Keep my account</a></p>`
}

export async function memberDeleteRoutes (app: FastifyInstance, uses: MemberDeleteUses): Promise<void> {
  app.get('/me/delete', async (request, reply) => {
    const who = await memberOf(uses, request, reply, '/me/delete')
    if (who === null) return reply
    return await sendPage(reply.header('cache-control', 'no-store'), 200, 'Delete my account', confirmForm(who.session.csrf, who.user.username))
  })

  app.post('/me/delete', async (request, reply) => {
    const checked = await checkedForm(uses, request, reply)
    if (checked === null) return reply
    const who = await memberOf(uses, request, reply, '/me/delete')
    if (who === null) return reply
    const confirmed = await uses.users.authenticate(who.user.username, one(checked.form, 'password'))
    if (confirmed === undefined || confirmed.profile_id !== who.user.profile_id) {
      return await sendPage(reply.header('cache-control', 'no-store'), 403, 'Delete my account', confirmForm(who.session.csrf, who.user.username, 'That is not your password. Nothing was deleted.'))
    }
    const erased = await eraseMember(uses, who.user)
    setAuditObject(request, erasedDigest(who.user.profile_id))
    request.log.info({ erased }, 'member erased at their request')
    sessionsOf(uses).end(reply, undefined)
    return await sendPage(reply.header('cache-control', 'no-store'), 200, 'Account deleted', '<p role="status" id="deleted">Your account and all your data were deleted from this box.</p>')
  })
}
