// A member's data export (issue 41 §3): `hr-relay admin user export` writes one
// ZIP, read back here with readers the product does not use (yauzl for the
// ZIP, fit-file-parser for the FIT files). Its rows equal what the API answers:
// readings.csv against the history route, the FIT sessions against the
// sessions route, configuration.json against the widget and game-mod routes.
// profile.json holds no password hash; another member's data is not in it.
import t from 'tap'
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { unzip } from '../../helpers/zip.ts'
import FitParser from 'fit-file-parser'
import { startTestService } from '../../helpers/service.ts'
import { call } from '../http/fetch.ts'
import { runCli } from '../../helpers/cli.ts'
import type { Reading } from '../../../api/pipeline/reading.ts'

t.test('hr-relay admin user export: one ZIP whose contents equal what the API answers', async t => {
  const s = await startTestService(t, { privacy: { require_consent: true, notice_version: '4' } })
  const alice = await s.user('alice', { age: 30, weight_kg: 70, sex: 'female', display_name: 'Alice A.' })
  const bob = await s.user('bob')
  await s.admin('PUT', '/admin/users/alice/consent', {})
  await s.admin('PUT', '/admin/users/bob/consent', {})
  const token = await s.token('alice', 'data:heart_rate:read data:heart_rate:write widgets:update widgets:read')
  await s.admin('POST', '/admin/devices', { device_id: 'esp-a', username: 'alice', kind: 'mqtt' })

  // Two sessions (a 10-minute gap between them), RR on every other reading; one reading of bob's.
  const base = Math.floor((Date.now() - 86_400_000) / 1000) * 1000
  const base2 = base + 30_000 + 601_000
  const readings: Reading[] = []
  for (let i = 0; i < 30; i++) readings.push({ profile_id: alice, measured_at: base + i * 1000, heart_rate: 90 + i, source: 'ble', ...(i % 2 === 0 ? { rr_intervals_ms: [650 + i, 640 + i] } : {}) })
  for (let i = 0; i < 10; i++) readings.push({ profile_id: alice, measured_at: base2 + i * 1000, heart_rate: 140, source: 'mqtt' })
  readings.push({ profile_id: bob, measured_at: base + 500, heart_rate: 177, source: 'http' })
  for (const r of readings) t.equal((await s.service.services.pipeline.submit(r)).status, 'stored')
  const widget = await call(s.url, 'POST', '/api/v1/widgets', { token, body: { configuration: { heartColor: '#ff0000' }, name: 'OBS', meta_id: 'bf6bdf21-10a7-4a28-97ec-a239e6c77f8b' } })

  const dir = await mkdtemp(join(tmpdir(), 'hr-relay-export-'))
  t.teardown(async () => { await rm(dir, { recursive: true, force: true }) })
  const file = join(dir, 'alice.zip')
  const cli = await runCli(['admin', 'user', 'export', 'alice', '--out', file, '--data-dir', s.dataDir])
  t.equal(cli.code, 0, cli.stderr)
  t.match(cli.stdout, new RegExp(`^wrote ${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} \\(\\d+ bytes\\)`))
  t.equal((await stat(file)).mode & 0o777, 0o600, 'readable by the operator only')
  await t.rejects(stat(`${file}.partial`), { code: 'ENOENT' }, 'no partial file left')

  const entries = await unzip(file)
  const sessions = await call(s.url, 'GET', `/api/v1/data/sessions?from=${base - 1}&to=${Date.now()}`, { token })
  t.equal(sessions.status, 200)
  const ids: string[] = sessions.json.sessions.map((x: { id: string }) => x.id)
  t.equal(ids.length, 2, 'two sessions')
  t.same([...entries.keys()].sort(), ['apps.json', 'classes.json', 'configuration.json', 'consents.json', 'profile.json', 'readings.csv', ...ids.map(id => `sessions/${id}.fit`)].sort())

  const profile = JSON.parse(entries.get('profile.json')!.toString('utf8'))
  t.match(profile, { profile_id: alice, username: 'alice', display_name: 'Alice A.', age: 30, weight_kg: 70, sex: 'female' })
  t.same(profile.devices, [{ device_id: 'esp-a', kind: 'mqtt' }])
  t.notOk('password_hash' in profile, 'no password hash')

  // readings.csv against the history route, row for row.
  const history = await call(s.url, 'GET', `/api/v1/data/heart_rate/history?from=${base}&to=${base2 + 10_000}&limit=1000`, { token })
  const csv = entries.get('readings.csv')!.toString('utf8').trimEnd().split('\n')
  t.equal(csv[0], 'measured_at,heart_rate,rr_intervals_ms,source,device_id')
  t.same(csv.slice(1).map(line => { const [at, hr, rr] = line.split(','); return { measured_at: Number(at), heart_rate: Number(hr), ...(rr === '' ? {} : { rr_intervals_ms: rr!.split(';').map(Number) }) } }), history.json.data, 'every reading, as the history route answers it')
  t.same(csv.slice(1).map(line => line.split(',')[3]), [...Array(30).fill('ble'), ...Array(10).fill('mqtt')], 'the source of each')
  // bob's reading (177 bpm at base + 500) as whole fields, not as digits inside a timestamp.
  t.notOk(csv.some(line => { const [at, hr] = line.split(','); return Number(at) === base + 500 || hr === '177' }), 'nothing of bob\'s')

  // Each session's FIT file, decoded by fit-file-parser: its records are the session's readings.
  for (const [k, id] of ids.entries()) {
    const fit = entries.get(`sessions/${id}.fit`)!
    const parsed = await new FitParser({ mode: 'list' }).parseAsync(new Uint8Array(fit).buffer) as unknown as { records: Array<{ timestamp: string, heart_rate: number }> }
    const expected = k === 0 ? Array.from({ length: 30 }, (_v, i) => [base + i * 1000, 90 + i]) : Array.from({ length: 10 }, (_v, i) => [base2 + i * 1000, 140])
    t.same(parsed.records.map(r => [new Date(r.timestamp).getTime(), r.heart_rate]), expected, `session ${k + 1}: its readings`)
  }

  const configuration = JSON.parse(entries.get('configuration.json')!.toString('utf8'))
  const widgets = await call(s.url, 'GET', '/api/v1/widgets', { token })
  t.same(configuration.widgets.map((w: any) => [w.id, w.name, w.configuration]), widgets.json.widgets.map((w: any) => [w.id, w.name, w.configuration]))
  t.equal(widget.json.widget.id, configuration.widgets[0].id)
  t.ok('game_mod' in configuration && 'rich_presence' in configuration)

  const consents = JSON.parse(entries.get('consents.json')!.toString('utf8'))
  t.match(consents, [{ version: '4', how: 'operator' }])
  const apps = JSON.parse(entries.get('apps.json')!.toString('utf8'))
  t.equal(apps.length, 1)
  t.match(apps[0], { scopes: ['data:heart_rate:read', 'data:heart_rate:write', 'widgets:read', 'widgets:update'] })
  t.type(apps[0].last_issued_at, 'number')
})

t.test('export errors: no --out, an unknown member; /me/export needs a signed-in member', async t => {
  const s = await startTestService(t)
  await s.user('alice')
  const noOut = await runCli(['admin', 'user', 'export', 'alice', '--data-dir', s.dataDir])
  t.equal(noOut.code, 2)
  t.match(noOut.stderr, /--out FILE is required/)
  const dir = await mkdtemp(join(tmpdir(), 'hr-relay-export-'))
  t.teardown(async () => { await rm(dir, { recursive: true, force: true }) })
  const unknown = await runCli(['admin', 'user', 'export', 'nobody', '--out', join(dir, 'x.zip'), '--data-dir', s.dataDir])
  t.equal(unknown.code, 1)
  t.match(unknown.stderr, /HTTP 404 not_found: no user nobody/)
  await t.rejects(readFile(join(dir, 'x.zip')), { code: 'ENOENT' }, 'no file for a refused export')
  const anonymous = await fetch(`${s.url}/me/export`, { redirect: 'manual' })
  t.equal(anonymous.status, 303, 'not signed in: sent to sign in')
  t.match(anonymous.headers.get('location') ?? '', /^\/signin/)
})
