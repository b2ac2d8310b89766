// WebSocket /api/v1/data/real_time (spec 4.2) and the token-less overlay
// stream /widgets/<widget_id>/stream whose capability is the widget id.
// Authentication runs in the route's onRequest hook, so a bad token is
// answered with the HTTP status and JSON error body instead of an upgrade.
// Messages: `{"measured_at": ..., "data": {"heart_rate": ...}}`, or the bare
// number with response_mode=text_plain_only_heart_rate.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { WebSocket } from 'ws'
import { ApiError } from '../errors.ts'
import { guard, responseMode, type ResponseMode } from './data-auth.ts'
import { profileOf } from './auth.ts'
import { bindToToken, openStream } from './stream-socket.ts'
import type { StoredReading } from '../pipeline/reading.ts'

export function readingMessage (r: StoredReading, mode: ResponseMode): string {
  return mode === 'json' ? JSON.stringify({ measured_at: r.measured_at, data: { heart_rate: r.heart_rate } }) : String(r.heart_rate)
}

/** Streams one profile's readings to a socket until it closes. */
export function streamProfile (app: FastifyInstance, socket: WebSocket, profileId: string, mode: ResponseMode, check?: () => boolean): ReturnType<typeof openStream> {
  const cfg = app.hr.config.streams ?? {}
  const stream = openStream(socket, {
    log: app.hr.log,
    counters: app.hr.hub.streams,
    ...(cfg.pingIntervalMs === undefined ? {} : { pingIntervalMs: cfg.pingIntervalMs }),
    ...(cfg.maxBufferedBytes === undefined ? {} : { maxBufferedBytes: cfg.maxBufferedBytes }),
    ...(check === undefined ? {} : { check })
  })
  stream.onClose(app.hr.hub.subscribeProfile(profileId, r => { stream.send(readingMessage(r, mode)) }))
  return stream
}

const modeQuery = { type: 'object', properties: { response_mode: { type: 'string' }, access_token: { type: 'string' } } }

export async function realtimePlugin (app: FastifyInstance): Promise<void> {
  const auth = guard(app, { scope: 'data:heart_rate:read', query: true })
  app.get('/api/v1/data/real_time', {
    websocket: true,
    onRequest: async (request: FastifyRequest, reply: FastifyReply) => {
      await auth(request, reply)
      responseMode(request)
    },
    schema: { querystring: modeQuery }
  }, (socket, request) => {
    const stream = streamProfile(app, socket, profileOf(request), responseMode(request))
    const auth = request.auth
    if (auth === undefined) { stream.close(1008, 'token revoked'); return }
    bindToToken(stream, app.hr.tokens, auth.digest, auth.record.expires_at)
  })

  // The public overlay stream of a widget (the web pages use it). Unknown or deleted widget: 404 JSON.
  app.get('/widgets/:widget_id/stream', {
    websocket: true,
    onRequest: async (request: FastifyRequest) => {
      const { widget_id: id } = request.params as { widget_id: string }
      responseMode(request)
      if (await app.hr.widgets.get(id) === undefined) throw new ApiError('not_found', { detail: 'no such widget' })
    },
    schema: { querystring: modeQuery, params: { type: 'object', properties: { widget_id: { type: 'string', maxLength: 100 } } } }
  }, async (socket, request) => {
    const { widget_id: id } = request.params as { widget_id: string }
    // Listen for the deletion before reading the widget, so one that lands in between is not missed.
    // eslint-disable-next-line prefer-const -- the deletion listener above reads it before it is assigned
    let stream: ReturnType<typeof openStream> | undefined
    let deleted = false
    const unlisten = app.hr.widgets.onDeleted(d => {
      if (d !== id) return
      deleted = true
      stream?.close(1008, 'widget deleted')
    })
    let widget
    try { widget = await app.hr.widgets.get(id) } catch (err) { unlisten(); throw err }
    if (widget === undefined || deleted) { unlisten(); socket.close(1008, 'widget deleted'); return }
    stream = streamProfile(app, socket, widget.profile_id, responseMode(request))
    stream.onClose(unlisten)
  })
}
