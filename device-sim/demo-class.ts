// The demo's class (issue 43): when the demo starts, it starts a short class
// in its room through the admin API (POST /admin/rooms/<room_id>/class, as
// `hr-relay admin room class start` does), so a person watching the room
// display sees effort points add up minute by minute and then the results.
// A service without class mode (404) or with a class already running (409, a
// restarted demo) is not an error: the demo goes on without a new class.
import type { Logger } from 'pino'
import { SimError } from './errors.ts'
import type { AdminClient, AdminRequest } from './admin-client.ts'

export const DEMO_CLASS_NAME = 'Demo class'
/** Short enough that someone watching sees the points and then the results. */
export const DEMO_CLASS_MINUTES = 3

/** The admin API request that starts the demo's class. */
export function demoClassRequest (roomId: string, minutes = DEMO_CLASS_MINUTES): AdminRequest {
  return { method: 'POST', path: `/admin/rooms/${encodeURIComponent(roomId)}/class`, body: { name: DEMO_CLASS_NAME, minutes } }
}

export type DemoClassResult = 'started' | 'running' | 'unavailable' | 'failed'

/** Starts the demo's class; never throws (the demo runs with or without it). */
export async function startDemoClass (admin: AdminClient, roomId: string, log: Logger, minutes = DEMO_CLASS_MINUTES): Promise<DemoClassResult> {
  const req = demoClassRequest(roomId, minutes)
  let r: { status: number, body: any }
  try {
    r = await admin.request(req.method, req.path, req.body)
  } catch (err) {
    if (!(err instanceof SimError)) throw err
    log.warn({ err }, 'demo: could not start the demo class')
    return 'failed'
  }
  if (r.status === 201) {
    log.info({ room_id: roomId, class_id: r.body?.class_id, minutes }, 'demo: class started')
    return 'started'
  }
  if (r.status === 409) {
    log.info({ room_id: roomId }, 'demo: a class is already running in the demo room')
    return 'running'
  }
  if (r.status === 404) {
    log.warn({ room_id: roomId }, 'demo: this hr-relay has no class mode (POST /admin/rooms/<room_id>/class answered 404); the demo runs without a class')
    return 'unavailable'
  }
  log.warn({ room_id: roomId, status: r.status }, 'demo: could not start the demo class')
  return 'failed'
}
