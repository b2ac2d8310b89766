// Pages of a signed-in user: the manual-token page (spec 4.1 "Manual token
// issuing": paid plan or trial only) and the connected-apps page with
// Disconnect (spec 3.3: afterwards every token of that user for that app
// answers 401).
import type { FastifyInstance } from 'fastify'
import { ALL_SCOPES, parseScopes } from '../scopes.ts'
import { premiumActive } from '../store/users.ts'
import { MANUAL_CLIENT_ID, csrfOk, pageForm, signedIn, type OAuthContext } from './context.ts'
import { errorPage, esc, hidden, sendPage, signOutForm, tokenBody } from './pages.ts'

const MANUAL_SCOPES = ALL_SCOPES.filter(s => s !== 'profile:create')

function tokenForm (csrf: string, error?: string): string {
  const boxes = MANUAL_SCOPES.map((s, i) =>
    `<div><input type="checkbox" id="scope-${i}" name="scope" value="${esc(s)}"${s === 'data:heart_rate:read' ? ' checked' : ''}> <label for="scope-${i}" style="display:inline;font-weight:400"><code>${esc(s)}</code></label></div>`).join('\n')
  return `${error === undefined ? '' : `<p class="error" role="alert">${esc(error)}</p>`}
<form method="post" action="/account/tokens">
${hidden('csrf', csrf)}
<fieldset><legend>Scopes</legend>
${boxes}
</fieldset>
<button type="submit">Create token</button>
</form>`
}

const NEEDS_PLAN = 'Creating tokens by hand needs an active paid plan or a trial. Ask the operator of this relay to enable one for your account.'

export function accountRoutes (app: FastifyInstance, ctx: OAuthContext): void {
  app.get('/account', async (request, reply) => {
    const who = await signedIn(ctx, request, reply, '/account')
    if (who === null) return reply
    return await sendPage(reply, 200, `Signed in as ${who.user.username}`, `<ul>
<li><a href="/account/tokens">Create an access token</a></li>
<li><a href="/account/apps">Connected apps</a></li>
<li><a href="/device">Connect a device</a></li>
</ul>${signOutForm(who.session.csrf)}`)
  })

  app.get('/account/tokens', async (request, reply) => {
    const who = await signedIn(ctx, request, reply, '/account/tokens')
    if (who === null) return reply
    if (!premiumActive(who.user)) return await errorPage(reply, 402, 'Paid plan required', NEEDS_PLAN)
    return await sendPage(reply, 200, 'Create an access token', tokenForm(who.session.csrf))
  })

  app.post('/account/tokens', async (request, reply) => {
    const form = await pageForm(request, reply)
    if (form === null) return reply
    if (!await csrfOk(ctx, request, reply, form)) return reply
    const who = await signedIn(ctx, request, reply, '/account/tokens')
    if (who === null) return reply
    if (!premiumActive(who.user)) return await errorPage(reply, 402, 'Paid plan required', NEEDS_PLAN)
    const chosen = form.all('scope')
    const scopes = chosen.length === 0 ? null : parseScopes(chosen.join(' '))
    if (scopes === null || scopes.includes('profile:create')) return await sendPage(reply, 400, 'Create an access token', tokenForm(who.session.csrf, 'Choose at least one of the listed scopes.'))
    const lifetime = ctx.config.lifetimes.manual
    const issued = await ctx.tokens.issue({ client_id: MANUAL_CLIENT_ID, profile_id: who.user.profile_id, scopes, flow: 'manual', expires_in: lifetime })
    ctx.log.info({ profile_id: who.user.profile_id }, 'manual token created')
    return await sendPage(reply, 201, 'Your access token', tokenBody('access token', issued.access_token, [['Scopes', issued.scope], ['Expires in', `${issued.expires_in} seconds`]]) + '<p><a href="/account">Back to your account</a></p>')
  })

  app.get('/account/apps', async (request, reply) => {
    const who = await signedIn(ctx, request, reply, '/account/apps')
    if (who === null) return reply
    const ids = await ctx.tokens.grantedClients(who.user.profile_id)
    const rows: string[] = []
    for (const id of ids) {
      const name = id === MANUAL_CLIENT_ID ? 'Manual tokens' : (await ctx.clients.get(id))?.name ?? id
      rows.push(`<li><strong>${esc(name)}</strong>
<form method="post" action="/account/apps/disconnect" style="display:inline">${hidden('csrf', who.session.csrf)}${hidden('client_id', id)}<button type="submit" aria-label="Disconnect ${esc(name)}">Disconnect</button></form></li>`)
    }
    const body = rows.length === 0 ? '<p>No apps have access to your account.</p>' : `<ul>${rows.join('\n')}</ul>`
    return await sendPage(reply, 200, 'Connected apps', body + '<p><a href="/account">Back to your account</a></p>')
  })

  app.post('/account/apps/disconnect', async (request, reply) => {
    const form = await pageForm(request, reply)
    if (form === null) return reply
    if (!await csrfOk(ctx, request, reply, form)) return reply
    const who = await signedIn(ctx, request, reply, '/account/apps')
    if (who === null) return reply
    let clientId: string | undefined
    try { clientId = form.get('client_id') } catch { clientId = undefined }
    if (clientId === undefined || clientId === '' || clientId.length > 200) return await errorPage(reply, 400, 'Bad request', 'No app was named.')
    const revoked = await ctx.tokens.revokeGrant(who.user.profile_id, clientId)
    ctx.log.info({ profile_id: who.user.profile_id, client_id: clientId, revoked }, 'app disconnected')
    return await reply.redirect('/account/apps', 303)
  })
}
