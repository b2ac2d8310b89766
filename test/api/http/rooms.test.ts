// Rooms: the admin CLI, the member stream /api/v2/data/rooms/{id}/real_time and
// the display stream /rooms/{id}/stream, over a listening server.
import t from 'tap'
import { startTestService, type TestService } from '../../helpers/service.ts'
import { call, openWs, refused, wsUrl } from './fetch.ts'
import { runMain } from '../../helpers/cli.ts'

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/

/** `hr-relay admin …` against the running service, in-process (test/relay/cli.test.ts runs the real binary). */
async function cli (s: TestService, ...args: string[]): Promise<string> {
  const r = await runMain(['admin', ...args, '--data-dir', s.dataDir])
  if (r.code !== 0) throw new Error(`hr-relay admin ${args.join(' ')}: exit ${r.code}: ${r.stderr}`)
  return r.stdout
}

t.test('room CLI, member stream with every kind, kinds filter, membership', async t => {
  const s = await startTestService(t)
  const alice = await s.user('alice', { display_name: 'Alice A.', max_heart_rate: 190 })
  const bob = await s.user('bob')
  await s.user('carol')

  const added = JSON.parse(await cli(s, 'room', 'add', 'Spin class', '--json'))
  const roomId: string = added.room_id
  t.match(roomId, /^[0-9a-f-]{36}$/)
  await cli(s, 'room', 'member', 'add', roomId, 'alice')
  await cli(s, 'room', 'member', 'add', roomId, 'bob', '--display-name', 'Bobby')
  const list = await cli(s, 'room', 'list')
  t.match(list, new RegExp(`${roomId}\\tSpin class\\tmembers=alice,bob`))

  const aliceRoom = await s.token('alice', 'data:room:read')
  const bobRoom = await s.token('bob', 'data:room:read')
  const carolRoom = await s.token('carol', 'data:room:read')
  const aliceWrite = await s.token('alice', 'data:heart_rate:write')
  const bobWrite = await s.token('bob', 'data:heart_rate:write')
  const path = `/api/v2/data/rooms/${roomId}/real_time`

  const all = await openWs(wsUrl(s.url, `${path}?access_token=${aliceRoom}&kinds=heart_rate,room_member_updated,room_member_removed,room_updated`))
  const hrOnly = await openWs(wsUrl(s.url, path), { authorization: `Bearer ${bobRoom}` })
  const events = await openWs(wsUrl(s.url, `${path}?access_token=${bobRoom}&kinds=room_updated,room_member_removed`))
  t.teardown(() => { for (const c of [all, hrOnly, events]) c.ws.terminate() })

  // Readings in the past: one ahead of the relay's clock is stored at receive time (clock-skew correction).
  const now = Date.now() - 10_000
  t.equal((await call(s.url, 'POST', '/api/v1/data', { token: aliceWrite, body: { measured_at: now, data: { heart_rate: 72 } } })).status, 200)
  t.equal((await call(s.url, 'POST', '/api/v1/data', { token: bobWrite, body: { measured_at: now + 1, data: { heart_rate: 140 } } })).status, 200)
  const hr1 = { kind: 'heart_rate', timestamp: new Date(now).toISOString(), heart_rate: { profile_id: alice, bpm: 72 } }
  const hr2 = { kind: 'heart_rate', timestamp: new Date(now + 1).toISOString(), heart_rate: { profile_id: bob, bpm: 140 } }
  t.same(JSON.parse(await all.next()), hr1)
  t.same(JSON.parse(await all.next()), hr2)
  t.same(JSON.parse(await hrOnly.next()), hr1, 'default kinds: heart_rate')
  t.same(JSON.parse(await hrOnly.next()), hr2)

  await cli(s, 'room', 'update', roomId, '--name', 'Spin 2')
  let m = JSON.parse(await all.next())
  t.match(m.timestamp, ISO)
  t.same(m, { kind: 'room_updated', timestamp: m.timestamp, room_updated: { room_id: roomId, config: { name: 'Spin 2' } } })
  t.same(JSON.parse(await events.next()), m)

  await cli(s, 'room', 'member', 'add', roomId, 'carol', '--display-name', 'Caz', '--max-heart-rate', '180')
  const carol = (await s.admin('GET', '/admin/rooms/' + roomId)).members.find((x: any) => x.username === 'carol').profile_id
  m = JSON.parse(await all.next())
  t.same(m, { kind: 'room_member_updated', timestamp: m.timestamp, room_member_updated: { profile_id: carol, config: { display_name: 'Caz', max_heart_rate: 180, zones: [50, 60, 70, 80, 90] } } })

  // Bob is removed: events subscribers see it, and bob's own streams are closed with 1008.
  await cli(s, 'room', 'member', 'remove', roomId, 'bob')
  m = JSON.parse(await all.next())
  t.same(m, { kind: 'room_member_removed', timestamp: m.timestamp, room_member_removed: { profile_id: bob } })
  t.same(JSON.parse(await events.next()), m)
  t.equal((await hrOnly.closed).code, 1008)
  t.equal((await events.closed).code, 1008)
  // Bob's readings no longer reach the room; the next message alice sees is her own.
  await call(s.url, 'POST', '/api/v1/data', { token: bobWrite, body: { measured_at: now + 2, data: { heart_rate: 141 } } })
  await call(s.url, 'POST', '/api/v1/data', { token: aliceWrite, body: { measured_at: now + 3, data: { heart_rate: 73 } } })
  t.same(JSON.parse(await all.next()), { kind: 'heart_rate', timestamp: new Date(now + 3).toISOString(), heart_rate: { profile_id: alice, bpm: 73 } })

  // Refusals at the handshake.
  let a = await refused(wsUrl(s.url, path), { authorization: `Bearer ${bobRoom}` })
  t.equal(a.status, 403, 'no longer a member')
  t.same(a.body, { error_code: 9403, error_message: 'forbidden', detail: 'not a member of this room' })
  a = await refused(wsUrl(s.url, `/api/v2/data/rooms/00000000-0000-0000-0000-000000000000/real_time?access_token=${carolRoom}`))
  t.equal(a.status, 404)
  t.same(a.body, { error_code: 9404, error_message: 'not_found', detail: 'no such room' })
  a = await refused(wsUrl(s.url, `${path}?access_token=${carolRoom}&kinds=heart_rate,gossip`))
  t.equal(a.status, 400)
  t.equal(a.body.error_code, 7013)
  a = await refused(wsUrl(s.url, `${path}?access_token=${carolRoom}&kinds=`))
  t.equal(a.status, 400, 'empty kinds')
  a = await refused(wsUrl(s.url, `${path}?access_token=${aliceWrite}`))
  t.equal(a.status, 400)
  t.same(a.body, { error_code: 7011, error_message: 'error_invalid_scope' })
  a = await refused(wsUrl(s.url, path))
  t.equal(a.status, 403)
  t.equal(a.body.error_code, 7009)

  // CLI errors: unknown room, unknown user.
  await t.rejects(cli(s, 'room', 'member', 'add', '00000000-0000-0000-0000-000000000000', 'alice'), /HTTP 404/)
  await t.rejects(cli(s, 'room', 'member', 'remove', roomId, 'bob'), /HTTP 404/)
})

t.test('display stream: capability, kinds, rotation', async t => {
  const s = await startTestService(t)
  const alice = await s.user('alice')
  const room = await s.admin('POST', '/admin/rooms', { name: 'Gym floor' })
  await s.admin('POST', `/admin/rooms/${room.room_id}/members`, { username: 'alice' })
  const w = await s.token('alice', 'data:heart_rate:write')
  const base = `/rooms/${room.room_id}/stream`

  const display = await openWs(wsUrl(s.url, `${base}?display_id=${room.display_id}&kinds=heart_rate,room_updated`))
  const now = Date.now()
  await call(s.url, 'POST', '/api/v1/data', { token: w, body: { measured_at: now, data: { heart_rate: 101 } } })
  t.same(JSON.parse(await display.next()), { kind: 'heart_rate', timestamp: new Date(now).toISOString(), heart_rate: { profile_id: alice, bpm: 101 } })
  await s.admin('PATCH', `/admin/rooms/${room.room_id}`, { name: 'Gym floor 2' })
  t.equal(JSON.parse(await display.next()).room_updated.config.name, 'Gym floor 2')

  let a = await refused(wsUrl(s.url, `${base}?display_id=00000000-0000-0000-0000-000000000000`))
  t.equal(a.status, 403)
  t.same(a.body, { error_code: 9403, error_message: 'forbidden', detail: 'display_id missing or revoked' })
  a = await refused(wsUrl(s.url, base))
  t.equal(a.status, 403)
  a = await refused(wsUrl(s.url, `/rooms/00000000-0000-0000-0000-000000000000/stream?display_id=${room.display_id}`))
  t.equal(a.status, 404)

  // Rotating the display id revokes the old link and closes the open stream at once.
  const rotated = await s.admin('POST', `/admin/rooms/${room.room_id}/display`)
  t.not(rotated.display_id, room.display_id)
  t.equal((await display.closed).code, 1008)
  a = await refused(wsUrl(s.url, `${base}?display_id=${room.display_id}`))
  t.equal(a.status, 403, 'old display id refused')
  const fresh = await openWs(wsUrl(s.url, `${base}?display_id=${rotated.display_id}`))
  fresh.ws.terminate()
})
