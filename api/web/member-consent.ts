// Consent to the privacy notice on /me (docs/operator.md "Consent"): the member reads the operator's notice
// (privacy.notice_file) and accepts it, or withdraws a consent in force. Recorded on the user record with the
// time, the notice version and "member" as how it was given. While consent is required and missing, the
// member's readings are refused (api/pipeline/steps.ts) and room displays leave their tile out.
import type { FastifyInstance } from 'fastify'
import { activeConsent, type UserRecord } from '../store/users.ts'
import type { Services } from '../services.ts'
import { esc, postForm, when } from './html.ts'
import { checkedForm, memberOf, one, type PageGuardUses } from './guard.ts'
import { errorPage } from '../oauth/pages.ts'
import { sendMemberExport, type MemberExportUses } from '../export/send-export.ts'

export type ConsentUses = PageGuardUses & MemberExportUses

/** Whether the box requires consent and the member has none for the current notice version: left off room displays too. */
export function consentMissing (uses: Pick<Services, 'config' | 'users'>, profileId: string): boolean {
  const p = uses.config.privacy
  return p?.requireConsent === true && uses.users.consentVersion(profileId) !== p.noticeVersion
}

/** The block of /me (id privacy): the notice, the consent in force, and the form to accept or withdraw. */
export function consentBlock (uses: Pick<Services, 'config'>, user: UserRecord, csrf: string): string {
  const p = uses.config.privacy
  const version = p?.noticeVersion ?? '1'
  const c = activeConsent(user)
  const current = c !== undefined && c.version === version
  const required = p?.requireConsent === true
  const notice = p?.noticeText === undefined ? '' : `<details${current ? '' : ' open'}><summary>Privacy notice (version ${esc(version)})</summary><pre class="notice">${esc(p.noticeText)}</pre></details>`
  const status = current
    ? `You consented to the privacy notice version ${esc(version)} on ${esc(when(c.given_at))}${c.how === 'operator' ? ' (recorded by the operator)' : ''}.`
    : required
      ? 'This box records heart rates only with your consent. Until you accept the notice, your readings are not stored and room displays do not show you.'
      : `You have not consented to the privacy notice version ${esc(version)}.`
  const form = current
    ? postForm('/me/consent', csrf, '<input type="hidden" name="consent" value="withdraw"><button type="submit" class="danger">Withdraw my consent</button>')
    : postForm('/me/consent', csrf, `<input type="hidden" name="consent" value="accept"><input type="hidden" name="version" value="${esc(version)}"><button type="submit">I accept the privacy notice</button>`)
  return `<section id="privacy" aria-labelledby="privacy-title"><h2 id="privacy-title">Privacy</h2>${notice}
<p id="consent-status" role="status">${status}</p>${form}<p class="muted">Withdrawing deletes nothing: ask the gym to delete your data.</p>
<p><a id="export-link" href="/me/export" download>Download all my data</a> (a ZIP: profile, every reading, sessions as FIT files, settings, consents, apps)</p>
<p><a id="delete-link" href="/me/delete">Delete my account and all my data</a></p></section>`
}

export async function consentRoutes (app: FastifyInstance, uses: ConsentUses): Promise<void> {
  // The member's own export (a download: no side effect, readable only by the signed-in member).
  app.get('/me/export', async (request, reply) => {
    const who = await memberOf(uses, request, reply, '/me')
    if (who === null) return reply
    request.log.info({ profile_id: who.user.profile_id }, 'data export by the member')
    return await sendMemberExport(uses, reply, who.user)
  })

  app.post('/me/consent', async (request, reply) => {
    const checked = await checkedForm(uses, request, reply)
    if (checked === null) return reply
    const who = await memberOf(uses, request, reply, '/me')
    if (who === null) return reply
    const choice = one(checked.form, 'consent')
    const version = uses.config.privacy?.noticeVersion ?? '1'
    if (choice === 'accept') {
      // The version the member read: a notice changed while the page was open is not accepted unread.
      if (one(checked.form, 'version') !== version) return await errorPage(reply, 409, 'The notice changed', 'The privacy notice was updated while you read it. Read the new version and accept it again.')
      await uses.users.giveConsent(who.user.profile_id, version, 'member')
    } else if (choice === 'withdraw') {
      // No more readings are stored; room displays leave the tile out at their next refresh (every 30 s).
      await uses.users.withdrawConsent(who.user.profile_id)
    } else return await errorPage(reply, 400, 'Bad request', 'Accept or withdraw the consent.')
    return await reply.redirect('/me#privacy', 303)
  })
}
