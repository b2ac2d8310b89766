// WebSocket /api/v1/data/real_time (spec 4.2), and the token-less overlay
// stream /widgets/<widget_id>/stream whose capability is the widget id (two
// plugins: the hub serves the first and has no widgets).
// Authentication runs in the route's onRequest hook, so a bad token is
// answered with the HTTP status and JSON error body instead of an upgrade.
// Messages: `{"measured_at": ..., "data": {"heart_rate": ...}}`, or the bare
// number with response_mode=text_plain_only_heart_rate.
import { Type } from '@sinclair/typebox'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { WebSocket } from 'ws'
import { ApiError } from '../errors.ts'
import { guard, responseMode, type GuardUses, type ResponseMode } from './data-auth.ts'
import { Params } from './schema.ts'
import type { Services } from '../services.ts'
import { profileOf } from './auth.ts'
import { bindToToken, encodedOnce, openStream } from './stream-socket.ts'
import type { StoredReading } from '../pipeline/reading.ts'

export function readingMessage (r: StoredReading, mode: ResponseMode): string {
  return mode === 'json' ? JSON.stringify({ measured_at: r.measured_at, data: { heart_rate: r.heart_rate } }) : String(r.heart_rate)
}

/**
 * A reading's message in each mode as UTF-8 bytes, made once per reading and mode however many viewers it goes
 * to: the hub hands every subscriber the same reading object, and every viewer of a mode is sent the same Buffer.
 */
const readingBytes: Record<ResponseMode, (r: StoredReading) => Buffer> = {
  json: encodedOnce(r => readingMessage(r, 'json')),
  text_plain_only_heart_rate: encodedOnce(r => readingMessage(r, 'text_plain_only_heart_rate'))
}
export function readingPayload (r: StoredReading, mode: ResponseMode): Buffer {
  return readingBytes[mode](r)
}

/** What a reading stream uses: the live hub, the stream settings and the log. */
export type StreamUses = Pick<Services, 'hub' | 'config' | 'log'>

/** Streams one profile's readings to a socket until it closes. */
export function streamProfile (uses: StreamUses, socket: WebSocket, profileId: string, mode: ResponseMode, check?: () => boolean): ReturnType<typeof openStream> {
  const cfg = uses.config.streams ?? {}
  const stream = openStream(socket, {
    log: uses.log,
    counters: uses.hub.streams,
    ...(cfg.pingIntervalMs === undefined ? {} : { pingIntervalMs: cfg.pingIntervalMs }),
    ...(cfg.maxBufferedBytes === undefined ? {} : { maxBufferedBytes: cfg.maxBufferedBytes }),
    ...(check === undefined ? {} : { check })
  })
  const bytes = readingBytes[mode]
  stream.onClose(uses.hub.subscribeProfile(profileId, r => { stream.send(bytes(r)) }))
  return stream
}

const modeQuery = Type.Object({ response_mode: Type.Optional(Type.String()), access_token: Type.Optional(Type.String()) })

/** What the real-time stream uses: the guard's token store and limit, and the live hub. */
export type RealtimeUses = GuardUses & StreamUses

export const realtimePlugin: FastifyPluginAsyncTypebox<RealtimeUses> = async (app, uses) => {
  const { tokens } = uses
  const auth = guard(uses, { scope: 'data:heart_rate:read', query: true })
  app.get('/api/v1/data/real_time', {
    websocket: true,
    // onRequest runs before the querystring is validated: responseMode checks the raw value.
    onRequest: async (request, reply) => {
      await auth(request, reply)
      responseMode(request.query.response_mode)
    },
    schema: { querystring: modeQuery }
  }, (socket, request) => {
    const stream = streamProfile(uses, socket, profileOf(request), responseMode(request.query.response_mode))
    const auth = request.auth
    if (auth === undefined) { stream.close(1008, 'token revoked'); return }
    bindToToken(stream, tokens, auth.digest, auth.record.expires_at)
  })
}

/** What the overlay stream uses: the live hub and the widgets (a box's; the hub serves no widgets). */
export type WidgetStreamUses = StreamUses & Pick<Services, 'widgets'>

export const widgetStreamPlugin: FastifyPluginAsyncTypebox<WidgetStreamUses> = async (app, uses) => {
  const { widgets } = uses
  // The public overlay stream of a widget (the web pages use it). Unknown or deleted widget: 404 JSON.
  app.get('/widgets/:widget_id/stream', {
    websocket: true,
    onRequest: async request => {
      responseMode(request.query.response_mode)
      if (await widgets.get(request.params.widget_id) === undefined) throw new ApiError('not_found', { detail: 'no such widget' })
    },
    schema: { querystring: modeQuery, params: Params({ widget_id: Type.String({ maxLength: 100 }) }) }
  }, async (socket, request) => {
    const { widget_id: id } = request.params
    // Listen for the deletion before reading the widget, so one that lands in between is not missed.
    // eslint-disable-next-line prefer-const -- the deletion listener above reads it before it is assigned
    let stream: ReturnType<typeof openStream> | undefined
    let deleted = false
    const unlisten = widgets.onDeleted(d => {
      if (d !== id) return
      deleted = true
      stream?.close(1008, 'widget deleted')
    })
    let widget
    try { widget = await widgets.get(id) } catch (err) { unlisten(); throw err }
    if (widget === undefined || deleted) { unlisten(); socket.close(1008, 'widget deleted'); return }
    stream = streamProfile(uses, socket, widget.profile_id, responseMode(request.query.response_mode))
    stream.onClose(unlisten)
  })
}
