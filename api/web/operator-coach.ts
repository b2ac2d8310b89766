// The coach's tablet, /operator/rooms/<room_id>/coach (issue 43): start and
// end a class, live tiles with the class's alerts and "no signal", a member's
// last ten minutes on a tap, and a "hide from display" switch per member for
// the running class. For an operator with the coach role or above. The forms
// call the class engine (uses.classes); the page (static/coach.js) follows
// the room's stream as the coach sees it (the display stream with the members
// hidden from displays, session-authenticated) and reads two
// session-authenticated JSON routes: the room's state and a member's last ten
// minutes.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { ApiError } from '../errors.ts'
import type { RoomRecord } from '../store/rooms.ts'
import type { Session } from '../oauth/session.ts'
import { ClassError, type ClassControl, type ClassView } from '../classes/types.ts'
import { esc, field, hidden, jsonBlock, notice, postForm, sendPage } from './html.ts'
import { one, sessionsOf } from './guard.ts'
import type { Services } from '../services.ts'
import { parseKinds, serveRoom } from '../http/rooms.ts'
import type { Stream } from '../http/stream-socket.ts'
import { DISPLAY_KINDS } from '../hub.ts'
import { operatorNav } from './nav.ts'
import { operatorForm, operatorPage, operatorSession, type OperatorUses } from './operator-auth.ts'
import { displayState, type OverlayUses } from './overlay.ts'
import { trend } from './readings-view.ts'
import { consentMissing } from './member-consent.ts'
import { classTimes } from './static/class-view.js'

/** What the coach page uses: operator sign-in, the rooms' display state (members, readings) and the class engine. */
export type CoachUses = OperatorUses & OverlayUses & Pick<Services, 'hub' | 'log'> & { classes?: ClassControl }

/** A member's chart on the coach page: this far back. */
export const COACH_CHART_MS = 10 * 60_000
const MAX_MINUTES = 240

const DONE: Record<string, string> = {
  started: 'Class started.', ended: 'Class ended: the display shows the results.', hidden: 'Hidden from the display for this class.', shown: 'Shown on the display again.'
}

/** Why a class command was refused, as the coach reads it, with the page's status. */
function refusal (err: ClassError): { status: number, message: string } {
  switch (err.reason) {
    case 'no_room': return { status: 404, message: 'No such room.' }
    case 'class_running': return { status: 409, message: 'A class is already running in this room. End it first.' }
    case 'no_class': return { status: 409, message: 'No class is running in this room.' }
    case 'not_member': return { status: 404, message: 'That member is not in this class.' }
  }
}

/** The class's line under the title; static/coach.js keeps it ticking. */
function statusText (view: ClassView | null, now: number): string {
  if (view === null) return 'No class is running.'
  const t = classTimes(view, now)
  return view.state === 'running' ? `${view.name} · ${t.elapsed} · ${t.remaining}` : `${view.name} ended · results on the display`
}

/** A member's tile: a button that opens the chart, and the class's hide switch. */
function tileHtml (base: string, csrf: string, m: { profile_id: string, display_name: string }): string {
  const id = esc(m.profile_id)
  return `<article class="ctile" data-profile-id="${id}" data-state="no-signal">` +
    `<button type="button" class="ctile-open"><span class="name">${esc(m.display_name)}</span>` +
    '<span class="bpm"><span class="num">--</span> bpm</span><span class="zone">no signal</span><span class="points"></span><span class="flag"></span></button>' +
    postForm(`${base}/class/members/${encodeURIComponent(m.profile_id)}/hidden`, csrf,
      `${hidden('hidden', 'true')}<button type="submit" class="hide-btn secondary" aria-pressed="false">Hide ${esc(m.display_name)} from the display</button>`, 'class="hide-form" hidden') +
    '</article>'
}

function pageBody (room: RoomRecord, session: Session, state: CoachState, available: boolean, message?: string, error?: string): string {
  const base = `/operator/rooms/${encodeURIComponent(room.room_id)}`
  const view = state.class
  const mode = view === null ? 'room' : view.state === 'running' ? 'class' : 'results'
  const start = postForm(`${base}/class`, session.csrf, `<fieldset><legend>Start a class</legend>
${field('class-name-input', 'Class name', '<input type="text" id="class-name-input" name="name" maxlength="100" placeholder="Class">')}
${field('class-minutes', 'Planned length (minutes)', `<input type="number" id="class-minutes" name="minutes" min="1" max="${MAX_MINUTES}" value="45" inputmode="numeric">`)}
<button type="submit" class="big">Start class</button></fieldset>`, `id="start-form" class="start-form"${mode === 'class' ? ' hidden' : ''}`)
  const end = postForm(`${base}/class/end`, session.csrf, '<button type="submit" class="big danger">End class</button>', `id="end-form" class="end-form"${mode === 'class' ? '' : ' hidden'}`)
  return `${notice(message)}${notice(error, 'error')}
<div id="coach" class="coach" data-room-id="${esc(room.room_id)}" data-display-id="${esc(room.display_id)}" data-mode="${mode}" data-connection="connecting">
<section class="coach-class" aria-labelledby="class-title"><h2 id="class-title">Class</h2>
<p id="coach-class-status" class="class-status" role="status">${esc(statusText(view, state.server_now))}</p>
${available ? `${start}${end}` : '<p class="notice error" role="alert">Classes are not available on this box.</p>'}
<p class="muted"><a href="/rooms/${esc(encodeURIComponent(room.room_id))}/display?display_id=${esc(encodeURIComponent(room.display_id))}&amp;order=effort">The room display as a leaderboard</a> · <span id="connection" role="status"></span></p></section>
<ul id="alerts" class="alerts" aria-label="Alerts" aria-live="assertive"></ul>
<section id="coach-tiles" class="coach-tiles" aria-label="Members">${state.members.map(m => tileHtml(base, session.csrf, m)).join('')}</section>
${state.members.length === 0 ? '<p>No members in this room yet. Add them on <a href="/operator/rooms">Rooms</a>.</p>' : ''}
<section id="member-detail" class="member-detail" aria-labelledby="detail-title" hidden><h2 id="detail-title">Last 10 minutes</h2>
<button type="button" id="detail-close" class="secondary big">Close</button>
<div id="chart" class="chart" role="img" aria-labelledby="detail-title"></div><p id="chart-status" class="muted" role="status"></p></section>
</div>${jsonBlock('coach-state', state)}`
}

/** What the coach page starts from and refreshes: the members as the display has them, and the whole class. */
export interface CoachState { display_id: string, members: Awaited<ReturnType<typeof displayState>>['members'], class: ClassView | null, server_now: number }

async function coachState (uses: CoachUses, room: RoomRecord, now: number): Promise<CoachState> {
  const s = await displayState(uses, room, now)
  const view = uses.classes?.view(room.room_id) ?? null
  // The coach sees every member of the class, also those hidden from the display.
  const live = view !== null && !(view.state === 'results' && view.results_until !== null && view.results_until <= now) ? view : null
  return { display_id: room.display_id, members: s.members, class: live, server_now: now }
}

/** The coach's or owner's session for a JSON route of the page; deny by default. */
function jsonSession (uses: CoachUses, request: FastifyRequest): Session {
  const s = operatorSession(uses, request)
  if (s === undefined || (s.operator?.role !== 'owner' && s.operator?.role !== 'coach')) throw new ApiError('forbidden', { detail: 'sign in as an operator first' })
  return s
}

/** The host (and port) of an Origin header, or undefined when it is not a URL. */
function originHost (origin: string): string | undefined {
  try { return new URL(origin).host } catch { return undefined }
}

type RoomParams = { Params: { room_id: string } }
type MemberParams = { Params: { room_id: string, profile_id: string } }

export async function coachRoutes (app: FastifyInstance, uses: CoachUses): Promise<void> {
  const page = async (reply: FastifyReply, session: Session, room: RoomRecord, status: number, message?: string, error?: string): Promise<FastifyReply> => {
    const state = await coachState(uses, room, Date.now())
    return await sendPage(reply, status, `Coach · ${room.name}`, pageBody(room, session, state, uses.classes !== undefined, message, error), {
      ...operatorNav(session.csrf, '/operator/coach'),
      styles: ['/web/static/coach.css', '/web/vendor/uplot/uPlot.min.css'],
      scripts: ['/web/static/coach.js'],
      bodyClass: 'coach-page'
    })
  }
  const back = async (reply: FastifyReply, room: RoomRecord, what: string): Promise<FastifyReply> =>
    await reply.redirect(`/operator/rooms/${encodeURIComponent(room.room_id)}/coach?done=${what}`, 303)
  const noRoom = async (reply: FastifyReply, session: Session): Promise<FastifyReply> =>
    await sendPage(reply, 404, 'No such room', '<p class="notice error" role="alert">No such room.</p><p><a href="/operator/rooms">Rooms</a></p>', operatorNav(session.csrf, '/operator/coach'))
  /** Runs a class command; a refusal is shown on the page with its status, nothing changed. */
  const command = async (reply: FastifyReply, session: Session, room: RoomRecord, run: (c: ClassControl) => Promise<unknown>, done: string): Promise<FastifyReply> => {
    if (uses.classes === undefined) return await page(reply, session, room, 503, undefined, 'Classes are not available on this box.')
    try {
      await run(uses.classes)
    } catch (err) {
      if (!(err instanceof ClassError)) throw err
      const r = refusal(err)
      return await page(reply, session, room, r.status, undefined, r.message)
    }
    return await back(reply, room, done)
  }

  // The nav entry: the coach page of the only room, else the rooms to choose from.
  app.get('/operator/coach', async (request, reply) => {
    const session = await operatorPage(uses, request, reply, { allow: 'coach' })
    if (session === null) return reply
    const rooms = uses.rooms.list()
    const only = rooms.length === 1 ? rooms[0] : undefined
    if (only !== undefined) return await reply.redirect(`/operator/rooms/${encodeURIComponent(only.room_id)}/coach`, 303)
    const list = rooms.map(r => `<li><a class="big-link" href="/operator/rooms/${esc(encodeURIComponent(r.room_id))}/coach">${esc(r.name)}</a></li>`).join('')
    return await sendPage(reply, 200, 'Coach', rooms.length === 0 ? '<p>No rooms yet. Create one on <a href="/operator/rooms">Rooms</a>.</p>' : `<ul class="room-choice">${list}</ul>`,
      { ...operatorNav(session.csrf, '/operator/coach'), styles: ['/web/static/coach.css'] })
  })

  app.get<RoomParams & { Querystring: { done?: unknown } }>('/operator/rooms/:room_id/coach', async (request, reply) => {
    const session = await operatorPage(uses, request, reply, { allow: 'coach' })
    if (session === null) return reply
    const room = uses.rooms.get(request.params.room_id)
    if (room === undefined) return await noRoom(reply, session)
    return await page(reply, session, room, 200, DONE[String(request.query.done ?? '')])
  })

  app.post<RoomParams>('/operator/rooms/:room_id/class', async (request, reply) => {
    const f = await operatorForm(uses, request, reply, { allow: 'coach' })
    if (f === null) return reply
    const room = uses.rooms.get(request.params.room_id)
    if (room === undefined) return await noRoom(reply, f.session)
    const name = one(f.form, 'name').trim()
    const minutesText = one(f.form, 'minutes').trim()
    const minutes = minutesText === '' ? undefined : Number(minutesText)
    if (name.length > 100) return await page(reply, f.session, room, 400, undefined, 'The class name must be at most 100 characters.')
    if (minutes !== undefined && (!Number.isInteger(minutes) || minutes < 1 || minutes > MAX_MINUTES)) {
      return await page(reply, f.session, room, 400, undefined, `The planned length must be a whole number of minutes from 1 to ${MAX_MINUTES}.`)
    }
    return await command(reply, f.session, room, async c => await c.start(room.room_id, { ...(name === '' ? {} : { name }), ...(minutes === undefined ? {} : { minutes }) }), 'started')
  })

  app.post<RoomParams>('/operator/rooms/:room_id/class/end', async (request, reply) => {
    const f = await operatorForm(uses, request, reply, { allow: 'coach' })
    if (f === null) return reply
    const room = uses.rooms.get(request.params.room_id)
    if (room === undefined) return await noRoom(reply, f.session)
    return await command(reply, f.session, room, async c => await c.end(room.room_id), 'ended')
  })

  app.post<MemberParams>('/operator/rooms/:room_id/class/members/:profile_id/hidden', async (request, reply) => {
    const f = await operatorForm(uses, request, reply, { allow: 'coach' })
    if (f === null) return reply
    const room = uses.rooms.get(request.params.room_id)
    if (room === undefined) return await noRoom(reply, f.session)
    const value = one(f.form, 'hidden')
    if (value !== 'true' && value !== 'false') return await page(reply, f.session, room, 400, undefined, 'Choose to hide the member or to show them again.')
    const hide = value === 'true'
    return await command(reply, f.session, room, async c => await c.setHidden(room.room_id, request.params.profile_id, hide), hide ? 'hidden' : 'shown')
  })

  // The page's live stream: the room's display stream with the members the coach hid from displays. Opened from a page
  // of this box (the Origin of a browser's handshake), for a coach's or owner's session: it closes when the session
  // ends (signed out, expired, the operator removed), and every message asks again.
  app.get<RoomParams & { Querystring: { kinds?: string } }>('/operator/rooms/:room_id/coach/stream', {
    websocket: true,
    onRequest: async request => {
      jsonSession(uses, request)
      // A browser sends the page's Origin with a WebSocket handshake; one from another site's page is refused.
      const origin = request.headers.origin
      const upgrade = request.headers.upgrade?.toLowerCase() === 'websocket'
      if (upgrade && (origin === undefined || originHost(origin) !== request.headers.host)) throw new ApiError('forbidden', { detail: 'open the coach page on this box' })
      if (uses.rooms.get(request.params.room_id) === undefined) throw new ApiError('not_found', { detail: 'no such room' })
      parseKinds(request.query.kinds, DISPLAY_KINDS)
    }
  }, (socket, request) => {
    const session = jsonSession(uses, request)
    const sessions = sessionsOf(uses)
    const bind = (stream: Stream): void => {
      stream.onClose(sessions.onEnd(key => { if (key === session.key || key === '') stream.close(1008, 'signed out') }))
      const expiry = setTimeout(() => { stream.close(1008, 'session expired') }, Math.max(0, session.expires_at - Date.now()))
      stream.onClose(() => { clearTimeout(expiry) })
    }
    serveRoom(uses, socket, request.params.room_id, parseKinds(request.query.kinds, DISPLAY_KINDS), { kind: 'coach', signedIn: () => sessions.alive(session.key), bind })
  })

  app.get<RoomParams>('/operator/rooms/:room_id/coach/state', async (request, reply) => {
    jsonSession(uses, request)
    const room = uses.rooms.get(request.params.room_id)
    if (room === undefined) throw new ApiError('not_found', { detail: 'no such room' })
    reply.header('cache-control', 'no-store')
    return await coachState(uses, room, Date.now())
  })

  /** A member's readings of the last ten minutes, as the display may show them: nothing while they hide from displays. */
  app.get<MemberParams>('/operator/rooms/:room_id/coach/members/:profile_id/readings', async (request, reply) => {
    jsonSession(uses, request)
    const room = uses.rooms.get(request.params.room_id)
    const profileId = request.params.profile_id
    // The members the display shows: not one without the consent the box requires.
    if (room?.members.some(m => m.profile_id === profileId) !== true || consentMissing(uses, profileId)) throw new ApiError('not_found', { detail: 'no such member of this room' })
    const now = Date.now()
    const paused = uses.users.roomHidden(profileId, now)
    const from = Math.max(now - COACH_CHART_MS, uses.users.roomVisibleSince(profileId, now))
    reply.header('cache-control', 'no-store')
    return { profile_id: profileId, paused, from: now - COACH_CHART_MS, to: now, points: paused ? [] : await trend(uses.readings, profileId, from, now, 1200) }
  })
}
