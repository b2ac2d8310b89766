// The member page's training sessions (/me): the last 7 days' sessions, newest
// first, each with a chart (inline SVG, no script), time in zones, HRV and
// export links, and /me/sessions/{id}/export for the signed-in member (same
// exports as GET /api/v1/data/sessions/{id}/export). Definitions: api/sessions.ts.
import type { FastifyInstance } from 'fastify'
import { ApiError } from '../errors.ts'
import { esc, table } from './html.ts'
import { sessionsOf } from './guard.ts'
import { loadSession } from '../session-reads.ts'
import { optionsFor, sendExport, sessionsOfProfile, type SessionUses } from '../http/sessions.ts'
import type { SessionReading, SessionSummary } from '../sessions.ts'
import type { Services } from '../services.ts'

const WEEK_MS = 7 * 86_400_000
const MAX_SHOWN = 10
const W = 600
const H = 120

const mmss = (s: number): string => `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`

/** SVG polyline of bpm over the session, at most ~300 points. */
function chart (s: SessionSummary, readings: readonly SessionReading[]): string {
  const step = Math.max(1, Math.ceil(readings.length / 300))
  const span = Math.max(1, s.end - s.start)
  const lo = s.min - 5
  const hi = s.max + 5
  const pts: string[] = []
  for (let i = 0; i < readings.length; i += step) {
    const r = readings[i] as SessionReading
    pts.push(`${(((r.measured_at - s.start) / span) * W).toFixed(1)},${(H - ((r.heart_rate - lo) / (hi - lo)) * H).toFixed(1)}`)
  }
  return `<svg class="session-chart" viewBox="0 0 ${W} ${H}" width="100%" height="${H}" role="img" aria-label="Heart rate from ${esc(s.min)} to ${esc(s.max)} bpm"><polyline fill="none" stroke="#c00020" stroke-width="2" points="${pts.join(' ')}"/></svg>`
}

/** The sessions section of /me for a profile. */
/** What the sessions section and export use: the stored readings, the member's settings and the session gap. */
export type MemberSessionsUses = SessionUses & Pick<Services, 'config'>

export async function sessionsSection (uses: MemberSessionsUses, profileId: string, now = Date.now()): Promise<string> {
  const all = await sessionsOfProfile(uses, profileId, now - WEEK_MS, now + 1)
  const shown = all.reverse().slice(0, MAX_SHOWN)
  if (shown.length === 0) return '<h2>Sessions</h2><p class="muted">No training sessions in the last 7 days.</p>'
  const o = await optionsFor(uses, profileId)
  const parts: string[] = []
  for (const s of shown) {
    const readings = await loadSession(uses.readings, profileId, s.id, o.sessionGapMs) ?? []
    const zones = s.zones_s.map((sec, i) => [`Zone ${i + 1}`, `${50 + 10 * i}–${60 + 10 * i} %`, mmss(sec)])
    const links = (['csv', 'tcx', 'fit'] as const).map(f => `<a href="/me/sessions/${esc(s.id)}/export?format=${f}" download>${f.toUpperCase()}</a>`).join(' · ')
    parts.push(`<section class="session" aria-labelledby="session-${esc(s.id)}"><h3 id="session-${esc(s.id)}">${esc(new Date(s.start).toISOString())} · ${esc(mmss(s.duration_s))}</h3>
${chart(s, readings)}
<dl><dt>Average</dt><dd>${esc(s.avg)} bpm</dd><dt>Minimum</dt><dd>${esc(s.min)} bpm</dd><dt>Maximum</dt><dd>${esc(s.max)} bpm</dd><dt>Calories</dt><dd>${esc(s.kcal)} kcal</dd>
<dt>RMSSD</dt><dd>${s.rmssd_ms === null ? 'no RR data' : `${esc(s.rmssd_ms)} ms`}</dd><dt>SDNN</dt><dd>${s.sdnn_ms === null ? 'no RR data' : `${esc(s.sdnn_ms)} ms`}</dd><dt>RR artefacts dropped</dt><dd>${esc(s.rr_dropped)}</dd></dl>
${table(`Time in zones (maximum heart rate ${s.max_heart_rate} bpm)`, ['Zone', 'Of maximum', 'Time'], zones)}
<p>Export: ${links}</p></section>`)
  }
  return `<h2>Sessions</h2>\n${parts.join('\n')}`
}

export async function memberSessionRoutes (app: FastifyInstance, uses: MemberSessionsUses): Promise<void> {
  /** A session's export for the signed-in member (session cookie; no token). */
  app.get<{ Params: { id: string }, Querystring: { format?: unknown } }>('/me/sessions/:id/export', async (request, reply) => {
    const session = sessionsOf(uses).find(request)
    if (session?.profile_id == null) throw new ApiError('header_missing', { detail: 'sign in first' })
    return await sendExport(uses, reply, session.profile_id, request.params.id, request.query.format)
  })
}
