// The member page's classes (/me): the member's class summaries, newest first,
// each linking to its own page (/me/classes/{class_id}) with the chart of the
// class window (static/chart.js), time in zones and CSV/TCX/FIT downloads
// (the same files as GET /api/v1/classes/{id}/export), and the maxima their
// classes raised: when, in which class, from what to what.
import type { FastifyInstance } from 'fastify'
import { ApiError } from '../errors.ts'
import { esc, sendPage, table, when } from './html.ts'
import { memberNav } from './nav.ts'
import { memberOf, sessionsOf, type PageGuardUses } from './guard.ts'
import { series } from './readings-view.ts'
import { sendClassExport, type ClassExportUses } from '../export/class-export.ts'
import type { ClassSummary } from '../classes/types.ts'

const MAX_SHOWN = 10

const mmss = (s: number): string => `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`
const bpm = (v: number | null): string => v === null ? '—' : `${esc(v)} bpm`
const link = (s: ClassSummary): string => `/me/classes/${encodeURIComponent(s.class_id)}`

/** What the classes section and pages use. */
export type MemberClassesUses = PageGuardUses & ClassExportUses

/** The classes section of /me: the last classes and the learned maximum. */
export async function classesSection (uses: MemberClassesUses, profileId: string): Promise<string> {
  const all = await uses.classStore.summariesOf(profileId)
  const rows = all.reverse().slice(0, MAX_SHOWN).map(s => [
    `<a href="${esc(link(s))}">${esc(s.name)}</a>`,
    esc(when(s.started_at)),
    esc(mmss(s.duration_s)),
    `${esc(s.effort_points)}`,
    `${esc(s.rank)} of ${esc(s.ranked)}`,
    bpm(s.avg_bpm),
    `${esc(s.calories_kcal)} kcal`
  ])
  const learned = (await uses.classStore.learnedOf(profileId)).reverse()
  const names = new Map(all.map(s => [s.class_id, s.name]))
  const raised = learned.length === 0
    ? ''
    : `<h3>Your maximum heart rate</h3><ul id="learned-max">${learned.slice(0, MAX_SHOWN).map(l => `<li>Raised to <strong>${esc(l.new_bpm)} bpm</strong> from ${l.old_bpm === null ? 'an estimate (none set)' : `${esc(l.old_bpm)} bpm`} on ${esc(when(l.at))}${names.has(l.class_id) ? `, in the class ${esc(names.get(l.class_id))}` : ''}: your readings held above your maximum for 30 seconds.</li>`).join('')}</ul>`
  return `<h2>Classes</h2>\n${table('Your classes', ['Class', 'Started', 'Length', 'Effort points', 'Rank', 'Average', 'Calories'], rows, 'no classes yet')}\n${raised}`
}

export async function memberClassRoutes (app: FastifyInstance, uses: MemberClassesUses): Promise<void> {
  /** One class summary with its chart. */
  app.get<{ Params: { class_id: string } }>('/me/classes/:class_id', async (request, reply) => {
    const who = await memberOf(uses, request, reply, `/me/classes/${encodeURIComponent(request.params.class_id)}`)
    if (who === null) return reply
    const s = await uses.classStore.summaryOf(who.user.profile_id, request.params.class_id)
    if (s === undefined) throw new ApiError('not_found', { detail: 'no class with this id' })
    const zones = s.zones_s.map((sec, i) => [`Zone ${i + 1}`, `${50 + 10 * i}–${60 + 10 * i} %`, esc(mmss(sec))])
    const links = (['csv', 'tcx', 'fit'] as const).map(f => `<a href="${esc(link(s))}/export?format=${f}" download>${f.toUpperCase()}</a>`).join(' · ')
    const body = `<p><a href="/me">Back to your page</a></p>
<dl id="class-summary"><dt>Started</dt><dd>${esc(when(s.started_at))}</dd><dt>Length</dt><dd>${esc(mmss(s.duration_s))}</dd>
<dt>Effort points</dt><dd id="class-effort">${esc(s.effort_points)}</dd><dt>Rank</dt><dd id="class-rank">${esc(s.rank)} of ${esc(s.ranked)}</dd>
<dt>Average</dt><dd>${bpm(s.avg_bpm)}</dd><dt>Maximum</dt><dd>${bpm(s.max_bpm)}</dd><dt>Calories</dt><dd>${esc(s.calories_kcal)} kcal</dd></dl>
<h2 id="chart-title">Heart rate during the class</h2>
<div id="chart" class="chart" role="img" aria-labelledby="chart-title" data-source="${esc(link(s))}/readings" data-period="in this class"></div>
<p id="chart-status" class="muted" role="status">Loading…</p>
${table(`Time in zones (maximum heart rate ${s.max_heart_rate} bpm)`, ['Zone', 'Of maximum', 'Time'], zones)}
<p>Export: ${links}</p>`
    return await sendPage(reply, 200, s.name, body, { ...memberNav(who.session.csrf, '/me'), styles: ['/web/vendor/uplot/uPlot.min.css'], scripts: ['/web/static/chart.js'] })
  })

  /** The class window's readings for the chart: {resolution, points: [[ms, bpm], ...], from, to} (session only). */
  app.get<{ Params: { class_id: string } }>('/me/classes/:class_id/readings', async (request, reply) => {
    const session = sessionsOf(uses).find(request)
    if (session?.profile_id == null) throw new ApiError('header_missing', { detail: 'sign in first' })
    const s = await uses.classStore.summaryOf(session.profile_id, request.params.class_id)
    if (s === undefined) throw new ApiError('not_found', { detail: 'no class with this id' })
    reply.header('cache-control', 'no-store')
    return { ...await series(uses.readings, session.profile_id, s.started_at, s.ended_at - 1), from: s.started_at, to: s.ended_at }
  })

  /** A class's export for the signed-in member (session cookie; no token). */
  app.get<{ Params: { class_id: string }, Querystring: { format?: unknown } }>('/me/classes/:class_id/export', async (request, reply) => {
    const session = sessionsOf(uses).find(request)
    if (session?.profile_id == null) throw new ApiError('header_missing', { detail: 'sign in first' })
    return await sendClassExport(uses, reply, session.profile_id, request.params.class_id, request.query.format)
  })
}
