// The public overlays, reachable without a session because the URL carries
// the capability: the bpm widget (/widgets/<widget_id>/view; the widget id)
// and the room display (/rooms/<room_id>/display?display_id=<display_id>).
// Both pages then follow helper streams: /widgets/<id>/stream and
// /rooms/<room_id>/stream?display_id=... (api/http, issue 3). While a class
// runs, and while its results are shown, the display follows the class
// (issue 43): its state carries the class, the stream its room_class messages.
import { Type } from '@sinclair/typebox'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { ApiError } from '../errors.ts'
import type { RoomRecord } from '../store/rooms.ts'
import { esc, jsonBlock, sendHtml } from './html.ts'
import { caloriesSince, startOfToday, trend } from './readings-view.ts'
import { maxHeartRate } from './zones.ts'
import { consentMissing } from './member-consent.ts'
import { Params } from '../http/schema.ts'
import type { Services } from '../services.ts'
import { compareMembers, DEFAULT_BOUNDS, ORDERS, trendPoints, zoneOf, ZONE_NAMES } from './static/zones.js'
import { parsePart, partMembers, type Part } from './static/room-layout.js'
import { classTimes, pointsText } from './static/class-view.js'
import type { ClassControl, ClassMemberView, ClassView } from '../classes/types.ts'
import { forDisplays } from '../classes/display.ts'
import { CLASS_VIEW_SCHEMA } from '../http/classes.ts'

const ID = Type.String({ minLength: 1, maxLength: 100 })

/** What the overlays use: widgets, rooms, the members' accounts and readings (room display state), and the rooms' classes. */
export type OverlayUses = Pick<Services, 'widgets' | 'rooms' | 'users' | 'readings' | 'config'> & { classes?: ClassControl }

function overlayPage (title: string, css: string, body: string, script: string | null, htmlClass = ''): string {
  return `<!doctype html>
<html lang="en"${htmlClass === '' ? '' : ` class="${esc(htmlClass)}"`}><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${esc(title)}</title><link rel="icon" href="data:,"><link rel="stylesheet" href="${esc(css)}">${script === null ? '' : `<script type="module" src="${esc(script)}"></script>`}</head>
<body>${body}</body></html>`
}

function gonePage (title: string, message: string): string {
  return overlayPage(title, '/web/static/site.css', `<main id="main"><h1>${esc(title)}</h1><p role="alert">${esc(message)}</p></main>`, null)
}

export interface DisplayMember {
  profile_id: string
  display_name: string
  max_heart_rate: number
  /** Where max_heart_rate came from: the member config, 220 - age, or the default. */
  max_source: 'configured' | 'age' | 'default'
  zones: number[]
  latest: { measured_at: number, heart_rate: number } | null
  calories_today_kcal: number
  /** [measured_at, bpm] of the last five minutes, oldest first. */
  trend: Array<[number, number]>
  /** The member hides from room displays (docs/operator.md "Pages the box serves"): no latest, trend or calories then. */
  paused: boolean
  /** When the pause ends (ms), null until the member turns it off; null when not paused. */
  paused_until: number | null
}

export interface DisplayState {
  room: { room_id: string, name: string }
  members: DisplayMember[]
  /** The running class or its results (displayClass), null otherwise. */
  class: ClassView | null
  server_now: number
}

/** A reading older than this is shown as "no signal" (static/room.js keeps the same bound). */
export const STALE_MS = 10_000
const TREND_MS = 5 * 60_000

const displayStateSchema = {
  200: {
    type: 'object',
    required: ['room', 'members'],
    properties: {
      room: { type: 'object', required: ['room_id', 'name'], properties: { room_id: { type: 'string' }, name: { type: 'string' } } },
      members: {
        type: 'array',
        items: {
          type: 'object',
          properties: {
            profile_id: { type: 'string' },
            display_name: { type: 'string' },
            max_heart_rate: { type: 'number' },
            max_source: { type: 'string' },
            zones: { type: 'array', items: { type: 'number' } },
            latest: { type: ['object', 'null'], properties: { measured_at: { type: 'number' }, heart_rate: { type: 'number' } } },
            calories_today_kcal: { type: 'number' },
            trend: { type: 'array', items: { type: 'array', items: { type: 'number' } } },
            paused: { type: 'boolean' },
            paused_until: { type: ['number', 'null'] }
          }
        }
      },
      // The class as displays get it (api/classes/display.ts), or null.
      class: { ...CLASS_VIEW_SCHEMA, type: ['object', 'null'] },
      server_now: { type: 'number' }
    }
  }
} as const

/**
 * The class as a display may show it: null once its results have expired;
 * only members of the display (the room's members the box may show); a member
 * who hides from room displays is left out, and one the coach hid is kept
 * with hidden set and without numbers (static/room.js hides the tile).
 */
export function displayClass (view: ClassView | null, members: DisplayMember[], now: number): ClassView | null {
  if (view === null || (view.state === 'results' && view.results_until !== null && view.results_until <= now)) return null
  const shown = new Map(members.map(m => [m.profile_id, m]))
  const visible = forDisplays(view)
  return { ...visible, members: visible.members.filter(m => shown.get(m.profile_id)?.paused === false) }
}

/** The members of a room with their last readings, as the display shows them; hidden members carry no heart-rate data. */
export async function displayState (uses: OverlayUses, room: RoomRecord, now: number): Promise<DisplayState> {
  const midnight = startOfToday(now)
  const members: DisplayMember[] = []
  for (const m of room.members) {
    // A member without the consent the box requires is not shown at all.
    if (consentMissing(uses, m.profile_id)) continue
    const user = await uses.users.get(m.profile_id)
    const max = maxHeartRate(m.max_heart_rate, user?.max_heart_rate, user?.age)
    const paused = uses.users.roomHidden(m.profile_id, now)
    // Nothing measured while the member hid from displays (docs/operator.md "Pages the box serves"), also after they show again.
    const since = uses.users.roomVisibleSince(m.profile_id, now)
    const last = paused ? undefined : await uses.readings.latest(m.profile_id)
    const latest = last !== undefined && last.measured_at >= since ? last : undefined
    members.push({
      profile_id: m.profile_id,
      display_name: m.display_name,
      max_heart_rate: max.bpm,
      max_source: max.source,
      zones: m.zones,
      latest: latest === undefined ? null : { measured_at: latest.measured_at, heart_rate: latest.heart_rate },
      calories_today_kcal: paused ? 0 : await caloriesSince(uses.readings, m.profile_id, Math.max(midnight, since), now, user ?? {}),
      trend: paused ? [] : await trend(uses.readings, m.profile_id, Math.max(now - TREND_MS, since), now),
      paused,
      paused_until: paused ? uses.users.roomPausedUntil(m.profile_id, now) : null
    })
  }
  const view = uses.classes?.view(room.room_id) ?? null
  return { room: { room_id: room.room_id, name: room.name }, members, class: displayClass(view, members, now), server_now: now }
}

type Order = 'name' | 'bpm' | 'zone' | 'effort'
const orderOf = (value: unknown): Order => (ORDERS as unknown[]).includes(value) ? value as Order : 'name'

/** One tile of the first paint; static/room.js takes it over. */
function tileHtml (m: DisplayMember, now: number, c: ClassMemberView | undefined): string {
  const live = !m.paused && m.latest !== null && now - m.latest.measured_at <= STALE_MS
  const z = live && m.latest !== null ? zoneOf(m.latest.heart_rate, m.max_heart_rate, m.zones) : null
  const state = m.paused ? 'paused' : live ? 'live' : 'no-signal'
  const zoneText = m.paused ? 'paused' : z === null ? 'no signal' : `${z.percent}% · ${z.name}`
  const num = live && m.latest !== null ? String(Math.round(m.latest.heart_rate)) : '--'
  const kcal = m.paused ? '' : `${Math.round(m.calories_today_kcal)} kcal today`
  const alert = c?.alert === true ? ' data-alert="true"' : ''
  const points = c === undefined ? '' : pointsText(c.effort_points)
  return `<article class="tile" data-profile-id="${esc(m.profile_id)}" data-state="${state}"${z === null ? '' : ` data-zone="${z.index}"`}${alert}${c?.hidden === true ? ' hidden' : ''}>` +
    `<h2 class="name">${esc(m.display_name)}</h2><p class="bpm"><span class="num">${num}</span><span class="unit"> bpm</span></p>` +
    `<p class="zone">${esc(zoneText)}</p><p class="points">${esc(points)}</p><p class="kcal">${esc(kcal)}</p>` +
    `<svg viewBox="0 0 300 60" class="trend" aria-hidden="true" preserveAspectRatio="none"><polyline vector-effect="non-scaling-stroke" points="${esc(m.paused ? '' : trendPoints(m.trend, now, TREND_MS, 300, 60))}"></polyline></svg></article>`
}

function sortKey (m: DisplayMember, now: number, effort: number): { name: string, bpm: number | null, percent: number, zone: number, effort: number } {
  const live = !m.paused && m.latest !== null && now - m.latest.measured_at <= STALE_MS
  const z = live && m.latest !== null ? zoneOf(m.latest.heart_rate, m.max_heart_rate, m.zones) : null
  return { name: m.display_name, bpm: z === null || m.latest === null ? null : m.latest.heart_rate, percent: z?.percent ?? 0, zone: z?.index ?? 0, effort }
}

/** The class bar of the header (name, elapsed, remaining) and the results section; static/room.js fills and follows them. */
function classHtml (view: ClassView | null, now: number): string {
  const times = view === null ? null : classTimes(view, now)
  return `<p id="class-bar" class="class-bar"${view === null ? ' hidden' : ''}><span id="class-name" class="class-name">${esc(view?.name ?? '')}</span>` +
    `<span id="class-elapsed" class="class-time">${esc(times?.elapsed ?? '')}</span><span id="class-remaining" class="class-time">${esc(times?.remaining ?? '')}</span></p>`
}

/** The 400 page of a display link with a part= it cannot use. */
const badPartPage = (value: string): string => overlayPage('Bad display link', '/web/static/site.css',
  `<main id="main"><h1>Bad display link</h1><p role="alert">${esc(`part=${value.slice(0, 10)}`)} is not a screen of this room. ` +
  'Use part=1of2 and part=2of2 for two screens (up to part=8of8), or leave part= out for one screen.</p></main>', null)

/** The zone legend: the five zones of the maximum heart rate, then the two states without a number. */
function legendHtml (): string {
  const zones = DEFAULT_BOUNDS.map((lo, i) => `<li data-zone="${i + 1}"><span class="swatch"></span>${esc(ZONE_NAMES[i + 1] ?? '')} ${lo}–${DEFAULT_BOUNDS[i + 1] ?? 100} %</li>`)
  return `<ul class="legend" aria-label="Heart-rate zones, percent of each member's maximum heart rate">${zones.join('')}` +
    '<li data-state="no-signal"><span class="swatch"></span>no signal</li><li data-state="paused"><span class="swatch"></span>paused</li></ul>'
}

export const overlayRoutes: FastifyPluginAsyncTypebox<OverlayUses> = async (app, uses) => {
  app.get('/widgets/:widget_id/view', { schema: { params: Params({ widget_id: ID }) } }, async (request, reply) => {
    const widget = await uses.widgets.get(request.params.widget_id)
    if (widget === undefined) return await sendHtml(reply, 404, gonePage('Widget not found', 'This widget does not exist or was revoked by its owner.'))
    const body = `<div id="widget" class="widget" data-widget-id="${esc(widget.id)}" data-state="connecting" role="status" aria-live="polite" aria-label="Heart rate">
<svg id="heart" class="heart" viewBox="0 0 32 29" aria-hidden="true"><path d="M23.6 0c-3.4 0-6.3 2.7-7.6 5.6C14.7 2.7 11.8 0 8.4 0 3.8 0 0 3.8 0 8.4c0 9.4 9.5 11.9 16 21.2 6.1-9.3 16-12.1 16-21.2C32 3.8 28.2 0 23.6 0z"/></svg>
<span id="bpm" class="bpm">--</span><span class="unit">bpm</span><span id="status" class="status">connecting…</span>
</div>${jsonBlock('widget-config', widget.configuration ?? {})}`
    return await sendHtml(reply, 200, overlayPage(widget.name, '/web/static/widget.css', body, '/web/static/widget.js', 'overlay'), { frameable: true })
  })

  const displayQuery = Type.Object({
    display_id: Type.Optional(Type.String({ maxLength: 100 })),
    order: Type.Optional(Type.String({ maxLength: 10 })),
    part: Type.Optional(Type.String({ maxLength: 10 }))
  })
  const roomParams = Params({ room_id: ID })

  app.get('/rooms/:room_id/display', { schema: { params: roomParams, querystring: displayQuery } }, async (request, reply) => {
    const { room_id: roomId } = request.params
    const { display_id: displayId } = request.query
    const room = uses.rooms.get(roomId)
    if (room === undefined || displayId === undefined || !uses.rooms.displayAllowed(roomId, displayId)) {
      return await sendHtml(reply, 404, gonePage('Display not found', 'This room display link does not exist or was revoked. Ask the operator for the current link.'))
    }
    const part: Part | null | 'bad' = parsePart(request.query.part)
    if (part === 'bad') return await sendHtml(reply, 400, badPartPage(request.query.part ?? ''))
    const now = Date.now()
    const state = await displayState(uses, room, now)
    const order = orderOf(request.query.order)
    const inClass = new Map((state.class?.members ?? []).map(c => [c.profile_id, c]))
    const effort = (m: DisplayMember): number => inClass.get(m.profile_id)?.effort_points ?? 0
    const sorted = partMembers(state.members, part).sort((a, b) => compareMembers(order, sortKey(a, now, effort(a)), sortKey(b, now, effort(b))))
    const mode = state.class === null ? 'room' : state.class.state === 'running' ? 'class' : 'results'
    const partAttr = part === null ? '' : ` data-part="${part.index}of${part.count}"`
    // First paint: the tiles and the state they came from (static/room.js takes over from the embedded state and fills the results).
    const body = `<div id="room" class="room" data-room-id="${esc(room.room_id)}" data-order="${order}" data-mode="${mode}"${partAttr} data-connection="connecting">
<header><h1 id="room-name">${esc(room.name)}</h1>${classHtml(state.class, now)}<p id="connection" class="connection" role="status" aria-live="polite"></p></header>
${legendHtml()}
<section id="tiles" class="tiles" aria-label="Members">${sorted.map(m => tileHtml(m, now, inClass.get(m.profile_id))).join('')}</section><p class="empty">No members in this room yet.</p>
<section id="results" class="results" aria-labelledby="results-title"${mode === 'results' ? '' : ' hidden'}><h2 id="results-title">Results</h2><ol id="results-list" class="results-list"></ol></section>
</div>${jsonBlock('room-state', state)}`
    return await sendHtml(reply, 200, overlayPage(room.name, '/web/static/room.css', body, '/web/static/room.js'))
  })

  app.get('/rooms/:room_id/display/state', { schema: { params: roomParams, querystring: displayQuery, response: displayStateSchema } }, async (request, reply) => {
    const { room_id: roomId } = request.params
    const { display_id: displayId } = request.query
    const room = uses.rooms.get(roomId)
    reply.header('cache-control', 'no-store')
    if (room === undefined || displayId === undefined || !uses.rooms.displayAllowed(roomId, displayId)) {
      throw new ApiError('not_found', { detail: 'no such room display' })
    }
    if (parsePart(request.query.part) === 'bad') throw new ApiError('invalid_request', { detail: 'part must be <i>of<n> with 1 <= i <= n <= 8' })
    return await displayState(uses, room, Date.now())
  })
}
