// What the OAuth route modules share: the code and device-session store, the
// sign-in sessions, the attempt limiters, and the helpers pages use to
// require a signed-in user and a valid anti-CSRF token.
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { Logger } from 'pino'
import type { UserRecord } from '../store/users.ts'
import { OAuthState, type OAuthCodeStore } from './codes.ts'
import { FormParams } from './form.ts'
import { errorPage } from './pages.ts'
import { AttemptLimiter, type AttemptCounter } from './rate-limit.ts'
import { Sessions, sharedSessions, type Session } from './session.ts'
import type { Services } from '../services.ts'

/** Client id recorded on tokens made on the manual-token page. */
export const MANUAL_CLIENT_ID = 'hr-relay-manual'

/**
 * What the OAuth feature uses: accounts, clients, tokens, lifetimes, the log, and the store of codes and device
 * sessions: `oauthCodes` when given (the hub's), else one kept in `store` (the box's LevelDB).
 */
export type OAuthUses = Pick<Services, 'users' | 'clients' | 'tokens' | 'config' | 'log'> & Partial<Pick<Services, 'store'>> & {
  oauthCodes?: OAuthCodeStore
  /** Counters of wrong attempts shared with other processes (the hub's instances); else each process counts its own. */
  oauthAttempts?: OAuthAttempts
}

/** The counters of wrong attempts of the OAuth pages. */
export interface OAuthAttempts {
  /** Wrong codes at /device: 5 per session and per address per minute. */
  device: AttemptCounter
  /** Wrong passwords: 10 per address and per username per minute. */
  signIn: AttemptCounter
}

/** The limits of OAuthAttempts: [attempts, window in ms]. */
export const ATTEMPT_LIMITS = { device: [5, 60_000], signIn: [10, 60_000] } as const satisfies Record<keyof OAuthAttempts, readonly [number, number]>

export interface OAuthContext extends Pick<OAuthUses, 'users' | 'clients' | 'tokens' | 'config'> {
  state: OAuthCodeStore
  sessions: Sessions
  deviceAttempts: AttemptCounter
  signInAttempts: AttemptCounter
  log: Logger
}

function codeStoreOf (uses: OAuthUses): OAuthCodeStore {
  if (uses.oauthCodes !== undefined) return uses.oauthCodes
  if (uses.store === undefined) throw new TypeError('the OAuth feature needs a store of codes (oauthCodes) or a store to keep them in')
  return new OAuthState(uses.store, uses.log.child({ component: 'oauth' }))
}

export function createContext (uses: OAuthUses): OAuthContext {
  return {
    users: uses.users,
    clients: uses.clients,
    tokens: uses.tokens,
    config: uses.config,
    state: codeStoreOf(uses),
    sessions: sharedSessions(uses.config, { secure: uses.config.publicUrl.startsWith('https:') }),
    deviceAttempts: uses.oauthAttempts?.device ?? new AttemptLimiter(...ATTEMPT_LIMITS.device),
    signInAttempts: uses.oauthAttempts?.signIn ?? new AttemptLimiter(...ATTEMPT_LIMITS.signIn),
    log: uses.log.child({ component: 'oauth' })
  }
}

/** A same-site path to return to after sign-in; anything else becomes /account (no open redirect). */
export function safeReturnTo (value: string | undefined): string {
  if (typeof value !== 'string' || value.length === 0 || value.length > 4000) return '/account'
  if (!value.startsWith('/') || value.startsWith('//') || value.startsWith('/\\')) return '/account'
  // eslint-disable-next-line no-control-regex -- control characters are exactly what is refused here
  if (/[\u0000-\u001f\u007f\\]/.test(value)) return '/account'
  return value
}

export async function redirectToSignIn (reply: FastifyReply, returnTo: string): Promise<FastifyReply> {
  return await reply.header('cache-control', 'no-store').redirect(`/signin?return_to=${encodeURIComponent(safeReturnTo(returnTo))}`, 303)
}

export interface SignedIn { session: Session, user: UserRecord }

/**
 * The signed-in user of a page request. When there is none, the reply is
 * sent (a redirect to the sign-in page) and null is returned.
 */
export async function signedIn (ctx: OAuthContext, request: FastifyRequest, reply: FastifyReply, returnTo: string): Promise<SignedIn | null> {
  const session = await ctx.sessions.lookup(request)
  if (session?.profile_id != null) {
    const user = await ctx.users.get(session.profile_id)
    if (user !== undefined) return { session, user }
  }
  await redirectToSignIn(reply, returnTo)
  return null
}

/** Checks the form's anti-CSRF token; on failure sends a 403 page and returns false. */
export async function csrfOk (ctx: OAuthContext, request: FastifyRequest, reply: FastifyReply, form: FormParams): Promise<boolean> {
  const session = await ctx.sessions.lookup(request)
  let given: string | undefined
  try { given = form.get('csrf') } catch { given = undefined }
  if (ctx.sessions.csrfValid(session, given)) return true
  await errorPage(reply, 403, 'Request refused', 'The form has expired or did not come from this site. Go back, reload the page and try again.')
  return false
}

/** The decoded form of a page POST; on bad input sends a 400 page and returns null. */
export async function pageForm (request: FastifyRequest, reply: FastifyReply): Promise<FormParams | null> {
  const body = request.body
  if (body instanceof FormParams && body.error === null) return body
  await errorPage(reply, 400, 'Bad request', body instanceof FormParams ? `The form could not be read: ${body.error ?? ''}.` : 'The form could not be read.')
  return null
}
