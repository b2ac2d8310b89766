// Room streams (spec 4.7, 6; service-notes "Room stream message shapes").
// One function serves a room to a socket; two front doors authenticate:
// - WebSocket /api/v2/data/rooms/{room_id}/real_time: a user token with scope
//   data:room:read (query access_token or Authorization header); the user must
//   be a member (403 JSON 9403 at the handshake); unknown room 404 JSON 9404.
// - WebSocket /rooms/{room_id}/stream?display_id=...: the operator's read-only
//   display (the web pages use it); display_id is the room's revocable capability.
// Query `kinds`: comma-separated among heart_rate, room_member_updated,
// room_member_removed, room_updated (default heart_rate); an unknown kind is
// 400 JSON 7013 at the handshake. The display stream also takes room_class,
// hr-relay's own message about the room's class (api/classes/engine.ts): it
// never goes to the Pulsoid-compatible member stream, where it is an unknown
// kind. A display that asks for it gets the class on view first, if any.
import { Type } from '@sinclair/typebox'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { WebSocket } from 'ws'
import { ApiError } from '../errors.ts'
import { guard, type GuardUses } from './data-auth.ts'
import { Params } from './schema.ts'
import type { Services } from '../services.ts'
import { profileOf } from './auth.ts'
import { bindToToken, encodedOnce, openStream, type Stream } from './stream-socket.ts'
import { DISPLAY_KINDS, DISPLAY_ONLY_KINDS, ROOM_KINDS, type RoomKind, type RoomMessage } from '../hub.ts'
import { forDisplays } from '../classes/display.ts'
import type { ClassControl } from '../classes/types.ts'

/** The kinds of `kinds`; `allowed` is ROOM_KINDS on the member stream, DISPLAY_KINDS on the display stream. */
export function parseKinds (value: unknown, allowed: readonly RoomKind[] = ROOM_KINDS): Set<RoomKind> {
  if (value === undefined) return new Set(['heart_rate'])
  if (typeof value !== 'string') throw new ApiError('invalid_request', { detail: 'kinds must be one comma-separated string' })
  const out = new Set<RoomKind>()
  for (const part of value.split(',')) {
    const k = part.trim()
    if (!(allowed as readonly string[]).includes(k)) throw new ApiError('invalid_request', { detail: `unknown kind "${k.slice(0, 40)}"; kinds are ${allowed.join(', ')}` })
    out.add(k as RoomKind)
  }
  return out
}

/** A room message as UTF-8 bytes, serialized once however many viewers of the room it goes to. */
const roomMessageBytes = encodedOnce<RoomMessage>(message => JSON.stringify(message))

/**
 * Who watches a room: a member (their token), a display (its display_id), or the coach page (a coach's or owner's
 * session, asked again with every message). A display gets nothing of the members the coach hid for the class.
 */
export type RoomViewer = { kind: 'member', profileId: string } | { kind: 'display', displayId: string } | {
  kind: 'coach'
  signedIn: () => boolean
  /** Ties the stream to the session: closed when it ends. */
  bind: (stream: Stream) => void
}

/** The room_class messages as displays get them (api/classes/display.ts), made once per message for every display. */
const displayVariants = new WeakMap<RoomMessage, RoomMessage>()
function forDisplay (message: RoomMessage): RoomMessage {
  if (message.kind !== 'room_class' || message.room_class === null) return message
  let variant = displayVariants.get(message)
  if (variant === undefined) {
    const view = forDisplays(message.room_class)
    variant = view === message.room_class ? message : { ...message, room_class: view }
    displayVariants.set(message, variant)
  }
  return variant
}

/** What a room stream uses: the rooms, who is hidden from displays, the live hub, the classes, stream settings and the log. */
export type RoomStreamUses = Pick<Services, 'rooms' | 'users' | 'hub' | 'config' | 'log'> & { classes?: ClassControl }

const displayOnly = (kind: RoomKind): boolean => (DISPLAY_ONLY_KINDS as readonly string[]).includes(kind)

/** Streams a room's messages of the selected kinds until the socket closes or access ends. */
export function serveRoom (uses: RoomStreamUses, socket: WebSocket, roomId: string, kinds: Set<RoomKind>, viewer: RoomViewer): Stream {
  const rooms = uses.rooms
  const allowed = (): boolean => viewer.kind === 'member'
    ? rooms.isMember(roomId, viewer.profileId)
    : viewer.kind === 'display' ? rooms.displayAllowed(roomId, viewer.displayId) : rooms.get(roomId) !== undefined && viewer.signedIn()
  const cfg = uses.config.streams ?? {}
  const stream = openStream(socket, {
    log: uses.log,
    counters: uses.hub.streams,
    check: allowed,
    ...(cfg.pingIntervalMs === undefined ? {} : { pingIntervalMs: cfg.pingIntervalMs }),
    ...(cfg.maxBufferedBytes === undefined ? {} : { maxBufferedBytes: cfg.maxBufferedBytes })
  })
  stream.onClose(uses.hub.subscribeRoom(roomId, message => {
    const ok = allowed()
    // A removed member still gets the message about its own removal; then the stream closes.
    const ownRemoval = message.kind === 'room_member_removed' && viewer.kind === 'member' && message.room_member_removed.profile_id === viewer.profileId
    if (ok || ownRemoval) {
      // room_class is hr-relay's own message: displays only, never the Pulsoid-compatible member stream.
      if (kinds.has(message.kind) && !(viewer.kind === 'member' && displayOnly(message.kind)) && !hiddenFrom(uses, roomId, message, viewer)) {
        stream.send(roomMessageBytes(viewer.kind === 'display' ? forDisplay(message) : message))
      }
    }
    if (!ok) stream.close(1008, 'no longer allowed in this room')
  }))
  // A rotated display capability (or a removal) closes the stream at once; so does the end of a coach's session.
  stream.onClose(rooms.onChange(changed => { if (changed === roomId && !allowed()) stream.close(1008, 'no longer allowed in this room') }))
  if (viewer.kind === 'coach') viewer.bind(stream)
  // A change that landed between the handshake's check and the subscriptions above.
  if (!allowed()) { stream.close(1008, 'no longer allowed in this room'); return stream }
  // A display that opens during a class (or its results) starts from the class on view.
  const current = viewer.kind !== 'member' && kinds.has('room_class') ? uses.classes?.view(roomId) ?? null : null
  if (current !== null) {
    const message: RoomMessage = { kind: 'room_class', timestamp: new Date().toISOString(), room_class: current }
    stream.send(roomMessageBytes(viewer.kind === 'display' ? forDisplay(message) : message))
  }
  return stream
}

/**
 * A member hidden from room displays (docs/operator.md "Pages the box serves"): their bpm never leaves the box, except on their own
 * stream; nor does a reading measured while they hid that arrives after they show again (a device's backlog). A member the
 * coach hid for the running class: their bpm goes to no display (the coach page still gets it).
 */
function hiddenFrom (uses: RoomStreamUses, roomId: string, message: RoomMessage, viewer: RoomViewer): boolean {
  if (message.kind !== 'heart_rate') return false
  const who = message.heart_rate.profile_id
  if (viewer.kind === 'member' && viewer.profileId === who) return false
  const users = uses.users
  if (users.roomHidden(who)) return true
  if (viewer.kind === 'display' && uses.classes?.hiddenFromDisplays(roomId, who) === true) return true
  // Only a member who hid before pays for parsing the timestamp, once per viewer.
  const since = users.roomVisibleSince(who)
  return since > 0 && Date.parse(message.timestamp) < since
}

const params = Params({ room_id: Type.String({ maxLength: 100 }) })
const querystring = Type.Object({
  kinds: Type.Optional(Type.String({ maxLength: 200 })),
  access_token: Type.Optional(Type.String()),
  display_id: Type.Optional(Type.String({ maxLength: 100 }))
})

/** What the room streams use (and the guard's token store and limit). */
export type RoomsUses = GuardUses & RoomStreamUses

export const roomsPlugin: FastifyPluginAsyncTypebox<RoomsUses> = async (app, uses) => {
  const { rooms, tokens } = uses
  const auth = guard(uses, { scope: 'data:room:read', query: true })
  /** The room id of the path; 404 JSON when there is no such room. */
  const roomIdOf = (roomId: string): string => {
    if (rooms.get(roomId) === undefined) throw new ApiError('not_found', { detail: 'no such room' })
    return roomId
  }

  app.get('/api/v2/data/rooms/:room_id/real_time', {
    websocket: true,
    // onRequest runs before the querystring is validated: parseKinds checks the raw value.
    onRequest: async (request, reply) => {
      await auth(request, reply)
      const roomId = roomIdOf(request.params.room_id)
      if (!rooms.isMember(roomId, profileOf(request))) throw new ApiError('forbidden', { detail: 'not a member of this room' })
      parseKinds(request.query.kinds)
    },
    schema: { params, querystring }
  }, (socket, request) => {
    const stream = serveRoom(uses, socket, roomIdOf(request.params.room_id), parseKinds(request.query.kinds), { kind: 'member', profileId: profileOf(request) })
    const auth = request.auth
    if (auth === undefined) { stream.close(1008, 'token revoked'); return }
    bindToToken(stream, tokens, auth.digest, auth.record.expires_at)
  })

  app.get('/rooms/:room_id/stream', {
    websocket: true,
    onRequest: async request => {
      const roomId = roomIdOf(request.params.room_id)
      const displayId: unknown = request.query.display_id
      if (typeof displayId !== 'string' || !rooms.displayAllowed(roomId, displayId)) throw new ApiError('forbidden', { detail: 'display_id missing or revoked' })
      parseKinds(request.query.kinds, DISPLAY_KINDS)
    },
    schema: { params, querystring }
  }, (socket, request) => {
    const q = request.query
    serveRoom(uses, socket, roomIdOf(request.params.room_id), parseKinds(q.kinds, DISPLAY_KINDS), { kind: 'display', displayId: q.display_id ?? '' })
  })
}
