// Operator sign-in and roles for the operator pages. An operator signs in at
// /operator/signin with their name and password (an account of
// api/store/operators.ts, scrypt-hashed), or with the admin token (its SHA-256
// digest compared in constant time): the admin token signs in as an owner named
// "admin token", which is how the first owner gets in. Either starts a fresh
// session (new id and CSRF token, the sign-in session module of api/oauth) that
// carries the operator's name and role and survives a restart. Failed attempts
// are limited per address and per name.
// Deny by default: every /operator page and form needs an operator session, and
// the owner role unless the page allows a coach (operatorPage / operatorForm
// with { allow: 'coach' }): a coach opens rooms and their displays; everything
// else (users, clients, devices, operators, integrations, the audit log) answers
// a coach with 403.
import { timingSafeEqual } from 'node:crypto'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { digest } from '../store/secrets.ts'
import { adminTokenAttempts, type AdminUses } from '../http/admin.ts'
import type { OperatorIdentity, Session } from '../oauth/session.ts'
import { operatorsOf } from '../store/operators.ts'
import type { Services } from '../services.ts'
import type { FormParams } from '../oauth/form.ts'
import { checkedForm, sessionsOf } from './guard.ts'
import { sendPage } from './html.ts'

/** What operator sign-in uses: the admin token's digest, the configuration and the store (the operator accounts). */
export type OperatorUses = AdminUses & Pick<Services, 'store'>

/** The admin token's sign-in: an owner. */
export const ADMIN_TOKEN_OPERATOR: OperatorIdentity = { name: 'admin token', role: 'owner' }

export function adminTokenMatches (uses: OperatorUses, given: string): boolean {
  if (given.length === 0 || given.length > 200) return false
  const a = Buffer.from(digest(given), 'hex')
  const b = Buffer.from(uses.adminTokenDigest, 'hex')
  return a.length === b.length && timingSafeEqual(a, b)
}

/** The operator session of this request, if any. */
export function operatorSession (uses: Pick<Services, 'config'>, request: FastifyRequest): Session | undefined {
  const session = sessionsOf(uses).find(request)
  return session?.operator === undefined ? undefined : session
}

/** Who made a request, for the audit log: the member on /me, the signed-in operator on /operator, else the admin token. */
export function auditActor (uses: Pick<Services, 'config'>, request: FastifyRequest): string {
  const url = request.routeOptions.url ?? ''
  if (url.startsWith('/me')) return 'member'
  if (url.startsWith('/operator')) return operatorSession(uses, request)?.operator?.name ?? 'not signed in'
  return 'admin token'
}

export type SignInResult = 'ok' | 'wrong' | 'limited'

/**
 * Checks an operator's name and password, or the admin token, and when right starts an operator session (replacing
 * the current one). Limited per address, and per name for a name.
 */
export async function operatorSignIn (uses: OperatorUses, request: FastifyRequest, reply: FastifyReply, given: { token: string } | { name: string, password: string }): Promise<SignInResult> {
  const keys = 'name' in given ? [`ip:${request.ip}`, `op:${given.name.toLowerCase().slice(0, 64)}`] : [`ip:${request.ip}`]
  const attempt = adminTokenAttempts(uses).reserve(keys)
  if (attempt === null) return 'limited'
  let who: OperatorIdentity | undefined
  if ('name' in given) {
    const o = await operatorsOf(uses.store).authenticate(given.name, given.password)
    who = o === undefined ? undefined : { name: o.name, role: o.role }
  } else who = adminTokenMatches(uses, given.token) ? ADMIN_TOKEN_OPERATOR : undefined
  if (who === undefined) return 'wrong'
  attempt.succeeded()
  const sessions = sessionsOf(uses)
  sessions.start(reply, null, sessions.find(request), who)
  await sessions.flushed()
  return 'ok'
}

export async function operatorSignOut (uses: Pick<Services, 'config'>, request: FastifyRequest, reply: FastifyReply): Promise<void> {
  const sessions = sessionsOf(uses)
  sessions.end(reply, sessions.find(request))
  await sessions.flushed()
}

/** Which operators a page or form admits: owners only (the default), or coaches too. */
export interface RoleRule { allow?: 'coach' }

function admitted (session: Session, rule: RoleRule): boolean {
  return session.operator?.role === 'owner' || (rule.allow === 'coach' && session.operator?.role === 'coach')
}

const COACH_REFUSED = '<p class="notice error" role="alert">This page is for the box\'s owners. A coach runs rooms and their displays.</p><p><a href="/operator/rooms">Rooms</a></p>'

/** The operator session of a page request, or null after redirecting to the operator sign-in (or a 403 for a coach). */
export async function operatorPage (uses: Pick<Services, 'config'>, request: FastifyRequest, reply: FastifyReply, rule: RoleRule = {}): Promise<Session | null> {
  const s = operatorSession(uses, request)
  if (s === undefined) {
    await reply.header('cache-control', 'no-store').redirect('/operator/signin', 303)
    return null
  }
  if (admitted(s, rule)) return s
  await sendPage(reply.header('cache-control', 'no-store'), 403, 'Owners only', COACH_REFUSED)
  return null
}

/** The form of an operator POST (valid CSRF, an operator session with the role the form needs), or null after a 400/403 page. */
export async function operatorForm (uses: Pick<Services, 'config'>, request: FastifyRequest, reply: FastifyReply, rule: RoleRule = {}): Promise<{ form: FormParams, session: Session } | null> {
  const checked = await checkedForm(uses, request, reply)
  if (checked === null) return null
  const s = operatorSession(uses, request)
  if (s === undefined) {
    await sendPage(reply, 403, 'Operator sign-in required', '<p class="notice error" role="alert">Sign in as the operator first.</p><p><a href="/operator/signin">Operator sign-in</a></p>')
    return null
  }
  if (!admitted(s, rule)) {
    await sendPage(reply, 403, 'Owners only', COACH_REFUSED)
    return null
  }
  return checked
}
