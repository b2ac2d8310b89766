// Who is asking, for the web pages: the signed-in member (the OAuth pages'
// session, api/oauth/session.ts, shared through sharedSessions) and forms
// with the session's anti-CSRF token. Deny by default: a page without a
// session redirects to /signin, a form without a valid token gets a 403 page.
import type { FastifyReply, FastifyRequest } from 'fastify'
import { redirectToSignIn } from '../oauth/context.ts'
import { FormParams } from '../oauth/form.ts'
import { errorPage } from '../oauth/pages.ts'
import { sharedSessions, type Session, type Sessions } from '../oauth/session.ts'
import type { UserRecord } from '../store/users.ts'
import type { Services } from '../services.ts'

/** What the pages' guard uses: the configuration (the sign-in sessions are kept per service, keyed by it) and the accounts. */
export type PageGuardUses = Pick<Services, 'config' | 'users'>

/** The sign-in sessions, shared with the OAuth pages (api/oauth/context.ts keys them by the same object). */
export function sessionsOf (uses: Pick<Services, 'config'>): Sessions {
  return sharedSessions(uses.config, { secure: uses.config.publicUrl.startsWith('https:') })
}

export interface Member { session: Session, user: UserRecord }

/** The signed-in member, or null after sending a redirect to the sign-in page. */
export async function memberOf (uses: PageGuardUses, request: FastifyRequest, reply: FastifyReply, returnTo: string): Promise<Member | null> {
  const session = sessionsOf(uses).find(request)
  if (session?.profile_id != null) {
    const user = await uses.users.get(session.profile_id)
    if (user !== undefined) return { session, user }
  }
  await redirectToSignIn(reply, returnTo)
  return null
}

/**
 * The decoded form of a page POST whose `csrf` matches the session's, or null
 * after sending a 400 (unreadable) or 403 (missing or wrong token) page.
 */
export async function checkedForm (uses: Pick<Services, 'config'>, request: FastifyRequest, reply: FastifyReply): Promise<{ form: FormParams, session: Session } | null> {
  const body = request.body
  if (!(body instanceof FormParams) || body.error !== null) {
    await errorPage(reply, 400, 'Bad request', 'The form could not be read.')
    return null
  }
  const sessions = sessionsOf(uses)
  const session = sessions.find(request)
  let given: string | undefined
  try { given = body.get('csrf') } catch { given = undefined }
  if (session === undefined || !sessions.csrfValid(session, given)) {
    await errorPage(reply, 403, 'Request refused', 'The form has expired or did not come from this site. Go back, reload the page and try again.')
    return null
  }
  return { form: body, session }
}

/** A single form value ('' when absent); a repeated field counts as absent. */
export function one (form: FormParams, name: string): string {
  try { return form.get(name) ?? '' } catch { return '' }
}
