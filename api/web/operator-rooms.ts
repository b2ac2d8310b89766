// /operator/rooms: create and rename rooms, add and remove members, show and
// revoke (rotate) the room display link
// <public_url>/rooms/<room_id>/display?display_id=<display_id>, and each
// room's coach page (operator-coach.ts: start and end a class).
import type { FastifyInstance, FastifyReply } from 'fastify'
import type { RoomRecord } from '../store/rooms.ts'
import type { Session } from '../oauth/session.ts'
import { esc, field, notice, postForm, sendPage, table } from './html.ts'
import { one } from './guard.ts'
import { operatorNav } from './nav.ts'
import { operatorForm, operatorPage, type OperatorUses } from './operator-auth.ts'
import type { Services } from '../services.ts'
import { coachRoutes, type CoachUses } from './operator-coach.ts'
import type { ClassView } from '../classes/types.ts'

export function displayUrl (publicUrl: string, room: RoomRecord): string {
  return `${publicUrl}/rooms/${encodeURIComponent(room.room_id)}/display?display_id=${encodeURIComponent(room.display_id)}`
}

const DONE: Record<string, string> = {
  created: 'Room created.', renamed: 'Room renamed.', added: 'Member saved.', removed: 'Member removed.', revoked: 'Display link revoked; the new link is shown below.'
}

/** Start a class, or end the running one (the coach page's forms; they lead to the coach page). */
function classForms (base: string, csrf: string, room: RoomRecord, p: string, view: ClassView | null): string {
  if (view?.state === 'running') {
    return postForm(`${base}/class/end`, csrf, `<p>Class running: ${esc(view.name)}. <button type="submit" class="danger">End the class in ${esc(room.name)}</button></p>`)
  }
  return postForm(`${base}/class`, csrf, `<fieldset><legend>Start a class in ${esc(room.name)}</legend>
${field(`${p}-cname`, 'Class name', `<input type="text" id="${p}-cname" name="name" maxlength="100" placeholder="Class">`)}
${field(`${p}-cmin`, 'Planned length (minutes)', `<input type="number" id="${p}-cmin" name="minutes" min="1" max="240" value="45">`)}
<button type="submit">Start class</button></fieldset>`)
}

function roomSection (publicUrl: string, csrf: string, room: RoomRecord, usernames: Map<string, string>, userOptions: string, view: ClassView | null | undefined): string {
  const base = `/operator/rooms/${encodeURIComponent(room.room_id)}`
  const p = room.room_id.slice(0, 8)
  const members = room.members.map(m => [
    esc(m.display_name), esc(usernames.get(m.profile_id) ?? m.profile_id), esc(m.max_heart_rate ?? 'from profile'),
    postForm(`${base}/members/${encodeURIComponent(m.profile_id)}/remove`, csrf, `<button type="submit" class="danger" aria-label="Remove ${esc(m.display_name)} from ${esc(room.name)}">Remove</button>`, 'class="inline"')
  ])
  const link = displayUrl(publicUrl, room)
  return `<section class="room-item" aria-labelledby="r-${esc(p)}"><h2 id="r-${esc(p)}">${esc(room.name)}</h2>
<p><a class="coach-link" href="${esc(base)}/coach">Coach page of ${esc(room.name)}</a>: start and end a class, live tiles with alerts (made for a tablet).</p>
${view === undefined ? '' : classForms(base, csrf, room, p, view)}
<p>Display link (open it on the gym screen; anyone with it can watch): <a class="mono display-link" href="${esc(link)}">${esc(link)}</a></p>
<p>Tiles in name order; the same screen ordered <a class="display-order" href="${esc(link)}&amp;order=bpm">by heart rate</a>, <a class="display-order" href="${esc(link)}&amp;order=zone">by zone</a> or <a class="display-order" href="${esc(link)}&amp;order=effort">by a class's effort points</a>; on two screens: <a class="display-part" href="${esc(link)}&amp;part=1of2">first half</a> and <a class="display-part" href="${esc(link)}&amp;part=2of2">second half</a> of the members.</p>
${postForm(`${base}/display/revoke`, csrf, `<button type="submit" class="danger">Revoke display link of ${esc(room.name)}</button>`)}
${table(`Members of ${room.name}`, ['Display name', 'User', 'Max heart rate', ''], members, 'no members yet')}
${postForm(`${base}/members`, csrf, `<fieldset><legend>Add or update a member of ${esc(room.name)}</legend>
${field(`${p}-user`, 'User', `<select id="${p}-user" name="username" required>${userOptions}</select>`)}
${field(`${p}-dn`, 'Display name (shown on the screen)', `<input type="text" id="${p}-dn" name="display_name" maxlength="60" placeholder="the user's display name">`)}
${field(`${p}-max`, 'Maximum heart rate (optional; else from the profile, 220 − age, or 190)', `<input type="number" id="${p}-max" name="max_heart_rate" min="60" max="260">`)}
<button type="submit">Save member</button></fieldset>`)}
${postForm(`${base}/rename`, csrf, `${field(`${p}-name`, `New name for ${room.name}`, `<input type="text" id="${p}-name" name="name" required maxlength="100" value="${esc(room.name)}">`)}<button type="submit">Rename</button>`)}
</section>`
}

/** What the rooms page uses: the rooms, the accounts to add, the public URL (display links), operator sign-in, and what the coach page uses. */
export type OperatorRoomsUses = OperatorUses & Pick<Services, 'rooms' | 'users'> & CoachUses

export async function roomRoutes (app: FastifyInstance, uses: OperatorRoomsUses): Promise<void> {
  const page = async (reply: FastifyReply, session: Session, status: number, message?: string, error?: string): Promise<FastifyReply> => {
    const users = await uses.users.list()
    const usernames = new Map(users.map(u => [u.profile_id, u.username]))
    const options = users.map(u => `<option value="${esc(u.username)}">${esc(u.username)}${u.display_name === undefined ? '' : ` (${esc(u.display_name)})`}</option>`).join('')
    const rooms = uses.rooms.list()
    const body = `${notice(message)}${notice(error, 'error')}
${postForm('/operator/rooms', session.csrf, `<fieldset><legend>Create a room</legend>${field('new-room', 'Room name', '<input type="text" id="new-room" name="name" required maxlength="100">')}<button type="submit">Create room</button></fieldset>`)}
${rooms.map(r => roomSection(uses.config.publicUrl, session.csrf, r, usernames, options, uses.classes === undefined ? undefined : uses.classes.view(r.room_id))).join('\n')}
${rooms.length === 0 ? '<p>No rooms yet.</p>' : ''}`
    return await sendPage(reply, status, 'Rooms', body, operatorNav(session.csrf, '/operator/rooms'))
  }
  const done = async (reply: FastifyReply, what: string): Promise<FastifyReply> => await reply.redirect(`/operator/rooms?done=${what}`, 303)
  const roomOf = (params: { room_id: string }): RoomRecord | undefined => uses.rooms.get(params.room_id)

  app.get<{ Querystring: { done?: unknown } }>('/operator/rooms', async (request, reply) => {
    const session = await operatorPage(uses, request, reply, { allow: 'coach' })
    if (session === null) return reply
    return await page(reply, session, 200, DONE[String(request.query.done ?? '')])
  })

  app.post('/operator/rooms', async (request, reply) => {
    const f = await operatorForm(uses, request, reply, { allow: 'coach' })
    if (f === null) return reply
    const name = one(f.form, 'name').trim()
    if (name.length === 0 || name.length > 100) return await page(reply, f.session, 400, undefined, 'The room name must be 1 to 100 characters.')
    await uses.rooms.create(name)
    return await done(reply, 'created')
  })

  app.post<{ Params: { room_id: string } }>('/operator/rooms/:room_id/rename', async (request, reply) => {
    const f = await operatorForm(uses, request, reply, { allow: 'coach' })
    if (f === null) return reply
    const room = roomOf(request.params)
    const name = one(f.form, 'name').trim()
    if (room === undefined) return await page(reply, f.session, 404, undefined, 'No such room.')
    if (name.length === 0 || name.length > 100) return await page(reply, f.session, 400, undefined, 'The room name must be 1 to 100 characters.')
    await uses.rooms.rename(room.room_id, name)
    return await done(reply, 'renamed')
  })

  app.post<{ Params: { room_id: string } }>('/operator/rooms/:room_id/members', async (request, reply) => {
    const f = await operatorForm(uses, request, reply, { allow: 'coach' })
    if (f === null) return reply
    const room = roomOf(request.params)
    if (room === undefined) return await page(reply, f.session, 404, undefined, 'No such room.')
    const user = await uses.users.byUsername(one(f.form, 'username'))
    if (user === undefined) return await page(reply, f.session, 400, undefined, 'No such user.')
    const displayName = one(f.form, 'display_name').trim() || user.display_name || user.username
    if (displayName.length > 60) return await page(reply, f.session, 400, undefined, 'The display name must be at most 60 characters.')
    const maxText = one(f.form, 'max_heart_rate').trim()
    const max = maxText === '' ? null : Number(maxText)
    if (max !== null && (!Number.isInteger(max) || max < 60 || max > 260)) return await page(reply, f.session, 400, undefined, 'The maximum heart rate must be a whole number from 60 to 260.')
    await uses.rooms.upsertMember(room.room_id, user.profile_id, { display_name: displayName, max_heart_rate: max })
    return await done(reply, 'added')
  })

  app.post<{ Params: { room_id: string, profile_id: string } }>('/operator/rooms/:room_id/members/:profile_id/remove', async (request, reply) => {
    const f = await operatorForm(uses, request, reply, { allow: 'coach' })
    if (f === null) return reply
    const room = roomOf(request.params)
    const { profile_id: profileId } = request.params
    if (room === undefined || !await uses.rooms.removeMember(room.room_id, profileId)) return await page(reply, f.session, 404, undefined, 'No such room member.')
    return await done(reply, 'removed')
  })

  app.post<{ Params: { room_id: string } }>('/operator/rooms/:room_id/display/revoke', async (request, reply) => {
    const f = await operatorForm(uses, request, reply, { allow: 'coach' })
    if (f === null) return reply
    const room = roomOf(request.params)
    if (room === undefined || await uses.rooms.rotateDisplay(room.room_id) === undefined) return await page(reply, f.session, 404, undefined, 'No such room.')
    return await done(reply, 'revoked')
  })

  await coachRoutes(app, uses)
}
