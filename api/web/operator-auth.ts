// Operator sign-in for the operator pages. A plain link cannot carry the admin
// token in an Authorization header, so /operator/signin takes the admin token
// (<data-dir>/admin-token) in a form, compares its SHA-256 digest in constant
// time, and starts a fresh session (new id and CSRF token, the sign-in
// session module of api/oauth) marked as an operator session. Deny by default:
// every /operator page needs that mark, every form its CSRF token. Failed
// attempts are limited per address. Operator sessions live in memory only.
// operatorPage and operatorForm (the guards of every operator page and form)
// are here too, so the page modules (operator*.ts) import them from below.
import { timingSafeEqual } from 'node:crypto'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { digest } from '../store/secrets.ts'
import { adminTokenAttempts, type AdminUses } from '../http/admin.ts'
import type { AttemptLimiter } from '../oauth/rate-limit.ts'
import type { Session } from '../oauth/session.ts'
import type { FormParams } from '../oauth/form.ts'
import { checkedForm, sessionsOf } from './guard.ts'
import { sendPage } from './html.ts'

const MAX_OPERATOR_SESSIONS = 100

interface OperatorState { keys: Set<string>, attempts: AttemptLimiter }
const states = new WeakMap<object, OperatorState>()

/** What operator sign-in uses: the admin token's digest, and the configuration (state is kept per service, keyed by it). */
export type OperatorUses = AdminUses

function stateOf (uses: OperatorUses): OperatorState {
  let s = states.get(uses.config)
  if (s === undefined) { s = { keys: new Set(), attempts: adminTokenAttempts(uses) }; states.set(uses.config, s) }
  return s
}

export function adminTokenMatches (uses: OperatorUses, given: string): boolean {
  if (given.length === 0 || given.length > 200) return false
  const a = Buffer.from(digest(given), 'hex')
  const b = Buffer.from(uses.adminTokenDigest, 'hex')
  return a.length === b.length && timingSafeEqual(a, b)
}

/** The operator session of this request, if any. */
export function operatorSession (uses: OperatorUses, request: FastifyRequest): Session | undefined {
  const session = sessionsOf(uses).find(request)
  if (session === undefined) return undefined
  return stateOf(uses).keys.has(session.key) ? session : undefined
}

export type SignInResult = 'ok' | 'wrong' | 'limited'

/** Checks the admin token and, when right, starts an operator session (replacing the current one). */
export function operatorSignIn (uses: OperatorUses, request: FastifyRequest, reply: FastifyReply, token: string): SignInResult {
  const state = stateOf(uses)
  const keys = [`ip:${request.ip}`]
  const attempt = state.attempts.reserve(keys)
  if (attempt === null) return 'limited'
  if (!adminTokenMatches(uses, token)) return 'wrong'
  attempt.succeeded()
  const sessions = sessionsOf(uses)
  const previous = sessions.find(request)
  if (previous !== undefined) state.keys.delete(previous.key)
  const session = sessions.start(reply, null, previous)
  while (state.keys.size >= MAX_OPERATOR_SESSIONS) {
    const oldest = state.keys.values().next()
    if (oldest.done === true) break
    state.keys.delete(oldest.value)
  }
  state.keys.add(session.key)
  return 'ok'
}

export function operatorSignOut (uses: OperatorUses, request: FastifyRequest, reply: FastifyReply): void {
  const sessions = sessionsOf(uses)
  const session = sessions.find(request)
  if (session !== undefined) stateOf(uses).keys.delete(session.key)
  sessions.end(reply, session)
}

/** The operator session of a page request, or null after redirecting to the operator sign-in. */
export async function operatorPage (uses: OperatorUses, request: FastifyRequest, reply: FastifyReply): Promise<Session | null> {
  const s = operatorSession(uses, request)
  if (s !== undefined) return s
  await reply.header('cache-control', 'no-store').redirect('/operator/signin', 303)
  return null
}

/** The form of an operator POST (valid CSRF and an operator session), or null after a 400/403 page. */
export async function operatorForm (uses: OperatorUses, request: FastifyRequest, reply: FastifyReply): Promise<{ form: FormParams, session: Session } | null> {
  const checked = await checkedForm(uses, request, reply)
  if (checked === null) return null
  if (operatorSession(uses, request) === undefined) {
    await sendPage(reply, 403, 'Operator sign-in required', '<p class="notice error" role="alert">Sign in as the operator first.</p><p><a href="/operator/signin">Operator sign-in</a></p>')
    return null
  }
  return checked
}
