// What goes into the audit log (log.ts), captured in one place: a hook that
// records every request to a route of ACTIONS, with the action's name,
// the object it names (from the route's parameters or one named field of the
// body, never the body itself), the actor, the address and the result. A
// mutating admin or operator route missing from ACTIONS is still recorded, under
// "<METHOD> <route>" (test/api/audit/audit.test.ts keeps the table complete).
import type { FastifyInstance, FastifyRequest, FastifyReply } from 'fastify'
import type { Store } from '../store/db.ts'
import { auditLogOf, type AuditEntry } from './log.ts'

interface Action {
  action: string
  kind: string
  /** Where the object's id is: a route parameter, or one field of a JSON body. */
  param?: string
  field?: string
}

/** Every change made through the admin API and the operator pages (and a member's own erasure), by route. */
export const ACTIONS: Record<string, Action> = {
  'POST /admin/users': { action: 'user.create', kind: 'user', field: 'username' },
  'PATCH /admin/users/:username': { action: 'user.update', kind: 'user', param: 'username' },
  'POST /admin/users/:username/invitation': { action: 'user.invite', kind: 'user', param: 'username' },
  'POST /admin/users/:username/features': { action: 'user.feature.grant', kind: 'user', param: 'username' },
  'PUT /admin/users/:username/consent': { action: 'user.consent.record', kind: 'user', param: 'username' },
  'DELETE /admin/users/:username/consent': { action: 'user.consent.withdraw', kind: 'user', param: 'username' },
  'GET /admin/users/:username/export': { action: 'user.export', kind: 'user', param: 'username' },
  'DELETE /admin/users/:username': { action: 'user.delete', kind: 'user', param: 'username' },
  'PUT /admin/users/:username/home-assistant': { action: 'user.home_assistant.set', kind: 'user', param: 'username' },
  'DELETE /admin/users/:username/clients/:client_id': { action: 'user.app.disconnect', kind: 'user', param: 'username' },
  'POST /admin/clients': { action: 'client.create', kind: 'client', field: 'name' },
  'POST /admin/tokens': { action: 'token.issue', kind: 'user', field: 'username' },
  'POST /admin/devices': { action: 'device.pair', kind: 'device', field: 'device_id' },
  'DELETE /admin/devices/:device_id': { action: 'device.unpair', kind: 'device', param: 'device_id' },
  'POST /admin/rooms': { action: 'room.create', kind: 'room', field: 'name' },
  'PATCH /admin/rooms/:room_id': { action: 'room.update', kind: 'room', param: 'room_id' },
  'POST /admin/rooms/:room_id/members': { action: 'room.member.add', kind: 'room', param: 'room_id' },
  'DELETE /admin/rooms/:room_id/members/:username': { action: 'room.member.remove', kind: 'room', param: 'room_id' },
  'POST /admin/rooms/:room_id/display': { action: 'room.display.rotate', kind: 'room', param: 'room_id' },
  'POST /admin/rooms/:room_id/class': { action: 'room.class.start', kind: 'room', param: 'room_id' },
  'POST /admin/rooms/:room_id/class/end': { action: 'room.class.end', kind: 'room', param: 'room_id' },
  'POST /admin/integrations': { action: 'integration.add', kind: 'integration', field: 'name' },
  'POST /admin/operators': { action: 'operator.add', kind: 'operator', field: 'name' },
  'DELETE /admin/operators/:name': { action: 'operator.remove', kind: 'operator', param: 'name' },
  'POST /operator/signin': { action: 'operator.signin', kind: 'operator' },
  'POST /operator/signout': { action: 'operator.signout', kind: 'operator' },
  'POST /operator/rooms': { action: 'room.create', kind: 'room' },
  'POST /operator/rooms/:room_id/rename': { action: 'room.update', kind: 'room', param: 'room_id' },
  'POST /operator/rooms/:room_id/members': { action: 'room.member.add', kind: 'room', param: 'room_id' },
  'POST /operator/rooms/:room_id/members/:profile_id/remove': { action: 'room.member.remove', kind: 'room', param: 'room_id' },
  'POST /operator/rooms/:room_id/display/revoke': { action: 'room.display.rotate', kind: 'room', param: 'room_id' },
  'POST /operator/rooms/:room_id/class': { action: 'class.start', kind: 'room', param: 'room_id' },
  'POST /operator/rooms/:room_id/class/end': { action: 'class.end', kind: 'room', param: 'room_id' },
  'POST /operator/rooms/:room_id/class/members/:profile_id/hidden': { action: 'class.member.hide', kind: 'room', param: 'room_id' },
  'POST /operator/devices/pair': { action: 'device.pair', kind: 'device' },
  'POST /operator/devices/:device_id/unpair': { action: 'device.unpair', kind: 'device', param: 'device_id' },
  'POST /operator/users': { action: 'user.create', kind: 'user' },
  'POST /operator/users/:username': { action: 'user.update', kind: 'user', param: 'username' },
  'POST /operator/users/:username/invitation': { action: 'user.invite', kind: 'user', param: 'username' },
  'POST /operator/users/:username/delete': { action: 'user.delete', kind: 'user', param: 'username' },
  'POST /operator/operators': { action: 'operator.add', kind: 'operator' },
  'POST /operator/operators/:name/remove': { action: 'operator.remove', kind: 'operator', param: 'name' },
  'POST /me/delete': { action: 'user.delete', kind: 'user' },
  // The token is in the path: the entry names the member (set by the handler), never the link.
  'POST /me/invitation/:token': { action: 'user.invitation.accept', kind: 'user' }
}

const READS = new Set(['GET', 'HEAD', 'OPTIONS'])

/** An object id a handler sets instead of the one the route names (an erasure: the digest, never the username). */
const overrides = new WeakMap<FastifyRequest, string>()

export function setAuditObject (request: FastifyRequest, id: string): void { overrides.set(request, id) }

/** Whether a request to this route is recorded: a route of ACTIONS, or any admin or operator route that changes something. */
export function audited (method: string, url: string | undefined): boolean {
  if (url === undefined) return false
  if (ACTIONS[`${method} ${url}`] !== undefined) return true
  return !READS.has(method) && (url.startsWith('/admin/') || url.startsWith('/operator/'))
}

/** Who made the request: the admin token for the admin API, the operator for the operator pages, the member on /me. */
export type ActorOf = (request: FastifyRequest) => string

function objectOf (request: FastifyRequest, a: Action | undefined): AuditEntry['object'] {
  if (a === undefined) return { kind: 'unknown', id: null }
  const set = overrides.get(request)
  if (set !== undefined) return { kind: a.kind, id: set }
  const params = request.params as Record<string, unknown> | undefined
  const body = request.body as Record<string, unknown> | undefined
  const raw = a.param !== undefined ? params?.[a.param] : a.field !== undefined && body !== null && typeof body === 'object' && !(body instanceof Map) ? body[a.field] : undefined
  return { kind: a.kind, id: typeof raw === 'string' && raw.length <= 200 ? raw : null }
}

/**
 * Records audited requests of this server into the store's audit log: an onSend hook on each audited route (added
 * as the route is registered), so that the entry is on disk before the answer leaves and no other route pays for it.
 */
export function captureAudit (app: FastifyInstance, store: Store, actorOf: ActorOf): void {
  const log = auditLogOf(store)
  const record = async (request: FastifyRequest, reply: FastifyReply, payload: unknown): Promise<unknown> => {
    const url = request.routeOptions.url
    const a = ACTIONS[`${request.method} ${url ?? ''}`]
    const status = reply.statusCode
    const entry: AuditEntry = {
      at: Date.now(),
      actor: actorOf(request),
      action: a?.action ?? `${request.method} ${url ?? ''}`,
      object: objectOf(request, a),
      ip: request.ip,
      result: status >= 500 ? 'error' : status >= 400 ? 'refused' : 'ok',
      status
    }
    try {
      await log.append(entry)
    } catch (err) {
      request.log.error({ err, action: entry.action }, 'could not append to the audit log')
    }
    return payload
  }
  app.addHook('onRoute', route => {
    const methods = Array.isArray(route.method) ? route.method : [route.method]
    if (!methods.some(m => audited(m, route.url))) return
    const own = route.onSend === undefined ? [] : Array.isArray(route.onSend) ? route.onSend : [route.onSend]
    route.onSend = [...own, record] as typeof route.onSend
  })
}
