// /me/widgets: the member's widgets with their overlay links (OBS browser
// source), the configuration editor, creation and revocation (delete).
import type { FastifyInstance } from 'fastify'
import { BASIC_WIDGET_META_ID, TooManyWidgetsError, type WidgetRecord } from '../store/widgets.ts'
import { esc, notice, postForm, sendPage } from './html.ts'
import { checkedForm, memberOf, type PageGuardUses } from './guard.ts'
import { DEFAULT_CONFIG, editable, parseWidgetForm, widgetFields } from './widget-form.ts'
import { memberNav } from './nav.ts'
import type { Services } from '../services.ts'

const MESSAGES: Record<string, string> = { created: 'Widget created.', saved: 'Widget saved.', revoked: 'Widget revoked: its overlay link no longer works.' }

function widgetSection (publicUrl: string, csrf: string, w: WidgetRecord): string {
  const link = `${publicUrl}/widgets/${w.id}/view`
  return `<section class="widget-item" aria-labelledby="w-${esc(w.id)}"><h2 id="w-${esc(w.id)}">${esc(w.name)}</h2>
<p>Overlay link (add it to OBS as a browser source; anyone with the link can see your heart rate):<br>
<a class="mono overlay-link" href="${esc(link)}">${esc(link)}</a></p>
${postForm(`/me/widgets/${encodeURIComponent(w.id)}`, csrf, `<fieldset><legend>Configuration</legend>${widgetFields(`w${w.id.slice(0, 8)}`, w.name, editable(w.configuration))}</fieldset>
<button type="submit">Save ${esc(w.name)}</button>`)}
${postForm(`/me/widgets/${encodeURIComponent(w.id)}/delete`, csrf, `<button type="submit" class="danger">Revoke ${esc(w.name)}</button>`)}
</section>`
}

/** What the widget pages use: the widget store, the public URL (overlay links), and the member guard. */
export type MemberWidgetsUses = PageGuardUses & Pick<Services, 'widgets'>

export async function widgetRoutes (app: FastifyInstance, uses: MemberWidgetsUses): Promise<void> {
  const page = async (reply: import('fastify').FastifyReply, csrf: string, profileId: string, status: number, message?: string, error?: string): Promise<unknown> => {
    const widgets = await uses.widgets.list(profileId)
    const body = `${notice(message)}${notice(error, 'error')}
${widgets.map(w => widgetSection(uses.config.publicUrl, csrf, w)).join('\n')}
${widgets.length === 0 ? '<p>You have no widgets yet.</p>' : ''}
<section aria-labelledby="new-widget"><h2 id="new-widget">New bpm widget</h2>
${postForm('/me/widgets', csrf, `${widgetFields('new', 'My heart rate', DEFAULT_CONFIG)}<button type="submit">Create widget</button>`)}</section>`
    return await sendPage(reply, status, 'Widgets', body, memberNav(csrf, '/me/widgets'))
  }

  app.get<{ Querystring: { done?: unknown } }>('/me/widgets', async (request, reply) => {
    const who = await memberOf(uses, request, reply, '/me/widgets')
    if (who === null) return reply
    const msg = MESSAGES[String(request.query.done ?? '')]
    return await page(reply, who.session.csrf, who.user.profile_id, 200, msg)
  })

  app.post('/me/widgets', async (request, reply) => {
    const checked = await checkedForm(uses, request, reply)
    if (checked === null) return reply
    const who = await memberOf(uses, request, reply, '/me/widgets')
    if (who === null) return reply
    const parsed = parseWidgetForm(checked.form, {})
    if (!parsed.ok) return await page(reply, who.session.csrf, who.user.profile_id, 400, undefined, parsed.error)
    try {
      await uses.widgets.create(who.user.profile_id, { meta_id: BASIC_WIDGET_META_ID, name: parsed.name, configuration: parsed.config })
    } catch (err) {
      if (err instanceof TooManyWidgetsError) return await page(reply, who.session.csrf, who.user.profile_id, 400, undefined, err.message)
      throw err
    }
    return await reply.redirect('/me/widgets?done=created', 303)
  })

  app.post<{ Params: { widget_id: string } }>('/me/widgets/:widget_id', async (request, reply) => {
    const checked = await checkedForm(uses, request, reply)
    if (checked === null) return reply
    const who = await memberOf(uses, request, reply, '/me/widgets')
    if (who === null) return reply
    const { widget_id: id } = request.params
    const existing = await uses.widgets.get(id)
    if (existing === undefined || existing.profile_id !== who.user.profile_id) return await page(reply, who.session.csrf, who.user.profile_id, 404, undefined, 'No such widget.')
    const parsed = parseWidgetForm(checked.form, existing.configuration)
    if (!parsed.ok) return await page(reply, who.session.csrf, who.user.profile_id, 400, undefined, parsed.error)
    await uses.widgets.update(who.user.profile_id, id, { configuration: parsed.config, name: parsed.name })
    return await reply.redirect('/me/widgets?done=saved', 303)
  })

  app.post<{ Params: { widget_id: string } }>('/me/widgets/:widget_id/delete', async (request, reply) => {
    const checked = await checkedForm(uses, request, reply)
    if (checked === null) return reply
    const who = await memberOf(uses, request, reply, '/me/widgets')
    if (who === null) return reply
    const { widget_id: id } = request.params
    const deleted = await uses.widgets.delete(who.user.profile_id, id)
    if (!deleted) return await page(reply, who.session.csrf, who.user.profile_id, 404, undefined, 'No such widget.')
    return await reply.redirect('/me/widgets?done=revoked', 303)
  })
}
