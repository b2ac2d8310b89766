// POST /api/v1/data and GET /api/v1/data/heart_rate/latest over a listening server.
import t from 'tap'
import { startTestService } from '../../helpers/service.ts'
import { call } from './fetch.ts'

t.test('write and read latest', async t => {
  const s = await startTestService(t)
  await s.user('alice')
  const w = await s.token('alice', 'data:heart_rate:write')
  const r = await s.token('alice', 'data:heart_rate:read')
  const now = Date.now()

  let a = await call(s.url, 'GET', '/api/v1/data/heart_rate/latest', { token: r })
  t.equal(a.status, 412, 'no data yet')
  t.same(a.json, { error_code: 9412, error_message: 'no_heart_rate_data' })
  t.match(a.type, /application\/json/)

  a = await call(s.url, 'POST', '/api/v1/data', { token: w, body: { measured_at: now - 1000, data: { heart_rate: 71 } } })
  t.equal(a.status, 200)
  t.same(a.json, {})
  a = await call(s.url, 'POST', `/api/v1/data?access_token=${w}`, { body: { measured_at: now, data: { heart_rate: 72 } } })
  t.equal(a.status, 200, 'query token accepted')

  a = await call(s.url, 'GET', '/api/v1/data/heart_rate/latest', { token: r })
  t.equal(a.status, 200)
  t.same(a.json, { measured_at: now, data: { heart_rate: 72 } })
  a = await call(s.url, 'GET', '/api/v1/data/heart_rate/latest?response_mode=json', { token: r })
  t.same(a.json, { measured_at: now, data: { heart_rate: 72 } })
  a = await call(s.url, 'GET', '/api/v1/data/heart_rate/latest?response_mode=text_plain_only_heart_rate', { token: r })
  t.equal(a.status, 200)
  t.equal(a.text, '72')
  t.equal(a.type, 'text/plain; charset=UTF-8')
  a = await call(s.url, 'GET', '/api/v1/data/heart_rate/latest?response_mode=xml', { token: r })
  t.equal(a.status, 422)
  t.same(a.json, { error_code: 6004, error_message: 'error_invalid_response_mode' })

  // 0 and below: 200, not stored; an older reading does not replace latest.
  a = await call(s.url, 'POST', '/api/v1/data', { token: w, body: { measured_at: now + 1000, data: { heart_rate: 0 } } })
  t.equal(a.status, 200)
  a = await call(s.url, 'POST', '/api/v1/data', { token: w, body: { measured_at: now + 2000, data: { heart_rate: -5 } } })
  t.equal(a.status, 200)
  a = await call(s.url, 'POST', '/api/v1/data', { token: w, body: { measured_at: now - 5000, data: { heart_rate: 99 } } })
  t.equal(a.status, 200)
  a = await call(s.url, 'GET', '/api/v1/data/heart_rate/latest', { token: r })
  t.same(a.json, { measured_at: now, data: { heart_rate: 72 } })
  const stored = await s.admin('GET', '/admin/readings/alice')
  t.same(stored.readings.map((x: any) => [x.measured_at, x.heart_rate, x.source]), [[now - 5000, 99, 'http'], [now - 1000, 71, 'http'], [now, 72, 'http']])
  const counters = (await s.admin('GET', '/admin/ingest')).pipeline
  t.equal(counters.stored, 3)
  t.equal(counters.dropped.non_positive, 2)

  // A duplicate (profile, measured_at) is stored once; the first value wins.
  a = await call(s.url, 'POST', '/api/v1/data', { token: w, body: { measured_at: now, data: { heart_rate: 150 } } })
  t.equal(a.status, 200)
  t.equal((await s.admin('GET', '/admin/readings/alice')).readings.length, 3)
  t.equal((await s.admin('GET', '/admin/ingest')).pipeline.dropped.duplicate, 1)
})

t.test('write errors', async t => {
  const s = await startTestService(t)
  await s.user('bob')
  const w = await s.token('bob', 'data:heart_rate:write')
  const r = await s.token('bob', 'data:heart_rate:read')
  const now = Date.now()
  const bad = [
    ['not JSON', '{"measured_at":'],
    ['array', '[]'],
    ['no data', JSON.stringify({ measured_at: now })],
    ['no measured_at', JSON.stringify({ data: { heart_rate: 70 } })],
    ['fractional bpm', JSON.stringify({ measured_at: now, data: { heart_rate: 70.5 } })],
    ['string bpm', JSON.stringify({ measured_at: now, data: { heart_rate: '70' } })],
    ['string time', JSON.stringify({ measured_at: String(now), data: { heart_rate: 70 } })],
    ['null body', 'null'],
    ['huge bpm', JSON.stringify({ measured_at: now, data: { heart_rate: 100000 } })]
  ]
  for (const [name, raw] of bad) {
    const a = await call(s.url, 'POST', '/api/v1/data', { token: w, raw })
    t.equal(a.status, 400, `${name}: 400`)
    t.same(a.json, { error_code: 7013, error_message: 'invalid_request', detail: a.json?.detail }, `${name}: 7013`)
  }
  let a = await call(s.url, 'POST', '/api/v1/data', { token: r, body: { measured_at: now, data: { heart_rate: 70 } } })
  t.equal(a.status, 401, 'missing write scope is 401')
  t.same(a.json, { error_code: 7011, error_message: 'error_invalid_scope' })
  a = await call(s.url, 'POST', '/api/v1/data', { body: { measured_at: now, data: { heart_rate: 70 } } })
  t.equal(a.status, 403)
  t.same(a.json, { error_code: 7009, error_message: 'error_authorization_header_is_not_present' })
  a = await call(s.url, 'POST', '/api/v1/data', { token: '00000000-0000-0000-0000-000000000000', body: { measured_at: now, data: { heart_rate: 70 } } })
  t.equal(a.status, 401)
  t.same(a.json, { error_code: 7005, error_message: 'token_not_found' })
  a = await call(s.url, 'POST', '/api/v1/data', { headers: { authorization: 'Basic abc' }, body: { measured_at: now, data: { heart_rate: 70 } } })
  t.equal(a.status, 403)
  t.equal(a.json.error_code, 7010)
  a = await call(s.url, 'GET', '/api/v1/data/heart_rate/latest', { token: w })
  t.equal(a.status, 400, 'latest without read scope')
  t.same(a.json, { error_code: 7011, error_message: 'error_invalid_scope' })
  t.equal((await s.admin('GET', '/admin/readings/bob')).readings.length, 0, 'nothing stored')
})

t.test('rate limit per token: 429 with the spec body, Retry-After and RateLimit-* headers', async t => {
  const s = await startTestService(t, { http: { rate_limit_per_second: 3 } })
  await s.user('carol')
  const r = await s.token('carol', 'data:heart_rate:read profile:read')
  const other = await s.token('carol', 'data:heart_rate:read')
  // The limiter's one-second windows run on Date.now: hold the clock still (injected clock, no sleeps).
  const realNow = Date.now
  let now = realNow()
  Date.now = () => now
  t.teardown(() => { Date.now = realNow })
  const get = async (path: string, token: string): Promise<Response> => await fetch(s.url + path, { headers: { authorization: `Bearer ${token}` } })
  const limits = (res: Response): Array<string | null> => ['ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset', 'retry-after'].map(h => res.headers.get(h))
  for (const remaining of ['2', '1', '0']) {
    const res = await get('/api/v1/data/heart_rate/latest', r)
    t.equal(res.status, 412, 'within the limit (no data yet)')
    t.same(limits(res), ['3', remaining, '1', null])
    await res.text()
  }
  const limited = await get('/api/v1/data/heart_rate/latest', r)
  t.equal(limited.status, 429)
  t.same(await limited.json(), { error_code: 9429, error_message: 'too_many_requests' })
  t.same(limits(limited), ['3', '0', '1', '1'])
  const otherRoute = await get('/api/v1/profile', r)
  t.equal(otherRoute.status, 429, 'one counter per token across routes')
  t.same(limits(otherRoute), ['3', '0', '1', '1'])
  await otherRoute.text()
  const otherToken = await get('/api/v1/data/heart_rate/latest', other)
  t.equal(otherToken.status, 412, 'another token has its own counter')
  t.same(limits(otherToken), ['3', '2', '1', null])
  await otherToken.text()
  now += 1000
  const next = await get('/api/v1/data/heart_rate/latest', r)
  t.equal(next.status, 412, 'the next window')
  t.same(limits(next), ['3', '2', '1', null])
  await next.text()
})
