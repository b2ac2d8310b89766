// hr-relay extensions over a listening server: reading history (paging,
// cursors, bad input, scopes), sessions, and the CSV / TCX / FIT exports
// decoded independently (Garmin's FIT SDK Decoder, fit-file-parser,
// fast-xml-parser).
import t, { type Test } from 'tap'
import { Decoder, Stream } from '@garmin/fitsdk'
import FitParser from 'fit-file-parser'
import { XMLParser } from 'fast-xml-parser'
import { startTestService, type TestService } from '../../helpers/service.ts'
import { call } from './fetch.ts'
import { kcal } from '../../../api/stats.ts'
import type { Reading } from '../../../api/pipeline/reading.ts'

const enc = (ms: number): string => Buffer.from(String(ms)).toString('base64url')
const BAD = { error_code: 7013, error_message: 'invalid_request' }

interface Seeded { s: TestService, token: string, base: number, base2: number, profile: string }

/** Session A: 20 readings 1 s apart (bpm 100..119, RR on even ones, energy on the sixth); 10 min gap; session B: 5 readings at 150 bpm. */
async function seed (t: Test): Promise<Seeded> {
  const s = await startTestService(t)
  const profile = await s.user('alice', { age: 20, weight_kg: 70, sex: 'male' })
  await s.user('bob')
  const token = await s.token('alice', 'data:heart_rate:read')
  const base = Math.floor((Date.now() - 2 * 86_400_000) / 1000) * 1000
  const base2 = base + 19_000 + 600_001
  const readings: Reading[] = []
  for (let i = 0; i < 20; i++) {
    readings.push({ profile_id: profile, measured_at: base + i * 1000, heart_rate: 100 + i, source: 'sim', ...(i % 2 === 0 ? { rr_intervals_ms: [600 + i] } : {}), ...(i === 5 ? { energy_expended_kj: 12 } : {}) })
  }
  for (let i = 0; i < 5; i++) readings.push({ profile_id: profile, measured_at: base2 + i * 1000, heart_rate: 150, source: 'sim' })
  for (const r of readings) t.equal((await s.service.services.pipeline.submit(r)).status, 'stored')
  return { s, token, base, base2, profile }
}

t.test('history: exact pages, cursors, range edges, bad input and scopes', async t => {
  const { s, token, base, base2 } = await seed(t)
  const path = (q: string): string => `/api/v1/data/heart_rate/history?${q}`
  const to = base2 + 5000

  let a = await call(s.url, 'GET', path(`from=${base}&to=${to}&limit=10`), { token })
  t.equal(a.status, 200)
  t.equal(a.json.data.length, 10)
  t.same(a.json.data.slice(0, 6), [
    { measured_at: base, heart_rate: 100, rr_intervals_ms: [600] },
    { measured_at: base + 1000, heart_rate: 101 },
    { measured_at: base + 2000, heart_rate: 102, rr_intervals_ms: [602] },
    { measured_at: base + 3000, heart_rate: 103 },
    { measured_at: base + 4000, heart_rate: 104, rr_intervals_ms: [604] },
    { measured_at: base + 5000, heart_rate: 105, energy_expended_kj: 12 }
  ])
  t.equal(a.json.next_cursor, enc(base + 9000))
  a = await call(s.url, 'GET', path(`from=${base}&to=${to}&limit=10&cursor=${a.json.next_cursor as string}`), { token })
  t.same(a.json.data.map((r: any) => r.measured_at), Array.from({ length: 10 }, (_v, i) => base + (10 + i) * 1000))
  t.equal(a.json.next_cursor, enc(base + 19_000))
  a = await call(s.url, 'GET', path(`from=${base}&to=${to}&limit=10&cursor=${a.json.next_cursor as string}`), { token })
  t.same(a.json, { data: [0, 1, 2, 3, 4].map(i => ({ measured_at: base2 + i * 1000, heart_rate: 150 })), next_cursor: null })

  a = await call(s.url, 'GET', path(`from=${base}&to=${to}&limit=25`), { token })
  t.equal(a.json.data.length, 25)
  t.equal(a.json.next_cursor, null, 'exactly the limit left: no further page')
  a = await call(s.url, 'GET', path(`from=${base}&to=${to}`), { token })
  t.equal(a.json.data.length, 25, 'default limit 1000')
  a = await call(s.url, 'GET', path(`from=${base + 1000}&to=${base + 3000}`), { token })
  t.same(a.json.data.map((r: any) => r.measured_at), [base + 1000, base + 2000], 'from inclusive, to exclusive')
  a = await call(s.url, 'GET', path(`from=${base}&to=${base}`), { token })
  t.same(a.json, { data: [], next_cursor: null })

  const bad: Array<[string, string]> = [
    [`from=${base + 1}&to=${base}`, 'from must not be after to'],
    [`from=${base}&to=${base + 31 * 86_400_000 + 1}`, 'at most 31 days a request'],
    [`from=abc&to=${base}`, 'from must be a non-negative integer'],
    [`from=-5&to=${base}`, 'from must be a non-negative integer'],
    [`from=${base}&to=1e13`, 'to must be a non-negative integer'],
    [`to=${base}`, 'from must be a non-negative integer'],
    [`from=${base}&to=${to}&limit=10001`, 'limit must be 1..10000'],
    [`from=${base}&to=${to}&limit=0`, 'limit must be 1..10000'],
    [`from=${base}&to=${to}&limit=ten`, 'limit must be a non-negative integer'],
    [`from=${base}&to=${to}&cursor=!!`, 'cursor is not one this range returned'],
    [`from=${base}&to=${to}&cursor=${enc(base - 1)}`, 'cursor is not one this range returned'],
    [`from=${base}&to=${to}&cursor=${Buffer.from('12x').toString('base64url')}`, 'cursor is not one this range returned']
  ]
  for (const [q, detail] of bad) {
    a = await call(s.url, 'GET', path(q), { token })
    t.equal(a.status, 400, q)
    t.same(a.json, { ...BAD, detail }, q)
    t.match(a.type, /application\/json/)
  }
  a = await call(s.url, 'GET', path(`from=${base}&to=${base + 31 * 86_400_000}`), { token })
  t.equal(a.status, 200, 'exactly 31 days is allowed')

  // Scopes: the history belongs to data:heart_rate:read.
  const stats = await s.token('alice', 'data:statistics:read,data:heart_rate:write')
  for (const p of [path(`from=${base}&to=${to}`), `/api/v1/data/sessions?from=${base}&to=${to}`, `/api/v1/data/sessions/${base}/export?format=csv`]) {
    a = await call(s.url, 'GET', p, { token: stats })
    t.equal(a.status, 400, `${p}: missing scope`)
    t.same(a.json, { error_code: 7011, error_message: 'error_invalid_scope' })
    a = await call(s.url, 'GET', p)
    t.equal(a.status, 403, `${p}: no token`)
    t.same(a.json, { error_code: 7009, error_message: 'error_authorization_header_is_not_present' })
  }
  // Another user's token sees none of alice's readings.
  const bobs = await s.token('bob', 'data:heart_rate:read')
  a = await call(s.url, 'GET', path(`from=${base}&to=${to}`), { token: bobs })
  t.same(a.json, { data: [], next_cursor: null })
})

t.test('sessions: split at the session gap, summaries, zones, HRV, ranges', async t => {
  const { s, token, base, base2 } = await seed(t)
  let a = await call(s.url, 'GET', `/api/v1/data/sessions?from=${base - 1000}&to=${base2 + 10_000}`, { token })
  t.equal(a.status, 200)
  const body = { age: 20, weight_kg: 70, sex: 'male' as const }
  // Session A: credits 1 s for each of readings 2..20; bpm 101..118 are 50.5..59 % of 200 (zone 1), 119 is 59.5 % → 60 % (zone 2).
  let bpmMs = 0
  for (let i = 1; i < 20; i++) bpmMs += (100 + i) * 1000
  t.same(a.json.sessions, [
    { id: String(base), start: base, end: base + 19_000, duration_s: 19, readings: 20, avg: 109.5, min: 100, max: 119, kcal: Math.round(kcal(19_000, bpmMs, body) * 10) / 10, zones_s: [18, 1, 0, 0, 0], max_heart_rate: 200, rmssd_ms: 2, sdnn_ms: 5.74, rr_dropped: 0 },
    { id: String(base2), start: base2, end: base2 + 4000, duration_s: 4, readings: 5, avg: 150, min: 150, max: 150, kcal: Math.round(kcal(4000, 150 * 4000, body) * 10) / 10, zones_s: [0, 0, 4, 0, 0], max_heart_rate: 200, rmssd_ms: null, sdnn_ms: null, rr_dropped: 0 }
  ])
  a = await call(s.url, 'GET', `/api/v1/data/sessions?from=${base + 5000}&to=${base2 + 10_000}`, { token })
  t.same(a.json.sessions.map((x: any) => x.id), [String(base2)], 'a session that started before from is not listed')
  a = await call(s.url, 'GET', `/api/v1/data/sessions?from=${base}&to=${base + 1}`, { token })
  t.same(a.json.sessions.map((x: any) => [x.id, x.readings]), [[String(base), 20]], 'a session starting in the range is read to its end')
  a = await call(s.url, 'GET', `/api/v1/data/sessions?from=${base2}&to=${base}`, { token })
  t.equal(a.status, 400)
  t.same(a.json, { ...BAD, detail: 'from must not be after to' })

  // A shorter session gap splits at 600 s no more: with data.session_gap_seconds 0.5 every reading is a session.
  const s2 = await startTestService(t, { data: { session_gap_seconds: 0.5 } })
  const p2 = await s2.user('carol')
  for (let i = 0; i < 3; i++) await s2.service.services.pipeline.submit({ profile_id: p2, measured_at: base + i * 1000, heart_rate: 80, source: 'sim' })
  a = await call(s2.url, 'GET', `/api/v1/data/sessions?from=${base}&to=${base + 5000}`, { token: await s2.token('carol', 'data:heart_rate:read') })
  t.same(a.json.sessions.map((x: any) => x.id), [0, 1, 2].map(i => String(base + i * 1000)))
})

async function download (s: TestService, token: string, path: string): Promise<{ status: number, type: string | null, disposition: string | null, bytes: Buffer }> {
  const res = await fetch(s.url + path, { headers: { authorization: `Bearer ${token}` } })
  return { status: res.status, type: res.headers.get('content-type'), disposition: res.headers.get('content-disposition'), bytes: Buffer.from(await res.arrayBuffer()) }
}

t.test('exports: CSV, TCX and FIT decode back to the readings', async t => {
  const { s, token, base, base2 } = await seed(t)
  const ex = (id: string | number, format: string): string => `/api/v1/data/sessions/${id}/export?format=${format}`

  const csv = await download(s, token, ex(base, 'csv'))
  t.equal(csv.status, 200)
  t.equal(csv.type, 'text/csv; charset=utf-8')
  t.equal(csv.disposition, `attachment; filename="hr-relay-session-${base}.csv"`)
  const lines = ['measured_at,heart_rate,rr_intervals_ms']
  for (let i = 0; i < 20; i++) lines.push(`${base + i * 1000},${100 + i},${i % 2 === 0 ? String(600 + i) : ''}`)
  t.equal(csv.bytes.toString('utf8'), lines.join('\n') + '\n')

  const tcx = await download(s, token, ex(base2, 'tcx'))
  t.equal(tcx.status, 200)
  t.equal(tcx.type, 'application/vnd.garmin.tcx+xml; charset=utf-8')
  t.equal(tcx.disposition, `attachment; filename="hr-relay-session-${base2}.tcx"`)
  const doc = new XMLParser({ ignoreAttributes: false, isArray: name => name === 'Trackpoint' }).parse(tcx.bytes.toString('utf8'))
  const activity = doc.TrainingCenterDatabase.Activities.Activity
  t.equal(activity['@_Sport'], 'Other')
  t.equal(activity.Id, new Date(base2).toISOString())
  t.equal(activity.Lap['@_StartTime'], new Date(base2).toISOString())
  t.equal(activity.Lap.TotalTimeSeconds, 4)
  t.equal(activity.Lap.AverageHeartRateBpm.Value, 150)
  t.same(activity.Lap.Track.Trackpoint.map((p: any) => [p.Time, p.HeartRateBpm.Value]), [0, 1, 2, 3, 4].map(i => [new Date(base2 + i * 1000).toISOString(), 150]))

  const fit = await download(s, token, ex(base, 'fit'))
  t.equal(fit.status, 200)
  t.equal(fit.type, 'application/vnd.ant.fit')
  t.equal(fit.disposition, `attachment; filename="hr-relay-session-${base}.fit"`)
  const decoder = new Decoder(Stream.fromBuffer(fit.bytes))
  t.equal(decoder.checkIntegrity(), true, 'header, size and CRC are valid')
  const { messages, errors } = decoder.read()
  t.same(errors, [])
  t.equal(messages.fileIdMesgs?.[0]?.type, 'activity')
  t.same(messages.recordMesgs?.map(r => [(r.timestamp as Date).getTime(), r.heartRate]), Array.from({ length: 20 }, (_v, i) => [base + i * 1000, 100 + i]))
  t.same(messages.hrvMesgs?.flatMap(m => m.time ?? []), Array.from({ length: 10 }, (_v, i) => (600 + 2 * i) / 1000))
  const session = messages.sessionMesgs?.[0]
  t.same([session?.sport, session?.totalElapsedTime, session?.avgHeartRate, session?.maxHeartRate, session?.numLaps, (session?.startTime as Date).getTime()], ['generic', 19, 110, 119, 1, base])
  t.equal(messages.lapMesgs?.length, 1)
  t.equal(messages.activityMesgs?.[0]?.numSessions, 1)

  const parsed = await new FitParser({ mode: 'list' }).parseAsync(new Uint8Array(fit.bytes).buffer) as any
  t.same(parsed.records.map((r: any) => [new Date(r.timestamp).getTime(), r.heart_rate]), Array.from({ length: 20 }, (_v, i) => [base + i * 1000, 100 + i]), 'fit-file-parser reads the same records')
  t.equal(parsed.sessions.length, 1)
  t.equal(parsed.sessions[0].avg_heart_rate, 110)
  t.equal(parsed.activity.num_sessions ?? parsed.activity.numSessions ?? 1, 1)

  let a = await call(s.url, 'GET', ex(base, 'gpx'), { token })
  t.equal(a.status, 400)
  t.same(a.json, { ...BAD, detail: 'format must be csv, tcx or fit' })
  a = await call(s.url, 'GET', `/api/v1/data/sessions/${base}/export`, { token })
  t.equal(a.status, 400, 'format is required')
  for (const id of [String(base + 1000), 'abc', '99999999999999', String(base - 1)]) {
    a = await call(s.url, 'GET', ex(id, 'csv'), { token })
    t.equal(a.status, 404, `no session ${id}`)
    t.same(a.json, { error_code: 9404, error_message: 'not_found', detail: 'no session with this id' })
  }
  a = await call(s.url, 'GET', ex(base, 'csv'), { token: await s.token('bob', 'data:heart_rate:read') })
  t.equal(a.status, 404, 'another user\'s session is not found')
})
