// Classes over a listening server: the admin API and `hr-relay admin room class`,
// the room_class message on the display stream (and never on the
// Pulsoid-compatible member stream), and GET /api/v1/classes.
import t from 'tap'
import { startTestService, type TestService } from '../../helpers/service.ts'
import { call, openWs, refused, wsUrl } from '../http/fetch.ts'
import { runMain } from '../../helpers/cli.ts'

async function cli (s: TestService, ...args: string[]): Promise<string> {
  const r = await runMain(['admin', ...args, '--data-dir', s.dataDir])
  if (r.code !== 0) throw new Error(`hr-relay admin ${args.join(' ')}: exit ${r.code}: ${r.stderr}`)
  return r.stdout
}

const UUID = /^[0-9a-f-]{36}$/

t.test('start and end a class with the CLI and the admin API', async t => {
  const s = await startTestService(t)
  await s.user('alice')
  const room = await s.admin('POST', '/admin/rooms', { name: 'Studio' })
  await s.admin('POST', `/admin/rooms/${room.room_id}/members`, { username: 'alice', display_name: 'Alice' })
  const admin = { authorization: `Bearer ${s.adminToken}` }

  let a = await call(s.url, 'GET', `/admin/rooms/${room.room_id}/class`, { headers: admin })
  t.same([a.status, a.json], [404, { error_code: 9404, error_message: 'not_found', detail: `no class on view in room ${room.room_id}` }])

  const before = Date.now()
  const started = JSON.parse(await cli(s, 'room', 'class', 'start', room.room_id, '--name', 'Spin 18:00', '--minutes', '45', '--json'))
  t.match(started.class_id, UUID)
  t.ok(started.started_at >= before && started.started_at <= Date.now())
  t.same(started, { class_id: started.class_id, room_id: room.room_id, name: 'Spin 18:00', started_at: started.started_at, planned_end: started.started_at + 45 * 60_000, ended_at: null, hidden: [] })

  a = await call(s.url, 'POST', `/admin/rooms/${room.room_id}/class`, { headers: admin, body: {} })
  t.same([a.status, a.json], [409, { error_code: 9409, error_message: 'conflict', detail: `a class is running in room ${room.room_id}` }])
  await t.rejects(cli(s, 'room', 'class', 'start', room.room_id), /HTTP 409/)
  a = await call(s.url, 'POST', '/admin/rooms/00000000-0000-0000-0000-000000000000/class', { headers: admin, body: {} })
  t.same([a.status, a.json.detail], [404, 'no room 00000000-0000-0000-0000-000000000000'])
  a = await call(s.url, 'POST', `/admin/rooms/${room.room_id}/class`, { headers: admin, body: { minutes: 0 } })
  t.same([a.status, a.json.error_code, a.json.detail], [400, 7013, 'body/minutes must be >= 1'])
  a = await call(s.url, 'POST', `/admin/rooms/${room.room_id}/class`, { body: {} })
  t.same([a.status, a.json.error_code], [403, 7009], 'the admin token is needed')

  a = await call(s.url, 'GET', `/admin/rooms/${room.room_id}/class`, { headers: admin })
  t.equal(a.status, 200)
  t.same(a.json, {
    class_id: started.class_id,
    room_id: room.room_id,
    name: 'Spin 18:00',
    started_at: started.started_at,
    planned_end: started.planned_end,
    ended_at: null,
    state: 'running',
    results_until: null,
    members: [{ profile_id: a.json.members[0]?.profile_id, display_name: 'Alice', effort_points: 0, zone_minutes: [0, 0, 0, 0, 0], max_heart_rate: 190, alert: false, hidden: false }]
  })

  const ended = JSON.parse(await cli(s, 'room', 'class', 'end', room.room_id, '--json'))
  t.same({ ...ended, ended_at: 0 }, { ...started, ended_at: 0 })
  t.ok(ended.ended_at >= started.started_at && ended.ended_at <= Date.now())
  a = await call(s.url, 'GET', `/admin/rooms/${room.room_id}/class`, { headers: admin })
  t.same([a.json.state, a.json.ended_at, a.json.results_until, a.json.members], ['results', ended.ended_at, ended.ended_at + 120_000, []], 'results for 120 s; nobody sent a reading')
  a = await call(s.url, 'POST', `/admin/rooms/${room.room_id}/class/end`, { headers: admin })
  t.same([a.status, a.json], [404, { error_code: 9404, error_message: 'not_found', detail: `no class is running in room ${room.room_id}` }])
  await t.rejects(cli(s, 'room', 'class', 'end', room.room_id), /HTTP 404/)

  // Default name and length; the human output.
  const text = await cli(s, 'room', 'class', 'start', room.room_id)
  t.match(text, /^class_id: [0-9a-f-]{36}\nname: Studio\nroom_id: [0-9a-f-]{36}\nstarted_at: \d{4}-\d\d-\d\dT[\d:.]+Z\nplanned_end: \d{4}-\d\d-\d\dT[\d:.]+Z\n$/)
  const r = await runMain(['admin', 'room', 'class', 'start', room.room_id, '--minutes', 'ten', '--data-dir', s.dataDir])
  t.equal(r.code, 2)
  t.match(r.stderr, /--minutes must be a whole number of minutes/)
})

t.test('room_class goes to the display stream, never to the member stream', async t => {
  const s = await startTestService(t)
  const alice = await s.user('alice')
  const room = await s.admin('POST', '/admin/rooms', { name: 'Studio' })
  await s.admin('POST', `/admin/rooms/${room.room_id}/members`, { username: 'alice', display_name: 'Alice' })
  const readToken = await s.token('alice', 'data:room:read')
  const member = `/api/v2/data/rooms/${room.room_id}/real_time`

  const r = await refused(wsUrl(s.url, `${member}?access_token=${readToken}&kinds=heart_rate,room_class`))
  t.same([r.status, r.body.error_code, r.body.detail], [400, 7013, 'unknown kind "room_class"; kinds are heart_rate, room_member_updated, room_member_removed, room_updated'])

  const all = await openWs(wsUrl(s.url, `${member}?access_token=${readToken}&kinds=heart_rate,room_member_updated,room_member_removed,room_updated`))
  const display = await openWs(wsUrl(s.url, `/rooms/${room.room_id}/stream?display_id=${room.display_id}&kinds=room_class,room_updated`))
  const plain = await openWs(wsUrl(s.url, `/rooms/${room.room_id}/stream?display_id=${room.display_id}&kinds=room_updated`))
  t.teardown(() => { all.ws.terminate(); display.ws.terminate(); plain.ws.terminate() })

  const started = await s.admin('POST', `/admin/rooms/${room.room_id}/class`, { name: 'HIIT', minutes: 30 })
  const msg = JSON.parse(await display.next())
  t.ok(Date.parse(msg.timestamp) >= started.started_at)
  t.same(msg, {
    kind: 'room_class',
    timestamp: msg.timestamp,
    room_class: {
      class_id: started.class_id,
      room_id: room.room_id,
      name: 'HIIT',
      started_at: started.started_at,
      planned_end: started.started_at + 30 * 60_000,
      ended_at: null,
      state: 'running',
      results_until: null,
      members: [{ profile_id: alice, display_name: 'Alice', effort_points: 0, zone_minutes: [0, 0, 0, 0, 0], max_heart_rate: 190, alert: false, hidden: false }]
    }
  })
  // The rename comes after the class start: the member stream and the display without room_class get it first.
  await s.admin('PATCH', `/admin/rooms/${room.room_id}`, { name: 'Studio 2' })
  t.equal(JSON.parse(await all.next()).kind, 'room_updated')
  t.equal(JSON.parse(await plain.next()).kind, 'room_updated')
  t.equal(JSON.parse(await display.next()).kind, 'room_updated')

  // A display that opens during the class starts from it.
  const late = await openWs(wsUrl(s.url, `/rooms/${room.room_id}/stream?display_id=${room.display_id}&kinds=room_class`))
  t.teardown(() => { late.ws.terminate() })
  t.same(JSON.parse(await late.next()).room_class, msg.room_class)

  await s.admin('POST', `/admin/rooms/${room.room_id}/class/end`)
  const results = JSON.parse(await display.next())
  t.same([results.kind, results.room_class.state, results.room_class.class_id], ['room_class', 'results', started.class_id])
  await s.admin('PATCH', `/admin/rooms/${room.room_id}`, { name: 'Studio 3' })
  t.equal(JSON.parse(await all.next()).room_updated.config.name, 'Studio 3', 'the member stream got nothing of the class')
})

t.test('GET /api/v1/classes: the member\'s summaries', async t => {
  const s = await startTestService(t)
  const alice = await s.user('alice', { max_heart_rate: 200 })
  await s.user('bob')
  const room = await s.admin('POST', '/admin/rooms', { name: 'Studio' })
  await s.admin('POST', `/admin/rooms/${room.room_id}/members`, { username: 'alice', display_name: 'Alice' })
  await s.admin('POST', `/admin/rooms/${room.room_id}/members`, { username: 'bob', display_name: 'Bob' })
  const write = await s.token('alice', 'data:heart_rate:write')
  const read = await s.token('alice', 'data:heart_rate:read')
  const started = await s.admin('POST', `/admin/rooms/${room.room_id}/class`, { name: 'Spin', minutes: 20 })
  for (const [dt, bpm] of [[0, 120], [1, 130]] as const) {
    const w = await call(s.url, 'POST', '/api/v1/data', { token: write, body: { measured_at: started.started_at + dt, data: { heart_rate: bpm } } })
    t.equal(w.status, 200)
  }
  // Both readings are in the class: it ends after them (a few ms of the wall clock).
  while (Date.now() <= started.started_at + 1) await new Promise(resolve => setImmediate(resolve))
  const ended = await s.admin('POST', `/admin/rooms/${room.room_id}/class/end`)
  const range = `from=${started.started_at}&to=${started.started_at + 1}`

  const a = await call(s.url, 'GET', `/api/v1/classes?${range}`, { token: read })
  t.equal(a.status, 200)
  t.same(a.json, {
    classes: [{
      class_id: started.class_id,
      room_id: room.room_id,
      name: 'Spin',
      started_at: started.started_at,
      ended_at: ended.ended_at,
      duration_s: Math.round((ended.ended_at - started.started_at) / 1000),
      avg_bpm: 125,
      max_bpm: 130,
      zones_s: [0, 0, 0, 0, 0], // 1 ms of streamed time rounds to 0 s
      calories_kcal: a.json.classes[0]?.calories_kcal,
      effort_points: 0, // no minute of the class was complete
      rank: 1,
      ranked: 1,
      max_heart_rate: 200
    }]
  })
  t.equal(typeof a.json.classes[0]?.calories_kcal, 'number')
  // Bob sent nothing: no summary. A range before the class: none.
  t.same((await call(s.url, 'GET', `/api/v1/classes?${range}`, { token: await s.token('bob', 'data:heart_rate:read') })).json, { classes: [] })
  t.same((await call(s.url, 'GET', `/api/v1/classes?from=${started.started_at - 60_000}&to=${started.started_at}`, { token: read })).json.classes, [])
  t.same((await call(s.url, 'GET', `/api/v1/classes?from=${started.started_at - 86_400_000}&to=${started.started_at + 86_400_000}`, { token: read })).json.classes.length, 1)

  let e = await call(s.url, 'GET', `/api/v1/classes?${range}`, { token: write })
  t.same([e.status, e.json], [400, { error_code: 7011, error_message: 'error_invalid_scope' }])
  e = await call(s.url, 'GET', '/api/v1/classes', { token: read })
  t.same([e.status, e.json.error_code], [400, 7013])
  e = await call(s.url, 'GET', '/api/v1/classes?from=5&to=4', { token: read })
  t.same([e.status, e.json.error_code], [400, 7013])
  e = await call(s.url, 'GET', `/api/v1/classes?${range}`)
  t.same([e.status, e.json], [403, { error_code: 7009, error_message: 'error_authorization_header_is_not_present' }])
  t.match(alice, UUID)
})
