// Operator pages: sign-in with the admin token (operator-auth.ts), overview
// with the relay's sources and their health, and clients; members
// (operator-members.ts, with the invitation page a member opens), rooms
// (operator-rooms.ts) and devices (operator-devices.ts).
import type { FastifyPluginAsync } from 'fastify'
import { useStrictForms } from '../oauth/form.ts'
import { esc, field, hidden, notice, sendPage, table, when } from './html.ts'
import { checkedForm, one, sessionsOf } from './guard.ts'
import { operatorNav } from './nav.ts'
import { operatorPage, operatorSession, operatorSignIn, operatorSignOut } from './operator-auth.ts'
import { roomRoutes, type OperatorRoomsUses } from './operator-rooms.ts'
import { deviceRoutes, type OperatorDevicesUses } from './operator-devices.ts'
import { userDeleteRoutes, type OperatorUsersUses } from './operator-users.ts'
import { memberRoutes, type OperatorMembersUses } from './operator-members.ts'
import { invitationRoutes } from './operator-members-invite.ts'
import { auditRoutes } from './operator-audit.ts'
import { operatorAccountRoutes } from './operator-operators.ts'
import type { Services } from '../services.ts'

/** What the operator pages use: the overview's health, rooms, accounts and clients, and what the rooms and devices pages name. */
export type OperatorPagesUses = OperatorRoomsUses & OperatorDevicesUses & OperatorUsersUses & OperatorMembersUses & Pick<Services, 'clients'>

function signInBody (csrf: string, error?: string): string {
  return `${notice(error, 'error')}<form method="post" action="/operator/signin">${hidden('csrf', csrf)}
<fieldset><legend>Sign in with your operator account</legend>
${field('operator-name', 'Name', '<input type="text" id="operator-name" name="name" autocomplete="username" required maxlength="64">')}
${field('operator-password', 'Password', '<input type="password" id="operator-password" name="password" autocomplete="current-password" required maxlength="200">')}
<button type="submit">Log in</button></fieldset></form>
<form method="post" action="/operator/signin">${hidden('csrf', csrf)}
<fieldset><legend>Or with the admin token (the box's first owner)</legend>
<p>It is in the file <code>admin-token</code> in the data directory (<code>hr-relay admin token</code> prints it).</p>
${field('admin-token', 'Admin token', '<input type="password" id="admin-token" name="admin_token" autocomplete="off" required maxlength="200">')}
<button type="submit">Sign in</button></fieldset></form>`
}

export const operatorRoutes: FastifyPluginAsync<OperatorPagesUses> = async (app, uses) => {
  useStrictForms(app)

  app.get('/operator/signin', async (request, reply) => {
    if (operatorSession(uses, request) !== undefined) return await reply.redirect('/operator', 303)
    const session = sessionsOf(uses).ensure(request, reply)
    return await sendPage(reply, 200, 'Operator sign-in', signInBody(session.csrf))
  })

  app.post('/operator/signin', async (request, reply) => {
    const checked = await checkedForm(uses, request, reply)
    if (checked === null) return reply
    const name = one(checked.form, 'name')
    const byName = name !== ''
    const result = await operatorSignIn(uses, request, reply, byName ? { name, password: one(checked.form, 'password') } : { token: one(checked.form, 'admin_token') })
    if (result === 'ok') {
      uses.log.child({ component: 'web' }).info({ ip: request.ip }, 'operator signed in')
      return await reply.header('cache-control', 'no-store').redirect('/operator', 303)
    }
    uses.log.child({ component: 'web' }).info({ ip: request.ip, result }, 'operator sign-in refused')
    const status = result === 'limited' ? 429 : 401
    const msg = result === 'limited' ? 'Too many failed attempts. Wait a minute and try again.' : byName ? 'Wrong name or password.' : 'That is not the admin token.'
    return await sendPage(reply, status, 'Operator sign-in', signInBody(checked.session.csrf, msg))
  })

  app.post('/operator/signout', async (request, reply) => {
    const checked = await checkedForm(uses, request, reply)
    if (checked === null) return reply
    await operatorSignOut(uses, request, reply)
    return await reply.redirect('/operator/signin', 303)
  })

  app.get('/operator', async (request, reply) => {
    // The overview (counts and the sources' health, nothing personal) is where every operator lands.
    const session = await operatorPage(uses, request, reply, { allow: 'coach' })
    if (session === null) return reply
    const sources = uses.health().map(h => [esc(h.id), `<span class="state state-${esc(h.state)}">${esc(h.state)}</span>`, esc(h.detail ?? ''), esc(h.connected ?? '')])
    const rooms = uses.rooms.list()
    const users = await uses.users.list()
    const body = `<p>${esc(users.length)} users · ${esc(rooms.length)} rooms · <a href="/operator/devices">devices</a></p>
${table('Relay sources and their health', ['Source', 'State', 'Detail', 'Connected'], sources, 'no sources are configured')}
<p class="muted">The same list is at <a href="/health">/health</a>.</p>`
    return await sendPage(reply, 200, 'Relay overview', body, operatorNav(session.csrf, '/operator'))
  })

  app.get('/operator/clients', async (request, reply) => {
    const session = await operatorPage(uses, request, reply)
    if (session === null) return reply
    const rows = (await uses.clients.list()).map(c => [
      esc(c.name), `<code>${esc(c.client_id)}</code>`, c.redirect_uris.map(u => `<code>${esc(u)}</code>`).join('<br>'),
      c.secret_hash === null ? 'public' : 'confidential', esc(when(c.created_at))
    ])
    const body = `${table('OAuth clients', ['Name', 'Client id', 'Redirect URIs', 'Type', 'Created'], rows)}
<p class="muted">Register clients with <code>hr-relay admin client add</code>.</p>`
    return await sendPage(reply, 200, 'Clients', body, operatorNav(session.csrf, '/operator/clients'))
  })

  await roomRoutes(app, uses)
  await deviceRoutes(app, uses)
  await memberRoutes(app, uses)
  await invitationRoutes(app, uses)
  await userDeleteRoutes(app, uses)
  await auditRoutes(app, uses)
  await operatorAccountRoutes(app, uses)
}
