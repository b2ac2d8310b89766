// The member's Home Assistant opt-in on /me: one small form posting to
// /me/home-assistant. When the operator turned the integration on
// (home_assistant.enabled), opted-in members appear in Home Assistant through
// MQTT discovery (relay/integrations/home-assistant.ts).
import type { FastifyInstance } from 'fastify'
import type { UserRecord } from '../store/users.ts'
import { hidden, postForm } from './html.ts'
import { checkedForm, memberOf, one, type PageGuardUses } from './guard.ts'
import { errorPage } from '../oauth/pages.ts'

export function homeAssistantSection (user: UserRecord, csrf: string): string {
  const on = user.home_assistant === true
  return `<h2 id="home-assistant">Home Assistant</h2>
<p id="home-assistant-state">Your heart rate, strap battery and connection are ${on ? '<strong>shared</strong> with' : '<strong>not shared</strong> with'} the operator's Home Assistant.</p>
${postForm('/me/home-assistant', csrf, `${hidden('enabled', on ? 'off' : 'on')}<button type="submit">${on ? 'Stop sharing with Home Assistant' : 'Share with Home Assistant'}</button>`, 'class="inline"')}`
}

export async function homeAssistantRoutes (app: FastifyInstance, uses: PageGuardUses): Promise<void> {
  app.post('/me/home-assistant', async (request, reply) => {
    const checked = await checkedForm(uses, request, reply)
    if (checked === null) return reply
    const who = await memberOf(uses, request, reply, '/me')
    if (who === null) return reply
    const value = one(checked.form, 'enabled')
    if (value !== 'on' && value !== 'off') return await errorPage(reply, 400, 'Bad request', 'Choose to share or to stop sharing.')
    await uses.users.setHomeAssistant(who.user.profile_id, value === 'on')
    return await reply.redirect('/me#home-assistant', 303)
  })
}
