// A member's erasure (issue 41 §2), over real sockets: `hr-relay admin user
// delete` removes every trace and answers what went, counted by kind; then no
// file under the data directory holds the member's profile id or username (every
// file read as bytes, in UTF-8, UTF-16 and hex); their open streams close with
// 1008 within 1 s (real-time, a room stream, an MQTT app connection) and a room
// stream hears room_member_removed; other members are untouched; the username
// can be created again as a new profile with nothing of the old one.
import t from 'tap'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import mqtt, { type MqttClient } from 'mqtt'
import { startTestService, type TestService } from '../../helpers/service.ts'
import { rewriteStore } from '../../../api/store/rewrite.ts'
import { call, openWs, wsUrl } from '../http/fetch.ts'
import { runCli } from '../../helpers/cli.ts'
import { filesContaining } from '../../helpers/files-scan.ts'

// Names and values unlikely to occur by chance in any file.
const NAME = 'zqerase7c1e5b2a9d'
const SCOPES = 'data:heart_rate:read data:heart_rate:write data:room:read widgets:read widgets:update game_mod:configuration:write'

/** The close event of a stream, or a failure after a generous bound. */
async function closeOf (c: { closed: Promise<{ code: number, reason: string }> }, ms = 20_000): Promise<{ code: number, reason: string }> {
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<never>((_resolve, reject) => { timer = setTimeout(() => { reject(new Error(`the stream stayed open for ${ms} ms`)) }, ms) })
  try { return await Promise.race([c.closed, late]) } finally { clearTimeout(timer) }
}

async function mqttPort (s: TestService): Promise<number> {
  return (JSON.parse(await readFile(join(s.dataDir, 'server.json'), 'utf8')) as { mqtt_port: number }).mqtt_port
}

async function mqttConnect (port: number, username: string, password: string): Promise<MqttClient> {
  const c = mqtt.connect(`mqtt://127.0.0.1:${port}`, { username, password, reconnectPeriod: 0, protocolVersion: 4 })
  await new Promise<void>((resolve, reject) => { c.once('connect', () => { resolve() }); c.once('error', reject) })
  return c
}

/** A member with something of every kind: readings with RR, a widget, game-mod and rich-presence settings, a device, a room, consent, tokens. */
async function fullMember (s: TestService, username: string, roomId: string, base: number): Promise<{ profileId: string, token: string }> {
  const profileId = await s.user(username, { display_name: `${username} display` })
  await s.admin('PUT', `/admin/users/${username}/consent`, {})
  const token = await s.token(username, SCOPES)
  await s.admin('POST', '/admin/devices', { device_id: `dev-${username}`, username, kind: 'mqtt' })
  await s.admin('POST', `/admin/rooms/${roomId}/members`, { username })
  for (let i = 0; i < 20; i++) {
    const r = await s.service.services.pipeline.submit({ profile_id: profileId, measured_at: base + i * 1000, heart_rate: 100 + i, source: 'ble', rr_intervals_ms: [600 + i] })
    if (r.status !== 'stored') throw new Error(`reading ${i} not stored: ${JSON.stringify(r)}`)
  }
  const widget = await call(s.url, 'POST', '/api/v1/widgets', { token, body: { configuration: { heartColor: '#ff0000' }, name: `${username} widget`, meta_id: 'bf6bdf21-10a7-4a28-97ec-a239e6c77f8b' } })
  if (widget.status !== 200) throw new Error(`widget: ${widget.status}`)
  const gm = await call(s.url, 'POST', '/api/v1/game-mod/configuration', { token, body: { configuration: { position: `${username} corner`, death_bpm: 180 } } })
  if (gm.status >= 300) throw new Error(`game-mod: ${gm.status} ${JSON.stringify(gm.json)}`)
  return { profileId, token }
}

t.test('admin user delete: every trace goes, counted by kind; no file under the data directory holds the member', async t => {
  const s = await startTestService(t, { privacy: { require_consent: true, notice_version: '1' } })
  const room = await s.admin('POST', '/admin/rooms', { name: 'Spin' })
  const base = Math.floor((Date.now() - 3_600_000) / 1000) * 1000
  const gone = await fullMember(s, NAME, room.room_id, base)
  const kept = await fullMember(s, 'keptmember', room.room_id, base)

  const cli = await runCli(['admin', 'user', 'delete', NAME, '--json', '--data-dir', s.dataDir])
  t.equal(cli.code, 0, cli.stderr)
  const answer = JSON.parse(cli.stdout)
  t.equal(answer.username, NAME)
  t.match(answer.erased, { account: 1, readings: 20, latest: 1, consents: 1, widgets: 1, game_mod: 1, devices: 1, rooms: 1, tokens: 1, upstream_queue: 0 })
  t.ok(answer.erased.minute_rollups >= 1 && answer.erased.hour_rollups >= 1, 'rollups counted')

  t.same(await filesContaining(s.dataDir, [NAME, gone.profileId]), [], 'no file holds the username or the profile id')
  t.not((await filesContaining(s.dataDir, ['keptmember', kept.profileId])).length, 0, 'the other member is still on disk (the scan finds what is there)')

  t.equal((await call(s.url, 'GET', '/api/v1/data/heart_rate/latest', { token: gone.token })).status, 401, 'their token is gone')
  const keptLatest = await call(s.url, 'GET', '/api/v1/data/heart_rate/latest', { token: kept.token })
  t.same([keptLatest.status, keptLatest.json.data?.heart_rate], [200, 119], 'the other member reads their latest reading')
  t.same((await s.admin('GET', `/admin/rooms/${room.room_id}`)).members.map((m: { username?: string, profile_id: string }) => m.profile_id), [kept.profileId], 'the room keeps the other member only')
  const devices = await s.admin('GET', '/admin/devices')
  t.same((Array.isArray(devices) ? devices : devices.devices).map((d: { device_id: string }) => d.device_id), ['dev-keptmember'], 'the other member\'s device only')

  const again = await runCli(['admin', 'user', 'delete', NAME, '--data-dir', s.dataDir])
  t.equal(again.code, 1, 'an unknown member')
  t.match(again.stderr, /404|no user/)

  // The username again: a new profile, with nothing of the old one.
  const fresh = await s.user(NAME)
  t.not(fresh, gone.profileId)
  const token = await s.token(NAME, SCOPES)
  t.equal((await call(s.url, 'GET', '/api/v1/data/heart_rate/latest', { token })).status, 412, 'no reading')
  const history = await call(s.url, 'GET', `/api/v1/data/heart_rate/history?from=${base - 1000}&to=${Date.now()}`, { token })
  t.equal(history.status, 200)
  t.same(history.json.data ?? history.json, [], 'no history')
  t.same((await call(s.url, 'GET', '/api/v1/widgets', { token })).json, { widgets: [] }, 'no widget')
  t.equal((await s.admin('GET', `/admin/rooms/${room.room_id}`)).members.length, 1, 'not in the room')
  const human = await runCli(['admin', 'user', 'delete', NAME, '--data-dir', s.dataDir])
  t.equal(human.code, 0, human.stderr)
  t.match(human.stdout, new RegExp(`^erased ${NAME}: 1 account, 1 tokens\\n`))
})

t.test('erasure closes the member\'s streams with 1008 within 1 s; a room stream hears room_member_removed', async t => {
  const s = await startTestService(t)
  const room = await s.admin('POST', '/admin/rooms', { name: 'Row' })
  const pid = await s.user(NAME)
  await s.user('viewer')
  await s.admin('POST', `/admin/rooms/${room.room_id}/members`, { username: NAME })
  await s.admin('POST', `/admin/rooms/${room.room_id}/members`, { username: 'viewer' })
  const token = await s.token(NAME, SCOPES)
  const viewerToken = await s.token('viewer', 'data:room:read')
  const realtime = await openWs(wsUrl(s.url, `/api/v1/data/real_time?access_token=${token}`))
  const roomStream = await openWs(wsUrl(s.url, `/api/v2/data/rooms/${room.room_id}/real_time?access_token=${token}`))
  const watcher = await openWs(wsUrl(s.url, `/api/v2/data/rooms/${room.room_id}/real_time?access_token=${viewerToken}&kinds=room_member_removed`))
  const app = await mqttConnect(await mqttPort(s), 'app', token)
  t.teardown(() => { for (const c of [realtime, roomStream, watcher]) c.ws.terminate(); app.end(true) })
  const appClosed = new Promise<number>(resolve => { app.once('close', () => { resolve(Date.now()) }) })

  const t0 = Date.now()
  const deleted = await call(s.url, 'DELETE', `/admin/users/${NAME}`, { token: s.adminToken })
  t.equal(deleted.status, 200)
  t.same([await closeOf(realtime), await closeOf(roomStream)], [{ code: 1008, reason: 'token revoked' }, { code: 1008, reason: 'token revoked' }])
  const closedAt = Date.now()
  t.ok(closedAt - t0 < 1000, `the streams closed within 1 s (${closedAt - t0} ms)`)
  t.ok(await appClosed - t0 < 1000, 'the MQTT app connection closed within 1 s')
  const removed = JSON.parse(await watcher.next())
  t.same(removed.room_member_removed, { profile_id: pid }, 'the display hears the tile go')
  t.equal(watcher.ws.readyState, watcher.ws.OPEN, 'another member\'s stream stays open')
  t.equal(deleted.json.erased.tokens, 1)
})

t.test('a reading on its way during the erasure is refused, never stored after it', async t => {
  const s = await startTestService(t)
  const pid = await s.user(NAME)
  const base = Date.now() - 60_000
  const pipeline = s.service.services.pipeline
  // Readings submitted in the same turn as the erasure: each is stored before it (and erased) or refused.
  const submitted = Array.from({ length: 50 }, (_, i) => pipeline.submit({ profile_id: pid, measured_at: base + i * 100, heart_rate: 90, source: 'ble' }))
  const deleted = call(s.url, 'DELETE', `/admin/users/${NAME}`, { token: s.adminToken })
  const later = Array.from({ length: 50 }, (_, i) => pipeline.submit({ profile_id: pid, measured_at: base + 10_000 + i * 100, heart_rate: 91, source: 'ble' }))
  const results = await Promise.all([...submitted, ...later])
  t.equal((await deleted).status, 200)
  t.ok(results.every(r => r.status === 'stored' || (r.status === 'dropped' && r.reason === 'unknown_profile')), 'stored or refused')
  const after = await pipeline.submit({ profile_id: pid, measured_at: base + 20_000, heart_rate: 92, source: 'ble' })
  t.same(after, { status: 'dropped', reason: 'unknown_profile' })
  t.same(await filesContaining(s.dataDir, [pid]), [], 'nothing of theirs on disk')
})

t.test('readings that arrive while the store is rewritten get their answer, none fails on the closed database', async t => {
  const s = await startTestService(t)
  const pid = await s.user('stayswhilerewritten')
  const pipeline = s.service.services.pipeline
  const base = Date.now() - 600_000
  let n = 0
  let rewriting = true
  const results: Array<Promise<string>> = []
  // One reading per turn of the event loop for as long as the rewrite runs (it closes the database while it
  // swaps it): a member's (known to the pipeline, no store read) and a profile id nobody has (read each time).
  // The readings' caches are emptied each turn, so that planning each group reads the member's latest reading
  // from the store too (as after an erasure, which resets them).
  const feed = (async () => {
    while (rewriting) {
      s.service.services.readings.resetCaches()
      results.push(pipeline.submit({ profile_id: pid, measured_at: base + n, heart_rate: 70, source: 'http' }).then(r => r.status, (err: Error) => `failed: ${err.message}`))
      results.push(pipeline.submit({ profile_id: `nobody-${n}`, measured_at: base + n, heart_rate: 70, source: 'http' }).then(r => r.status === 'dropped' ? r.reason : r.status, (err: Error) => `failed: ${err.message}`))
      n++
      await new Promise(resolve => setImmediate(resolve))
    }
  })()
  await rewriteStore(s.service.services.store)
  rewriting = false
  await feed
  const statuses = await Promise.all(results)
  t.ok(statuses.length > 20, `${statuses.length} readings arrived during the rewrite`)
  const counts: Record<string, number> = {}
  for (const x of statuses) counts[x] = (counts[x] ?? 0) + 1
  t.same(counts, { stored: statuses.length / 2, unknown_profile: statuses.length / 2 }, 'each stored or refused as unknown, none failed')
  t.equal((await s.service.services.readings.latest(pid))?.measured_at, base + n - 1, 'the last one is the latest')
})

t.test('a reading whose group is planned while the rewrite has the database closed is stored once it reopens', async t => {
  const s = await startTestService(t)
  const pid = await s.user('plannedwhileclosed')
  const { pipeline, readings, store } = s.service.services
  const at = Date.now() - 60_000
  t.equal((await pipeline.submit({ profile_id: pid, measured_at: at - 1000, heart_rate: 70, source: 'http' })).status, 'stored')
  const rewriting = rewriteStore(store)
  // Waits, turn by turn, for the moment the rewrite has closed the database to swap it.
  let closedSeen = false
  let done = false
  void rewriting.finally(() => { done = true })
  while (!done && !(closedSeen = store.db.status === 'closed' || store.db.status === 'closing')) await new Promise(resolve => setImmediate(resolve))
  t.ok(closedSeen, 'the database was seen closed during the rewrite')
  // No group in flight and nothing cached: planning this reading's group reads its member's latest from the store.
  readings.resetCaches()
  const answer = pipeline.submit({ profile_id: pid, measured_at: at, heart_rate: 71, source: 'http' }).then(r => r.status, (err: Error) => `failed: ${err.message}`)
  await rewriting
  t.equal(await answer, 'stored')
  t.equal((await readings.latest(pid))?.measured_at, at)
})
