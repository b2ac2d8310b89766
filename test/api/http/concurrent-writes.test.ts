// No lost updates: concurrent writers of one aggregate (a room, a user's
// widgets, a user's features, device pairings, game-mod) over the real API.
// Every request is answered, and what is stored is the sum of what was
// acknowledged, counted exactly. The store serialises each read-modify-write
// per aggregate (api/store/lock.ts).
import t from 'tap'
import { startTestService } from '../../helpers/service.ts'
import { call } from './fetch.ts'
import { BASIC_WIDGET_META_ID, MAX_WIDGETS_PER_USER } from '../../../api/store/widgets.ts'

const N = 20

t.test('20 concurrent POST /admin/rooms/{id}/members: 20 answers 200, 20 members stored', async t => {
  const s = await startTestService(t)
  const names = Array.from({ length: N }, (_, i) => `member${i}`)
  for (const name of names) await s.user(name)
  const room = await s.admin('POST', '/admin/rooms', { name: 'Spin' })
  const answers = await Promise.all(names.map(async username =>
    await call(s.url, 'POST', `/admin/rooms/${room.room_id}/members`, { token: s.adminToken, body: { username } })))
  t.same(answers.map(a => a.status), names.map(() => 200))
  const stored = await s.admin('GET', `/admin/rooms/${room.room_id}`)
  t.equal(stored.members.length, N, 'every acknowledged member is stored')
  t.same(stored.members.map((m: { username: string }) => m.username).sort(), [...names].sort())
  // Removing them concurrently leaves none behind either.
  const removed = await Promise.all(names.map(async username =>
    await call(s.url, 'DELETE', `/admin/rooms/${room.room_id}/members/${username}`, { token: s.adminToken })))
  t.same(removed.map(a => a.status), names.map(() => 200))
  t.same((await s.admin('GET', `/admin/rooms/${room.room_id}`)).members, [])
})

t.test('20 concurrent feature grants for one user: all 20 stored', async t => {
  const s = await startTestService(t)
  await s.user('alice')
  const features = Array.from({ length: N }, (_, i) => `feature_${i}`)
  const answers = await Promise.all(features.map(async feature_id =>
    await call(s.url, 'POST', '/admin/users/alice/features', { token: s.adminToken, body: { feature_id } })))
  t.same(answers.map(a => a.status), features.map(() => 200))
  const users = await s.admin('GET', '/admin/users')
  const alice = users.users.find((u: { username: string }) => u.username === 'alice')
  t.same([...alice.features].sort(), [...features].sort())
})

t.test('concurrent widget creates stop at the limit; an update concurrent with a delete does not bring the widget back', async t => {
  const s = await startTestService(t)
  const profile = await s.user('alice')
  const token = await s.token('alice', 'widgets:read widgets:update')
  const widgets = s.service.services.widgets
  const existing = MAX_WIDGETS_PER_USER - 5
  for (let i = 0; i < existing; i++) await widgets.create(profile, { meta_id: BASIC_WIDGET_META_ID, name: `w${i}`, configuration: {} })
  const creates = await Promise.all(Array.from({ length: N }, async (_, i) =>
    await call(s.url, 'POST', '/api/v1/widgets', { token, body: { meta_id: BASIC_WIDGET_META_ID, name: `new${i}`, configuration: {} } })))
  t.equal(creates.filter(a => a.status === 200).length, 5, 'exactly the five that fit')
  t.equal(creates.filter(a => a.status === 409).length, N - 5)
  t.equal((await widgets.list(profile)).length, MAX_WIDGETS_PER_USER)

  const victims = (await widgets.list(profile)).slice(0, 10)
  const answers = await Promise.all(victims.flatMap(w => [
    call(s.url, 'POST', `/api/v1/widgets/${w.id}`, { token, body: { configuration: { color: 'red' }, name: 'renamed' } }),
    call(s.url, 'DELETE', `/api/v1/widgets/${w.id}`, { token })
  ]))
  t.same(answers.filter((_, i) => i % 2 === 1).map(a => a.status), victims.map(() => 200), 'every delete succeeds')
  for (const w of victims) t.equal(await widgets.get(w.id), undefined, `widget ${w.id} stays deleted`)
  t.equal((await widgets.list(profile)).length, MAX_WIDGETS_PER_USER - victims.length)

  // Concurrent updates of one widget: each answer is its own write, and the stored one is one of them, whole.
  const [target] = await widgets.list(profile)
  if (target === undefined) throw new Error('no widget left')
  const updates = await Promise.all(Array.from({ length: N }, async (_, i) =>
    await call(s.url, 'POST', `/api/v1/widgets/${target.id}`, { token, body: { configuration: { n: i }, name: `name${i}` } })))
  t.same(updates.map(a => a.status), updates.map(() => 200))
  t.same(updates.map(a => a.json.widget.configuration), Array.from({ length: N }, (_, i) => ({ n: i })))
  const final = await widgets.get(target.id)
  t.ok(final !== undefined && final.name === `name${(final.configuration as { n: number }).n}`, 'name and configuration come from the same write')
})

t.test('20 concurrent device pairings for one user: 20 stored; 5 concurrent pairings of one id: exactly one wins', async t => {
  const s = await startTestService(t)
  const profile = await s.user('alice')
  const ids = Array.from({ length: N }, (_, i) => `bike-${i}`)
  const answers = await Promise.all(ids.map(async device_id =>
    await call(s.url, 'POST', '/admin/devices', { token: s.adminToken, body: { device_id, username: 'alice', kind: 'mqtt' } })))
  t.same(answers.map(a => a.status), ids.map(() => 201))
  const listed = await s.admin('GET', '/admin/devices')
  t.same(listed.devices.filter((d: { profile_id: string }) => d.profile_id === profile).map((d: { device_id: string }) => d.device_id).sort(), [...ids].sort())

  const same = await Promise.all(Array.from({ length: 5 }, async () =>
    await call(s.url, 'POST', '/admin/devices', { token: s.adminToken, body: { device_id: 'C8:2F:9A:11:22:33', username: 'alice', kind: 'ble' } })))
  t.same(same.map(a => a.status).sort(), [201, 409, 409, 409, 409])
})

t.test('20 concurrent game-mod writes: each answered with its own object, one of them stored whole', async t => {
  const s = await startTestService(t)
  await s.user('alice')
  const token = await s.token('alice', 'game_mod:configuration:read game_mod:configuration:write')
  const configs = Array.from({ length: N }, (_, i) => ({ death_bpm: 100 + i, scale: i, position: `p${i}` }))
  const answers = await Promise.all(configs.map(async configuration =>
    await call(s.url, 'POST', '/api/v1/game-mod/configuration', { token, body: { configuration } })))
  t.same(answers.map(a => a.status), configs.map(() => 200))
  t.same(answers.map(a => a.json.configuration.death_bpm), configs.map(c => c.death_bpm))
  const stored = (await call(s.url, 'GET', '/api/v1/game-mod/configuration', { token })).json.configuration
  const i = stored.scale as number
  t.same({ death_bpm: stored.death_bpm, scale: stored.scale, position: stored.position }, configs[i], 'the stored object is one write, not a mix')
})
