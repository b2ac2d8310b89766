// What a class leaves a member, over a listening server: the list and the
// learned maximum on /me, the summary page with its chart data, the CSV/TCX/FIT
// downloads (on /me and GET /api/v1/classes/{id}/export), classes.json in their
// export, and their erasure (nothing of theirs left on disk).
import t from 'tap'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { unzip } from '../../helpers/zip.ts'
import { startTestService, type TestService } from '../../helpers/service.ts'
import { call } from '../http/fetch.ts'
import { runCli } from '../../helpers/cli.ts'
import { filesContaining } from '../../helpers/files-scan.ts'
import type { ClassRecord, ClassSummary, LearnedMax } from '../../../api/classes/types.ts'

async function signIn (s: TestService, username: string): Promise<string> {
  const form = { 'content-type': 'application/x-www-form-urlencoded' }
  const page = await fetch(`${s.url}/signin`)
  const cookie = (page.headers.get('set-cookie') ?? '').split(';')[0] ?? ''
  const csrf = /name="csrf" value="([^"]+)"/.exec(await page.text())?.[1] ?? ''
  const r = await fetch(`${s.url}/signin`, { method: 'POST', headers: { ...form, cookie }, body: `csrf=${csrf}&username=${username}&password=password123&return_to=%2Fme`, redirect: 'manual' })
  if (r.status !== 303) throw new Error(`sign-in: ${r.status}`)
  return (r.headers.get('set-cookie') ?? '').split(';')[0] ?? ''
}

t.test('/me lists the classes and the learned maximum; the summary page, its chart data and downloads; export; erasure', async t => {
  const s = await startTestService(t)
  const mia = await s.user('mia', { age: 20 })
  await s.user('bob')
  const base = Math.floor((Date.now() - 3_600_000) / 1000) * 1000
  for (let i = 0; i < 10; i++) {
    const r = await s.service.services.pipeline.submit({ profile_id: mia, measured_at: base + i * 1000, heart_rate: 150, source: 'sim' })
    t.equal(r.status, 'stored')
  }
  // A class that ended, as the engine (test/api/classes/engine.test.ts) leaves it: the record, her summary, her raised maximum.
  const rec: ClassRecord = { class_id: 'c-1', room_id: 'room-1', name: 'Spin <18:00>', started_at: base, planned_end: base + 60_000, ended_at: base + 60_000, hidden: [mia] }
  const summary: ClassSummary = { class_id: 'c-1', room_id: 'room-1', name: 'Spin <18:00>', started_at: base, ended_at: base + 60_000, duration_s: 60, avg_bpm: 150, max_bpm: 150, zones_s: [0, 0, 9, 0, 0], calories_kcal: 2.5, effort_points: 3, rank: 1, ranked: 3, max_heart_rate: 200 }
  const learned: LearnedMax = { at: base + 60_000, class_id: 'c-1', old_bpm: null, new_bpm: 203 }
  await s.service.services.classStore.create({ ...rec, ended_at: null })
  await s.service.services.classStore.finish(rec, [{ profile_id: mia, summary, learned }])

  const cookie = await signIn(s, 'mia')
  const me = await (await fetch(`${s.url}/me`, { headers: { cookie } })).text()
  t.match(me, '<tr><td><a href="/me/classes/c-1">Spin &lt;18:00&gt;</a></td>')
  t.match(me, '<td>1:00</td><td>3</td><td>1 of 3</td><td>150 bpm</td><td>2.5 kcal</td></tr>')
  t.match(me, `<ul id="learned-max"><li>Raised to <strong>203 bpm</strong> from an estimate (none set) on ${new Date(base + 60_000).toISOString().replace('T', ' ').replace(/\.\d+Z$/, ' UTC')}, in the class Spin &lt;18:00&gt;`)

  const page = await fetch(`${s.url}/me/classes/c-1`, { headers: { cookie } })
  t.equal(page.status, 200)
  const html = await page.text()
  t.match(html, '<dd id="class-effort">3</dd><dt>Rank</dt><dd id="class-rank">1 of 3</dd>')
  t.match(html, 'data-source="/me/classes/c-1/readings"')
  t.match(html, '<td>Zone 3</td><td>70–80 %</td><td>0:09</td>')
  for (const f of ['csv', 'tcx', 'fit']) t.match(html, `href="/me/classes/c-1/export?format=${f}"`)
  const points = await (await fetch(`${s.url}/me/classes/c-1/readings`, { headers: { cookie } })).json()
  t.same(points, { resolution: 'reading', points: Array.from({ length: 10 }, (_v, i) => [base + i * 1000, 150]), from: base, to: base + 60_000 })

  const csv = await fetch(`${s.url}/me/classes/c-1/export?format=csv`, { headers: { cookie } })
  t.equal(csv.status, 200)
  t.equal(csv.headers.get('content-disposition'), `attachment; filename="hr-relay-class-${base}.csv"`)
  const lines = (await csv.text()).trim().split('\n')
  t.same([lines.length, lines[1]], [11, `${base},150,`])
  const token = await s.token('mia', 'data:heart_rate:read')
  const fit = await call(s.url, 'GET', '/api/v1/classes/c-1/export?format=fit', { token })
  t.same([fit.status, fit.type], [200, 'application/vnd.ant.fit'])
  const tcx = await call(s.url, 'GET', '/api/v1/classes/c-1/export?format=tcx', { token })
  t.equal(tcx.status, 200)
  t.equal(tcx.text.match(/<HeartRateBpm><Value>150<\/Value><\/HeartRateBpm>/g)?.length, 10)
  const bad = await call(s.url, 'GET', '/api/v1/classes/c-1/export?format=gpx', { token })
  t.same([bad.status, bad.json.detail], [400, 'format must be csv, tcx or fit'])

  // Another member sees none of it.
  const bobCookie = await signIn(s, 'bob')
  t.equal((await fetch(`${s.url}/me/classes/c-1`, { headers: { cookie: bobCookie } })).status, 404)
  t.equal((await fetch(`${s.url}/me/classes/c-1/export?format=csv`, { headers: { cookie: bobCookie } })).status, 404)
  const other = await call(s.url, 'GET', '/api/v1/classes/c-1/export?format=csv', { token: await s.token('bob', 'data:heart_rate:read') })
  t.same([other.status, other.json], [404, { error_code: 9404, error_message: 'not_found', detail: 'no class with this id' }])
  t.match(await (await fetch(`${s.url}/me`, { headers: { cookie: bobCookie } })).text(), '<p>Your classes: no classes yet</p>')
  t.equal((await fetch(`${s.url}/me/classes/c-1/export?format=csv`)).status, 403)

  // Her export holds classes.json.
  const dir = await mkdtemp(join(tmpdir(), 'hr-relay-class-export-'))
  t.teardown(async () => { await rm(dir, { recursive: true, force: true }) })
  const out = await runCli(['admin', 'user', 'export', 'mia', '--out', join(dir, 'mia.zip'), '--data-dir', s.dataDir])
  t.equal(out.code, 0, out.stderr)
  const entries = await unzip(join(dir, 'mia.zip'))
  t.same(JSON.parse(entries.get('classes.json')!.toString('utf8')), { classes: [summary], learned_max_heart_rate: [learned] })

  // Her erasure: summaries, learned maxima and her place in the class's hidden list go, and every byte of her.
  const gone = await runCli(['admin', 'user', 'delete', 'mia', '--json', '--data-dir', s.dataDir])
  t.equal(gone.code, 0, gone.stderr)
  t.match(JSON.parse(gone.stdout), { erased: { account: 1, class_summaries: 1, learned_maxima: 1 } }, 'the counts name her class data')
  const store = s.service.services.classStore
  t.same(await store.summariesOf(mia), [])
  t.same(await store.learnedOf(mia), [])
  t.same((await store.get('c-1'))?.hidden, [])
  t.same(await filesContaining(s.dataDir, [mia]), [], 'no file holds her profile id')
})
