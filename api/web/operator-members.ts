// The front desk's members (/operator/users, owners only): the list with a search box and the "add a member" form
// (a password, or an invitation link the member opens to choose one), and each member's page
// (/operator/users/<username>): edit the profile, a new invitation link, the member's straps and "pair a strap",
// which opens the nearby list of /operator/devices with the member chosen. Every action is a function of
// api/http/admin-members.ts, the one the admin API (and so the CLI) calls.
import type { FastifyInstance, FastifyReply } from 'fastify'
import { setAuditObject } from '../audit/capture.ts'
import { ApiError } from '../errors.ts'
import { PASSWORD_MAX, PASSWORD_MIN, addMember, inviteMember, updateMember, type Invitation, type MembersUses } from '../http/admin-members.ts'
import { memberMatches, premiumActive, type UserRecord } from '../store/users.ts'
import type { ProfilePatch } from '../store/user-records.ts'
import type { Session } from '../oauth/session.ts'
import { esc, field, notice, postForm, sendPage, table, when } from './html.ts'
import { one } from './guard.ts'
import { operatorNav } from './nav.ts'
import { operatorForm, operatorPage, type OperatorUses } from './operator-auth.ts'
import { devicesOf } from './operator-devices.ts'
import type { FormParams } from '../oauth/form.ts'
import type { Services } from '../services.ts'

/** What the members pages use: the accounts, the device registry (a member's straps) and the log. */
export type OperatorMembersUses = OperatorUses & MembersUses & Pick<Services, 'devices' | 'log'>

const USERNAME = /^[^\s/\\]{1,100}$/

/** The bounds of the admin API's schemas (api/http/admin.ts, admin-members.ts), with the page's words for them. */
const NUMBERS = {
  age: { label: 'Age', min: 1, max: 130, integer: true },
  weight_kg: { label: 'Weight (kg)', min: 0.1, max: 500, integer: false },
  max_heart_rate: { label: 'Maximum heart rate', min: 60, max: 260, integer: true }
} as const

/** A number field: undefined when empty, or an error message. */
function numberField (form: FormParams, name: keyof typeof NUMBERS): number | undefined | { error: string } {
  const raw = one(form, name).trim()
  if (raw === '') return undefined
  const b = NUMBERS[name]
  const n = Number(raw)
  if (!Number.isFinite(n) || (b.integer && !Number.isInteger(n)) || n < b.min || n > b.max) {
    return { error: `${b.label} must be ${b.integer ? 'a whole number' : 'a number'} from ${b.min} to ${b.max}.` }
  }
  return n
}

/** The profile fields of a form: set, cleared (`clear`: an empty field clears it) or left out; or the first error. */
function profileOf (form: FormParams, clear: boolean): ProfilePatch | { error: string } {
  const patch: ProfilePatch = {}
  const name = one(form, 'display_name').trim()
  if (name.length > 100) return { error: 'The name is at most 100 characters.' }
  if (name !== '') patch.display_name = name
  else if (clear) patch.display_name = null
  for (const k of ['age', 'weight_kg', 'max_heart_rate'] as const) {
    const v = numberField(form, k)
    if (typeof v === 'object') return v
    if (v !== undefined) patch[k] = v
    else if (clear) patch[k] = null
  }
  const sex = one(form, 'sex')
  if (sex === 'male' || sex === 'female') patch.sex = sex
  else if (sex !== '') return { error: 'Choose female or male.' }
  else if (clear) patch.sex = null
  return patch
}

function profileFields (u: Partial<UserRecord>, required: boolean): string {
  const req = required ? ' required' : ''
  const num = (k: keyof typeof NUMBERS, step: string, hint = ''): string => field(`member-${k}`, `${NUMBERS[k].label}${hint}`,
    `<input type="number" id="member-${k}" name="${k}" min="${NUMBERS[k].min}" max="${NUMBERS[k].max}" step="${step}" value="${esc(u[k] ?? '')}"${k === 'max_heart_rate' ? '' : req}>`)
  const sexOption = (v: string, label: string): string => `<option value="${v}"${u.sex === v ? ' selected' : ''}>${label}</option>`
  return `${field('member-name', 'Name', `<input type="text" id="member-name" name="display_name" maxlength="100" value="${esc(u.display_name ?? '')}"${req}>`)}
${num('age', '1')}
${field('member-sex', 'Sex', `<select id="member-sex" name="sex"${req}><option value="">—</option>${sexOption('female', 'female')}${sexOption('male', 'male')}</select>`)}
${num('weight_kg', '0.1')}
${num('max_heart_rate', '1', ' (optional)')}`
}

function addForm (csrf: string, values: Record<string, string> = {}): string {
  const way = values.way === 'password' ? 'password' : 'invite'
  return postForm('/operator/users', csrf, `<fieldset><legend>Add a member</legend>
${field('member-username', 'Username', `<input type="text" id="member-username" name="username" required maxlength="100" autocomplete="off" value="${esc(values.username ?? '')}">`)}
${profileFields({ display_name: values.display_name, sex: values.sex as UserRecord['sex'] }, true)}
<fieldset><legend>How the member gets in</legend>
<div class="field"><input type="radio" id="way-invite" name="way" value="invite"${way === 'invite' ? ' checked' : ''}> <label for="way-invite" class="inline">An invitation link: the member opens it and chooses a password</label></div>
<div class="field"><input type="radio" id="way-password" name="way" value="password"${way === 'password' ? ' checked' : ''}> <label for="way-password" class="inline">A password I set now (below)</label></div>
${field('member-password', `Password (${PASSWORD_MIN} characters or more)`, `<input type="password" id="member-password" name="password" minlength="${PASSWORD_MIN}" maxlength="${PASSWORD_MAX}" autocomplete="new-password">`)}
</fieldset>
<button type="submit">Add member</button></fieldset>`, 'id="add-member"')
}

function invitationBlock (username: string, inv: Invitation): string {
  return `<div class="invitation"><p>Invitation link for <strong>${esc(username)}</strong>, shown only now (the box keeps only a digest of it). It works once, until ${esc(when(inv.expires_at))}: give it to the member only.</p>
<p><code class="invitation-url token">${esc(inv.invitation_url)}</code></p></div>`
}

/** How the member signs in: with the desk's password, or through their invitation (pending, used or expired). */
function signInText (inv: UserRecord['invitation'], now: number): string {
  if (inv === undefined) return 'with the password set at the desk'
  if (inv.used_at !== undefined) return `with the password they chose (invitation used ${when(inv.used_at)})`
  if (inv.expires_at > now) return `not yet: their invitation link works until ${when(inv.expires_at)}`
  return `not yet: their invitation link expired ${when(inv.expires_at)}`
}

const memberPath = (username: string): string => `/operator/users/${encodeURIComponent(username)}`

export async function memberRoutes (app: FastifyInstance, uses: OperatorMembersUses): Promise<void> {
  const listPage = async (reply: FastifyReply, session: Session, status: number, q: string, message?: string, error?: string, values?: Record<string, string>): Promise<FastifyReply> => {
    const all = await uses.users.list()
    const rows = all.filter(u => memberMatches(u, q)).map(u => [
      `<a class="member-link" href="${esc(memberPath(u.username))}">${esc(u.username)}</a>`, `<code>${esc(u.profile_id)}</code>`, esc(u.display_name ?? ''),
      esc(premiumActive(u) ? u.premium.plan : 'none'), esc(u.age ?? ''), esc(u.max_heart_rate ?? ''), esc(u.features.join(', ')), esc(when(u.created_at)),
      `<a class="danger" href="${esc(memberPath(u.username))}/delete">Delete…</a>`
    ])
    const search = `<form method="get" action="/operator/users" role="search"><label for="member-search">Search members</label>
<input type="search" id="member-search" name="q" maxlength="100" value="${esc(q)}"> <button type="submit" class="secondary">Search</button></form>`
    const caption = q === '' ? 'Members' : `Members matching "${q}"`
    const body = `${notice(message)}${notice(error, 'error')}${search}
${table(caption, ['Username', 'Profile id', 'Display name', 'Plan', 'Age', 'Max HR', 'Features', 'Created', ''], rows, q === '' ? 'none yet' : 'nobody matches')}
${addForm(session.csrf, values)}
<p class="muted">The same from a terminal: <code>hr-relay admin user add|update|invite|list</code> (docs/operator.md "The front desk").</p>`
    return await sendPage(reply.header('cache-control', 'no-store'), status, 'Users', body, operatorNav(session.csrf, '/operator/users'))
  }

  const memberPage = async (reply: FastifyReply, session: Session, status: number, user: UserRecord, message?: string, error?: string, extra = ''): Promise<FastifyReply> => {
    const devices = devicesOf(uses)
    const straps = (devices?.list() ?? []).filter(d => d.profile_id === user.profile_id).map(d => {
      const s = devices?.stateOf(d.device_id)
      return [`<code>${esc(d.device_id)}</code>${d.name === undefined ? '' : ` ${esc(d.name)}`}`, esc(d.kind), esc(s === undefined ? 'not seen' : s.connected ? 'connected' : 'seen'), esc(when(d.created_at))]
    })
    const signIn = signInText(user.invitation, Date.now())
    const path = memberPath(user.username)
    const body = `${notice(message)}${notice(error, 'error')}${extra}
<p>Profile id <code>${esc(user.profile_id)}</code>, added ${esc(when(user.created_at))}. Signs in: <span class="member-signin">${esc(signIn)}</span>.</p>
${postForm(path, session.csrf, `<fieldset><legend>Profile</legend>${profileFields(user, false)}<button type="submit">Save changes</button></fieldset>`, 'id="edit-member"')}
<h2>Straps</h2>
${table(`Straps of ${user.username}`, ['Device', 'Kind', 'State', 'Paired'], straps, 'no strap paired yet')}
<p><a class="button" href="/operator/devices?member=${esc(encodeURIComponent(user.username))}">Pair a strap</a> (hold it near the box)</p>
<h2>Invitation</h2>
${postForm(`${path}/invitation`, session.csrf, '<button type="submit" class="secondary">New invitation link</button>')}
<p class="muted">A new link replaces the one before. The member chooses a new password with it.</p>
<p><a href="/operator/users">All members</a> · <a class="danger" href="${esc(path)}/delete">Delete…</a></p>`
    return await sendPage(reply.header('cache-control', 'no-store'), status, `Member ${user.username}`, body, operatorNav(session.csrf, '/operator/users'))
  }

  const noSuchMember = async (reply: FastifyReply, session: Session): Promise<FastifyReply> =>
    await sendPage(reply, 404, 'Member', `${notice('No such member.', 'error')}<p><a href="/operator/users">All members</a></p>`, operatorNav(session.csrf, '/operator/users'))

  app.get<{ Querystring: { q?: unknown, done?: unknown } }>('/operator/users', async (request, reply) => {
    const session = await operatorPage(uses, request, reply)
    if (session === null) return reply
    const q = typeof request.query.q === 'string' ? request.query.q.slice(0, 100) : ''
    const done = request.query.done === 'deleted' ? 'The member and all their data were deleted.' : undefined
    return await listPage(reply, session, 200, q, done)
  })

  app.post('/operator/users', async (request, reply) => {
    const f = await operatorForm(uses, request, reply)
    if (f === null) return reply
    const values = { username: one(f.form, 'username').trim(), display_name: one(f.form, 'display_name'), sex: one(f.form, 'sex'), way: one(f.form, 'way') }
    const refuse = async (error: string, status = 400): Promise<FastifyReply> => await listPage(reply, f.session, status, '', undefined, `${error} The member was not added.`, values)
    if (!USERNAME.test(values.username)) return await refuse('The username is 1 to 100 characters, without spaces or slashes.')
    const profile = profileOf(f.form, false)
    if ('error' in profile) return await refuse(profile.error)
    if (profile.display_name == null || profile.age == null || profile.sex == null || profile.weight_kg == null) return await refuse('Name, age, sex and weight are needed (they set the heart-rate zones and calories).')
    const invite = values.way !== 'password'
    const password = one(f.form, 'password')
    if (!invite && (password.length < PASSWORD_MIN || password.length > PASSWORD_MAX)) return await refuse(`The password is ${PASSWORD_MIN} to ${PASSWORD_MAX} characters.`)
    setAuditObject(request, values.username)
    let added
    try {
      added = await addMember(uses, {
        username: values.username,
        ...(invite ? { invite: true } : { password }),
        display_name: profile.display_name,
        age: profile.age,
        sex: profile.sex,
        weight_kg: profile.weight_kg,
        ...(profile.max_heart_rate == null ? {} : { max_heart_rate: profile.max_heart_rate })
      })
    } catch (err) {
      if (err instanceof ApiError && err.status === 409) return await refuse(`The username ${values.username} is taken.`, 409)
      throw err
    }
    uses.log.child({ component: 'web' }).info({ profile_id: added.user.profile_id, invited: invite }, 'member added at the front desk')
    if (added.invitation === undefined) return await reply.redirect(`${memberPath(added.user.username)}?done=added`, 303)
    return await memberPage(reply, f.session, 201, added.user, `${added.user.username} was added.`, undefined, invitationBlock(added.user.username, added.invitation))
  })

  app.get<{ Params: { username: string }, Querystring: { done?: unknown } }>('/operator/users/:username', async (request, reply) => {
    const session = await operatorPage(uses, request, reply)
    if (session === null) return reply
    const user = await uses.users.byUsername(request.params.username)
    if (user === undefined) return await noSuchMember(reply, session)
    const done = { added: `${user.username} was added.`, saved: 'Changes saved.', paired: 'Strap paired.' }[String(request.query.done)]
    return await memberPage(reply, session, 200, user, done)
  })

  app.post<{ Params: { username: string } }>('/operator/users/:username', async (request, reply) => {
    const f = await operatorForm(uses, request, reply)
    if (f === null) return reply
    const user = await uses.users.byUsername(request.params.username)
    if (user === undefined) return await noSuchMember(reply, f.session)
    const patch = profileOf(f.form, true)
    if ('error' in patch) return await memberPage(reply, f.session, 400, user, undefined, `${patch.error} Nothing was changed.`)
    await updateMember(uses, user.username, patch)
    return await reply.redirect(`${memberPath(user.username)}?done=saved`, 303)
  })

  app.post<{ Params: { username: string } }>('/operator/users/:username/invitation', async (request, reply) => {
    const f = await operatorForm(uses, request, reply)
    if (f === null) return reply
    const user = await uses.users.byUsername(request.params.username)
    if (user === undefined) return await noSuchMember(reply, f.session)
    const { user: invited, invitation } = await inviteMember(uses, user.username)
    return await memberPage(reply, f.session, 201, invited, 'A new invitation link was made; the one before no longer works.', undefined, invitationBlock(invited.username, invitation))
  })
}
