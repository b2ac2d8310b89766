// GET /api/v1/statistics end to end: one hand-computed sample, defaults, errors.
import t from 'tap'
import { startTestService } from '../../helpers/service.ts'
import { call } from './fetch.ts'

t.test('statistics over a listening server', async t => {
  const s = await startTestService(t)
  await s.user('alice', { age: 40, weight_kg: 60, sex: 'female' })
  await s.user('bob')
  const w = await s.token('alice', 'data:heart_rate:write')
  const st = await s.token('alice', 'data:statistics:read')
  const bobSt = await s.token('bob', 'data:statistics:read')

  let a = await call(s.url, 'GET', '/api/v1/statistics', { token: st })
  t.equal(a.status, 200)
  t.same(a.json, { maximum_beats_per_minute: 0, minimum_beats_per_minute: 0, average_beats_per_minute: 0, streamed_duration_in_seconds: 0, calories_burned_in_kcal: 0 }, 'zeros without data')

  // 120 bpm every second for 121 readings (120 credited seconds), then a 10 s gap (not credited), then one reading at 90.
  const start = Date.now() - 200_000
  for (let i = 0; i <= 120; i++) {
    const r = await call(s.url, 'POST', '/api/v1/data', { token: w, body: { measured_at: start + i * 1000, data: { heart_rate: 120 } } })
    t.equal(r.status, 200)
  }
  await call(s.url, 'POST', '/api/v1/data', { token: w, body: { measured_at: start + 130_000, data: { heart_rate: 90 } } })
  // Female, 40 y, 60 kg, 120 bpm for 2 minutes: (-20.4022 + 0.4472·120 − 0.1263·60 + 0.074·40) × 2 = 57.2876 kJ = 13.69 kcal.
  const expected = { maximum_beats_per_minute: 120, minimum_beats_per_minute: 90, average_beats_per_minute: Math.round((120 * 121 + 90) / 122 * 10) / 10, streamed_duration_in_seconds: 120, calories_burned_in_kcal: 13.7 }
  for (const q of ['', '?time_range=24h', '?time_range=7d', '?time_range=30d']) {
    a = await call(s.url, 'GET', `/api/v1/statistics${q}`, { token: st })
    t.equal(a.status, 200)
    t.same(a.json, expected, `range ${q || 'default'}`)
  }
  a = await call(s.url, 'GET', '/api/v1/statistics', { token: bobSt })
  t.equal(a.json.streamed_duration_in_seconds, 0, 'another user\'s statistics are separate')

  for (const bad of ['1h', '24H', '', '365d']) {
    a = await call(s.url, 'GET', `/api/v1/statistics?time_range=${bad}`, { token: st })
    t.equal(a.status, 400, `time_range=${bad}`)
    t.same(a.json, { error_code: 7015, error_message: 'no_supported_time_range_24h_7d_30d' })
  }
  a = await call(s.url, 'GET', '/api/v1/statistics?time_range=24h&time_range=7d', { token: st })
  t.equal(a.status, 400, 'repeated parameter')
  a = await call(s.url, 'GET', '/api/v1/statistics', { token: w })
  t.equal(a.status, 400)
  t.same(a.json, { error_code: 7011, error_message: 'error_invalid_scope' })
  a = await call(s.url, 'GET', '/api/v1/statistics')
  t.equal(a.status, 403)
  t.equal(a.json.error_code, 7009)
})
