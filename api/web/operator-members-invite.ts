// The page an invitation link opens (/me/invitation/<token>, made at the front desk, api/web/operator-members.ts):
// the member chooses their password, then signs in at /me. A link works once, until it expires; an expired, used
// or replaced link says so. The token is in the path, never logged (the server keeps no request log) and never sent
// on as a referrer (the pages' referrer-policy is no-referrer).
import type { FastifyInstance, FastifyReply } from 'fastify'
import { setAuditObject } from '../audit/capture.ts'
import { PASSWORD_MAX, PASSWORD_MIN, acceptInvitation, openInvitation, type MembersUses } from '../http/admin-members.ts'
import type { InvitationState } from '../store/user-records.ts'
import { esc, field, notice, postForm, sendPage } from './html.ts'
import { checkedForm, one, sessionsOf } from './guard.ts'
import type { Services } from '../services.ts'

/** What the invitation page uses: the accounts, the configuration (sessions, the public URL) and the log. */
export type InvitationPageUses = MembersUses & Pick<Services, 'log'>

/** What a link that cannot be used says, and its status. */
const REFUSED: Record<Exclude<InvitationState, 'valid'>, { status: number, message: string }> = {
  unknown: { status: 404, message: 'This invitation link is not valid. It may have been replaced by a newer one. Ask the front desk for a new link.' },
  used: { status: 410, message: 'This invitation link was already used. Sign in with the password you chose, or ask the front desk for a new link.' },
  expired: { status: 410, message: 'This invitation link has expired. Ask the front desk for a new link.' }
}

function formBody (csrf: string, token: string, username: string, error?: string): string {
  return `${notice(error, 'error')}<p>Welcome, <strong>${esc(username)}</strong>. Choose the password you will sign in with.</p>
${postForm(`/me/invitation/${token}`, csrf, `<fieldset><legend>Your password</legend>
${field('invite-password', `Password (${PASSWORD_MIN} characters or more)`, `<input type="password" id="invite-password" name="password" required minlength="${PASSWORD_MIN}" maxlength="${PASSWORD_MAX}" autocomplete="new-password">`)}
${field('invite-confirm', 'The same password again', `<input type="password" id="invite-confirm" name="confirm" required minlength="${PASSWORD_MIN}" maxlength="${PASSWORD_MAX}" autocomplete="new-password">`)}
<button type="submit">Set my password</button></fieldset>`)}`
}

async function refused (reply: FastifyReply, state: Exclude<InvitationState, 'valid'>): Promise<FastifyReply> {
  const r = REFUSED[state]
  return await sendPage(reply, r.status, 'Invitation', `${notice(r.message, 'error')}<p><a href="/signin?return_to=%2Fme">Sign in</a></p>`)
}

export async function invitationRoutes (app: FastifyInstance, uses: InvitationPageUses): Promise<void> {
  app.get<{ Params: { token: string } }>('/me/invitation/:token', async (request, reply) => {
    const { token } = request.params
    const opened = await openInvitation(uses, token)
    if (opened.state !== 'valid' || opened.user === undefined) return await refused(reply, opened.state === 'valid' ? 'unknown' : opened.state)
    const sessions = sessionsOf(uses)
    const session = sessions.ensure(request, reply)
    await sessions.flushed()
    return await sendPage(reply, 200, 'Choose your password', formBody(session.csrf, token, opened.user.username))
  })

  app.post<{ Params: { token: string } }>('/me/invitation/:token', async (request, reply) => {
    const checked = await checkedForm(uses, request, reply)
    if (checked === null) return reply
    const { token } = request.params
    const opened = await openInvitation(uses, token)
    if (opened.state !== 'valid' || opened.user === undefined) return await refused(reply, opened.state === 'valid' ? 'unknown' : opened.state)
    const password = one(checked.form, 'password')
    const again = (error: string): Promise<FastifyReply> => sendPage(reply, 400, 'Choose your password', formBody(checked.session.csrf, token, opened.user?.username ?? '', `${error} Your password was not set.`))
    if (password.length < PASSWORD_MIN || password.length > PASSWORD_MAX) return await again(`The password is ${PASSWORD_MIN} to ${PASSWORD_MAX} characters.`)
    if (one(checked.form, 'confirm') !== password) return await again('The two passwords differ.')
    const accepted = await acceptInvitation(uses, token, password)
    if (accepted.state !== 'valid' || accepted.user === undefined) return await refused(reply, accepted.state === 'valid' ? 'unknown' : accepted.state)
    setAuditObject(request, accepted.user.username)
    uses.log.child({ component: 'web' }).info({ profile_id: accepted.user.profile_id }, 'invitation used: the member chose a password')
    return await sendPage(reply.header('cache-control', 'no-store'), 200, 'Password set',
      `${notice('Your password is set.')}<p>Sign in with your username <strong>${esc(accepted.user.username)}</strong> and this password.</p>
<p><a class="button" href="/signin?return_to=%2Fme">Sign in</a></p>`)
  })
}
