// The audit log (issue 41 §5), over real sockets: each kind of change through the
// admin API is one entry with who, what, which object, from where and the
// result (a refused change too); no entry holds a password, token, client secret
// or heart rate; `hr-relay admin audit list [--since T]`; nothing changes an
// entry, except a member's erasure, which replaces their username and profile id
// by one digest in every entry, the deletion's own included; every route that
// changes something is in the action table.
import t from 'tap'
import { startTestService } from '../../helpers/service.ts'
import { startRecording } from '../../helpers/routes.ts'
import { call } from '../http/fetch.ts'
import { runCli } from '../../helpers/cli.ts'
import { ACTIONS } from '../../../api/audit/capture.ts'
import { auditLogOf, erasedDigest } from '../../../api/audit/log.ts'

interface Entry { at: number, actor: string, action: string, object: { kind: string, id: string | null }, ip: string, result: string, status: number }

t.test('each kind of change is one entry; no secret is in the log; an erasure leaves a digest in every entry of the member', async t => {
  const s = await startTestService(t)
  const t0 = Date.now()
  const alice = await s.user('alice')
  const bob = await s.user('zqauditbob3f81')
  await s.admin('PUT', '/admin/users/zqauditbob3f81/consent', {})
  await s.admin('DELETE', '/admin/users/zqauditbob3f81/consent')
  const missing = await call(s.url, 'PUT', '/admin/users/nobody/consent', { token: s.adminToken, body: {} })
  t.equal(missing.status, 404)
  const token = await s.token('zqauditbob3f81', 'data:heart_rate:read data:heart_rate:write')
  const client = await s.client(['https://app.example/cb'])
  const device = await s.admin('POST', '/admin/devices', { device_id: 'esp-audit', username: 'zqauditbob3f81', kind: 'mqtt' })
  const room = await s.admin('POST', '/admin/rooms', { name: 'Spin' })
  await s.admin('POST', `/admin/rooms/${room.room_id}/members`, { username: 'zqauditbob3f81' })
  await s.admin('POST', `/admin/rooms/${room.room_id}/display`, {})
  t.equal((await call(s.url, 'POST', '/api/v1/data', { token, body: { measured_at: Date.now() - 1000, data: { heart_rate: 173 } } })).status, 200)
  const exported = await fetch(`${s.url}/admin/users/zqauditbob3f81/export`, { headers: { authorization: `Bearer ${s.adminToken}` } })
  t.equal(exported.status, 200)
  await exported.arrayBuffer()
  await s.admin('DELETE', '/admin/devices/esp-audit')
  const integration = await call(s.url, 'POST', '/admin/integrations', { token: s.adminToken, body: { name: 'home-assistant' } })
  t.equal(integration.status, 409, 'Home Assistant is off: refused')
  await s.admin('POST', '/admin/operators', { name: 'coachcarla', role: 'coach', password: 'coach-password-1' })

  const cli = await runCli(['admin', 'audit', 'list', '--json', '--data-dir', s.dataDir])
  t.equal(cli.code, 0, cli.stderr)
  const before = (JSON.parse(cli.stdout) as { entries: Entry[] }).entries.reverse()
  t.same(before.map(e => [e.action, e.object.kind, e.object.id, e.result, e.status]), [
    ['user.create', 'user', 'alice', 'ok', 201],
    ['user.create', 'user', 'zqauditbob3f81', 'ok', 201],
    ['user.consent.record', 'user', 'zqauditbob3f81', 'ok', 200],
    ['user.consent.withdraw', 'user', 'zqauditbob3f81', 'ok', 200],
    ['user.consent.record', 'user', 'nobody', 'refused', 404],
    ['token.issue', 'user', 'zqauditbob3f81', 'ok', 201],
    ['client.create', 'client', 'Test App', 'ok', 201],
    ['device.pair', 'device', 'esp-audit', 'ok', 201],
    ['room.create', 'room', 'Spin', 'ok', 201],
    ['room.member.add', 'room', room.room_id, 'ok', 200],
    ['room.display.rotate', 'room', room.room_id, 'ok', 200],
    ['user.export', 'user', 'zqauditbob3f81', 'ok', 200],
    ['device.unpair', 'device', 'esp-audit', 'ok', 200],
    ['integration.add', 'integration', 'home-assistant', 'refused', 409],
    ['operator.add', 'operator', 'coachcarla', 'ok', 201]
  ])
  t.ok(before.every(e => e.actor === 'admin token' && e.ip === '127.0.0.1' && e.at >= t0 && e.at <= Date.now()), 'who, from where, when')
  const logged = JSON.stringify(await auditLogOf(s.service.services.store).list())
  for (const secret of [token, client.client_secret ?? 'none', device.mqtt_password, 'password123', 'coach-password-1', s.adminToken]) t.notOk(logged.includes(secret), 'no secret in the log')
  t.notOk(/173|heart_rate/.test(logged.replace(/"at":\d+/g, '')), 'no heart rate in the log')

  // Erasure: the one change an entry gets.
  await s.admin('DELETE', '/admin/users/zqauditbob3f81')
  const after = (await auditLogOf(s.service.services.store).list()).reverse()
  t.equal(after.length, before.length + 1, 'no entry removed; the deletion added')
  const digest = erasedDigest(bob)
  const text = JSON.stringify(after)
  t.notOk(text.includes('zqauditbob3f81') || text.includes(bob), 'neither the username nor the profile id is in any entry')
  t.same(after.map(e => e.object.id), [...before.map(e => e.object.id === 'zqauditbob3f81' ? digest : e.object.id), digest], 'the member\'s entries name the digest, the deletion too')
  t.same(after.at(-1), { ...after.at(-1), action: 'user.delete', actor: 'admin token', result: 'ok', status: 200 })
  t.equal(after[0]!.object.id, 'alice', 'other entries are untouched')
  t.not(alice, bob)
})

t.test('--since lists the entries from a time on; no interface changes an entry', async t => {
  const s = await startTestService(t)
  await s.user('first')
  const entries = await s.admin('GET', '/admin/audit')
  const cut = (entries.entries[0] as Entry).at + 1
  await s.user('second')
  const since = await runCli(['admin', 'audit', 'list', '--since', new Date(cut).toISOString(), '--data-dir', s.dataDir])
  t.equal(since.code, 0, since.stderr)
  t.match(since.stdout, /^\d{4}-\d\d-\d\dT[\d:.]+Z\tadmin token\tuser\.create\tuser second\t127\.0\.0\.1\tok 201\n$/)
  const bad = await call(s.url, 'GET', '/admin/audit?since=yesterday', { token: s.adminToken })
  t.same([bad.status, bad.json.error_code], [400, 7013])
  for (const method of ['PUT', 'PATCH', 'DELETE', 'POST']) {
    const r = await call(s.url, method, '/admin/audit', { token: s.adminToken, body: {} })
    t.ok(r.status === 404 || r.status === 405, `${method} /admin/audit is not a route (${r.status})`)
  }
  t.equal((await s.admin('GET', '/admin/audit')).entries.length, 2, 'the refused attempts to change it are not changes')
  t.equal(typeof (auditLogOf(s.service.services.store) as unknown as Record<string, unknown>).update, 'undefined', 'the store module has no update')
})

t.test('every route of the admin API and the operator pages that changes something is in the action table', async t => {
  const { routes } = await startRecording(t)
  const changing = routes.filter(r => !['GET', 'HEAD', 'OPTIONS'].includes(r.method) && (r.url.startsWith('/admin/') || r.url.startsWith('/operator/')))
  t.ok(changing.length >= 25, `${changing.length} routes`)
  t.same(changing.filter(r => ACTIONS[`${r.method} ${r.url}`] === undefined), [], 'none is missing from ACTIONS')
  const known = new Set(routes.map(r => `${r.method} ${r.url}`))
  t.same(Object.keys(ACTIONS).filter(k => !known.has(k)), [], 'ACTIONS names only routes the server has')
})
