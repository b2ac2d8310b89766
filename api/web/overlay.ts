// The public overlays, reachable without a session because the URL carries
// the capability: the bpm widget (/widgets/<widget_id>/view; the widget id)
// and the room display (/rooms/<room_id>/display?display_id=<display_id>).
// Both pages then follow helper streams: /widgets/<id>/stream and
// /rooms/<room_id>/stream?display_id=... (api/http, issue 3).
import type { FastifyInstance } from 'fastify'
import { ApiError } from '../errors.ts'
import { esc, jsonBlock, sendHtml } from './html.ts'
import { caloriesSince, startOfToday, trend } from './readings-view.ts'
import { maxHeartRate } from './zones.ts'

const ID = { type: 'string', minLength: 1, maxLength: 100 } as const

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
}

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
            trend: { type: 'array', items: { type: 'array', items: { type: 'number' } } }
          }
        }
      }
    }
  }
} as const

export async function overlayRoutes (app: FastifyInstance): Promise<void> {
  app.get('/widgets/:widget_id/view', { schema: { params: { type: 'object', properties: { widget_id: ID } } } }, async (request, reply) => {
    const { widget_id: id } = request.params as { widget_id: string }
    const widget = await app.hr.widgets.get(id)
    if (widget === undefined) return await sendHtml(reply, 404, gonePage('Widget not found', 'This widget does not exist or was revoked by its owner.'))
    const body = `<div id="widget" class="widget" data-widget-id="${esc(widget.id)}" data-state="connecting" role="status" aria-live="polite" aria-label="Heart rate">
<svg id="heart" class="heart" viewBox="0 0 32 29" aria-hidden="true"><path d="M23.6 0c-3.4 0-6.3 2.7-7.6 5.6C14.7 2.7 11.8 0 8.4 0 3.8 0 0 3.8 0 8.4c0 9.4 9.5 11.9 16 21.2 6.1-9.3 16-12.1 16-21.2C32 3.8 28.2 0 23.6 0z"/></svg>
<span id="bpm" class="bpm">--</span><span class="unit">bpm</span><span id="status" class="status">connecting…</span>
</div>${jsonBlock('widget-config', widget.configuration ?? {})}`
    return await sendHtml(reply, 200, overlayPage(widget.name, '/web/static/widget.css', body, '/web/static/widget.js', 'overlay'), { frameable: true })
  })

  const displayQuery = { type: 'object', properties: { display_id: { type: 'string', maxLength: 100 } } } as const
  const roomParams = { type: 'object', properties: { room_id: ID } } as const

  app.get('/rooms/:room_id/display', { schema: { params: roomParams, querystring: displayQuery } }, async (request, reply) => {
    const { room_id: roomId } = request.params as { room_id: string }
    const { display_id: displayId } = request.query as { display_id?: string }
    const room = app.hr.rooms.get(roomId)
    if (room === undefined || displayId === undefined || !app.hr.rooms.displayAllowed(roomId, displayId)) {
      return await sendHtml(reply, 404, gonePage('Display not found', 'This room display link does not exist or was revoked. Ask the operator for the current link.'))
    }
    const body = `<div id="room" class="room" data-room-id="${esc(room.room_id)}" data-connection="connecting">
<header><h1 id="room-name">${esc(room.name)}</h1><p id="connection" class="connection" role="status" aria-live="polite">connecting…</p></header>
<section id="tiles" class="tiles" aria-label="Members"></section><p class="empty">No members in this room yet.</p>
</div>`
    return await sendHtml(reply, 200, overlayPage(room.name, '/web/static/room.css', body, '/web/static/room.js'))
  })

  app.get('/rooms/:room_id/display/state', { schema: { params: roomParams, querystring: displayQuery, response: displayStateSchema } }, async (request, reply) => {
    const { room_id: roomId } = request.params as { room_id: string }
    const { display_id: displayId } = request.query as { display_id?: string }
    const room = app.hr.rooms.get(roomId)
    reply.header('cache-control', 'no-store')
    if (room === undefined || displayId === undefined || !app.hr.rooms.displayAllowed(roomId, displayId)) {
      throw new ApiError('not_found', { detail: 'no such room display' })
    }
    const now = Date.now()
    const midnight = startOfToday(now)
    const members: DisplayMember[] = []
    for (const m of room.members) {
      const user = await app.hr.users.get(m.profile_id)
      const max = maxHeartRate(m.max_heart_rate, user?.max_heart_rate, user?.age)
      const latest = await app.hr.readings.latest(m.profile_id)
      members.push({
        profile_id: m.profile_id,
        display_name: m.display_name,
        max_heart_rate: max.bpm,
        max_source: max.source,
        zones: m.zones,
        latest: latest === undefined ? null : { measured_at: latest.measured_at, heart_rate: latest.heart_rate },
        calories_today_kcal: await caloriesSince(app.hr.readings, m.profile_id, midnight, now, user ?? {}),
        trend: await trend(app.hr.readings, m.profile_id, now - 5 * 60_000, now)
      })
    }
    return { room: { room_id: room.room_id, name: room.name }, members }
  })
}
