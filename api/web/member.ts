// Pages of a signed-in member (the OAuth sign-in session): today's heart rate
// chart and statistics (/me), widgets with overlay links and the
// configuration editor (/me/widgets), the game-mod configuration (/me/game-mod).
// Connected apps and manual tokens are helper pages in api/oauth/account.ts
// (/account/apps, /account/tokens); /me links to them and posts Disconnect there.
import type { FastifyPluginAsync } from 'fastify'
import { useStrictForms } from '../oauth/form.ts'
import { MANUAL_CLIENT_ID } from '../oauth/context.ts'
import { statistics, TIME_RANGES, type TimeRange } from '../stats.ts'
import { premiumActive, type UserRecord } from '../store/users.ts'
import { ApiError } from '../errors.ts'
import { esc, hidden, postForm, sendPage, table } from './html.ts'
import { memberNav } from './nav.ts'
import { memberOf, sessionsOf, type PageGuardUses } from './guard.ts'
import { series, startOfToday } from './readings-view.ts'
import { gameModRoutes, type MemberGameModUses } from './member-gamemod.ts'
import { widgetRoutes, type MemberWidgetsUses } from './member-widgets.ts'
import { memberSessionRoutes, sessionsSection, type MemberSessionsUses } from './member-sessions.ts'
import { classesSection, memberClassRoutes, type MemberClassesUses } from './member-classes.ts'
import { roomVisibilityBlock, roomVisibilityRoutes, type AnnounceUses } from './member-rooms.ts'
import { homeAssistantRoutes, homeAssistantSection } from './member-home-assistant.ts'
import { consentBlock, consentRoutes } from './member-consent.ts'
import { memberDeleteRoutes, type MemberDeleteUses } from './member-delete.ts'
import type { Services } from '../services.ts'

/** What the member pages use: the home page's readings, statistics and apps, and what each member page module names. */
export type MemberUses = PageGuardUses & MemberDeleteUses & MemberWidgetsUses & MemberSessionsUses & MemberClassesUses & MemberGameModUses & AnnounceUses & Pick<Services, 'readings' | 'tokens' | 'clients' | 'config' | 'store' | 'devices' | 'classStore'>

function bodyOf (user: UserRecord): { age?: number, weight_kg?: number, sex?: 'male' | 'female' } {
  return { ...(user.age === undefined ? {} : { age: user.age }), ...(user.weight_kg === undefined ? {} : { weight_kg: user.weight_kg }), ...(user.sex === undefined ? {} : { sex: user.sex }) }
}

/** Client id of tokens made with `hr-relay admin token` (api/http/admin.ts). */
const ADMIN_CLIENT_ID = 'hr-relay-admin'

const RANGE_LABELS: Record<TimeRange, string> = { '24h': 'Last 24 hours', '7d': 'Last 7 days', '30d': 'Last 30 days' }

export const memberRoutes: FastifyPluginAsync<MemberUses> = async (app, uses) => {
  useStrictForms(app)

  app.get('/me', async (request, reply) => {
    const who = await memberOf(uses, request, reply, '/me')
    if (who === null) return reply
    const { user, session } = who
    const stats: string[] = []
    for (const range of Object.keys(TIME_RANGES) as TimeRange[]) {
      const s = await statistics(uses.readings, user.profile_id, range, bodyOf(user))
      stats.push(`<section aria-labelledby="stats-${range}"><h3 id="stats-${range}">${esc(RANGE_LABELS[range])}</h3><dl>
<dt>Average</dt><dd>${esc(s.average_beats_per_minute)} bpm</dd><dt>Minimum</dt><dd>${esc(s.minimum_beats_per_minute)} bpm</dd>
<dt>Maximum</dt><dd>${esc(s.maximum_beats_per_minute)} bpm</dd><dt>Streamed</dt><dd>${esc(Math.round(s.streamed_duration_in_seconds / 60))} min</dd>
<dt>Calories</dt><dd>${esc(s.calories_burned_in_kcal)} kcal</dd></dl></section>`)
    }
    const apps: string[][] = []
    for (const id of await uses.tokens.grantedClients(user.profile_id)) {
      const name = id === MANUAL_CLIENT_ID ? 'Manual tokens' : id === ADMIN_CLIENT_ID ? 'Tokens issued by the operator' : (await uses.clients.get(id))?.name ?? id
      apps.push([esc(name), postForm('/account/apps/disconnect', session.csrf, `${hidden('client_id', id)}<button type="submit" class="danger" aria-label="Disconnect ${esc(name)}">Disconnect</button>`, 'class="inline"')])
    }
    const latest = await uses.readings.latest(user.profile_id)
    const body = `<p>Signed in as <strong>${esc(user.username)}</strong>${premiumActive(user) ? ` · plan: ${esc(user.premium.plan)}` : ''}.
Latest reading: ${latest === undefined ? 'none yet' : `<strong id="latest-bpm">${esc(latest.heart_rate)}</strong> bpm at ${esc(new Date(latest.measured_at).toISOString())}`}</p>
<h2 id="chart-title">Today's heart rate</h2>
<div id="chart" class="chart" role="img" aria-labelledby="chart-title" data-source="/me/readings/today"></div>
<p id="chart-status" class="muted" role="status">Loading…</p>
${roomVisibilityBlock(user, session.csrf)}
${consentBlock(uses, user, session.csrf)}
<h2>Statistics</h2><div class="stats">${stats.join('\n')}</div>
${await sessionsSection(uses, user.profile_id)}
${await classesSection(uses, user.profile_id)}
<h2>Connected apps</h2>${table('Apps with access to your data', ['App', ''], apps, 'no apps have access')}
<p><a href="/account/apps">Manage connected apps</a> · <a href="/account/tokens">Create a manual token</a> (paid plan or trial)</p>
${homeAssistantSection(user, session.csrf)}`
    return await sendPage(reply, 200, 'Today', body, {
      ...memberNav(session.csrf, '/me'),
      styles: ['/web/vendor/uplot/uPlot.min.css'],
      scripts: ['/web/static/chart.js']
    })
  })

  /** Today's readings for the chart: {resolution, points: [[ms, bpm], ...], from, to} (session only; no token). */
  app.get('/me/readings/today', async (request, reply) => {
    const session = sessionsOf(uses).find(request)
    if (session?.profile_id == null) throw new ApiError('header_missing', { detail: 'sign in first' })
    const now = Date.now()
    reply.header('cache-control', 'no-store')
    // from/to: today's window, the chart's time axis never leaves it (static/chart.js).
    const from = startOfToday(now)
    return { ...await series(uses.readings, session.profile_id, from, now), from, to: now }
  })

  await widgetRoutes(app, uses)
  await memberSessionRoutes(app, uses)
  await memberClassRoutes(app, uses)
  await gameModRoutes(app, uses)
  await roomVisibilityRoutes(app, uses)
  await homeAssistantRoutes(app, uses)
  await consentRoutes(app, uses)
  await memberDeleteRoutes(app, uses)
}
