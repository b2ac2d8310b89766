// "Hide me from room displays" on /me: a member pauses their tile on every
// room display for 15 minutes, an hour, or until they turn it off. Stored on
// the user record (room_hidden); the room streams then drop the member's bpm
// on the server (api/http/rooms.ts), and each room gets a room_member_updated
// with config.paused so displays show "paused" at once. docs/operator.md "Pages the box serves".
import type { FastifyInstance } from 'fastify'
import type { RoomHidden, UserRecord } from '../store/users.ts'
import { roomHiddenNow } from '../store/users.ts'
import { memberConfig } from '../store/rooms.ts'
import type { Services } from '../services.ts'
import { esc, field, postForm, when } from './html.ts'
import { checkedForm, memberOf, one, type PageGuardUses } from './guard.ts'
import { errorPage } from '../oauth/pages.ts'

const DURATIONS: Record<string, number | null> = { '15m': 15 * 60_000, '1h': 60 * 60_000, off: null }

/** The block of /me (id room-displays). */
export function roomVisibilityBlock (user: UserRecord, csrf: string, now = Date.now()): string {
  const h = user.room_hidden
  const hidden = roomHiddenNow(h, now)
  const status = !hidden ? 'Room displays show you.' : h?.until == null ? 'You are hidden from room displays until you turn it off.' : `You are hidden from room displays until ${when(h.until)}.`
  const form = hidden
    ? postForm('/me/room-visibility', csrf, '<input type="hidden" name="hide" value="show"><button type="submit">Show me on room displays again</button>')
    : postForm('/me/room-visibility', csrf, `${field('room-hide', 'Hide me from room displays', `<select id="room-hide" name="hide">
<option value="15m">for 15 minutes</option><option value="1h">for 1 hour</option><option value="off">until I turn it off</option></select>`)}<button type="submit">Hide me</button>`)
  return `<section id="room-displays" aria-labelledby="room-displays-title"><h2 id="room-displays-title">Room displays</h2>
<p id="room-visibility" role="status">${esc(status)}</p>${form}</section>`
}

export async function roomVisibilityRoutes (app: FastifyInstance, uses: PageGuardUses & AnnounceUses): Promise<void> {
  app.post('/me/room-visibility', async (request, reply) => {
    const checked = await checkedForm(uses, request, reply)
    if (checked === null) return reply
    const who = await memberOf(uses, request, reply, '/me')
    if (who === null) return reply
    const choice = one(checked.form, 'hide')
    const now = Date.now()
    let next: RoomHidden | undefined
    if (choice === 'show') next = undefined
    else if (choice in DURATIONS) {
      const d = DURATIONS[choice]
      next = { since: now, until: d == null ? null : now + d }
    } else return await errorPage(reply, 400, 'Bad request', 'Choose how long to hide from room displays.')
    await uses.users.update(who.user.profile_id, u => {
      // Showing again ends the hidden period now and keeps it: displays never show what was measured during it.
      if (next === undefined) {
        if (u.room_hidden !== undefined && roomHiddenNow(u.room_hidden, now)) u.room_hidden = { since: u.room_hidden.since, until: now }
      } else u.room_hidden = next
      return u
    })
    // Every room of the member learns at once; the stream already drops the bpm (the index is updated above).
    announceRoomPause(uses, who.user.profile_id, now)
    return await reply.redirect('/me#room-displays', 303)
  })
}

/**
 * Tells every room of a member whether displays show them as paused now (Users.roomHidden: hidden from
 * room displays, or ingestion paused), with a room_member_updated carrying config.paused.
 */
/** What announcing a pause uses: the member's rooms, whether they are hidden, and the hub to tell the displays. */
export type AnnounceUses = Pick<Services, 'users' | 'rooms' | 'hub'>

export function announceRoomPause (uses: AnnounceUses, profileId: string, now = Date.now()): void {
  const paused = uses.users.roomHidden(profileId, now)
  for (const roomId of uses.rooms.roomsOf(profileId)) {
    const m = uses.rooms.get(roomId)?.members.find(x => x.profile_id === profileId)
    if (m === undefined) continue
    uses.hub.publishRoomEvent(roomId, {
      kind: 'room_member_updated',
      timestamp: new Date(now).toISOString(),
      room_member_updated: { profile_id: m.profile_id, config: { ...memberConfig(m), paused } }
    })
  }
}
