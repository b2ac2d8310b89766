// GET /api/v1/data/heart_rate/latest through Fastify, byte for byte over a
// listening socket: the status line, every header in the order clients meet
// it, and the body, whether the token and the reading come from the caches or
// from the store; on keep-alive and pipelined connections; with the per-token
// limit on (one counter for every route), off, and reached; and each refusal
// with its JSON body.
import t, { type Test } from 'tap'
import { connect } from 'node:net'
import { startTestService, type TestService } from '../../helpers/service.ts'

const LATEST = '/api/v1/data/heart_rate/latest'
const JSON_TYPE = 'content-type: application/json; charset=utf-8'
// Set on the response before Fastify writes its own headers, so it comes first.
const NOSNIFF = 'x-content-type-options: nosniff'

interface Req { path: string, headers?: string[], method?: string }
/** One answer as it came off the socket: the status line and header lines as sent, and the body. */
interface Raw { lines: string[], body: string }

/**
 * Sends `requests` on one connection, the last with `connection: close`: each after the previous answer, or all
 * in one write (pipelined). Resolves with the answers, split by their content-length (none for HEAD).
 */
async function exchange (url: string, requests: Req[], pipelined = false): Promise<Raw[]> {
  const { hostname, port } = new URL(url)
  const socket = connect(Number(port), hostname)
  const text = (r: Req, last: boolean): string =>
    [`${r.method ?? 'GET'} ${r.path} HTTP/1.1`, `host: ${hostname}:${port}`, ...(last ? ['connection: close'] : []), ...(r.headers ?? []), '', ''].join('\r\n')
  const answers: Raw[] = []
  let buffered = ''
  let sent = 0
  const sendNext = (): void => { const r = requests[sent++]; if (r !== undefined) socket.write(text(r, sent === requests.length)) }
  socket.setEncoding('latin1')
  socket.on('data', (chunk: string) => {
    buffered += chunk
    for (;;) {
      const split = buffered.indexOf('\r\n\r\n')
      if (split < 0) return
      const lines = buffered.slice(0, split).split('\r\n')
      const length = requests[answers.length]?.method === 'HEAD' ? 0 : Number(lines.find(l => l.startsWith('content-length: '))?.slice(16))
      if (buffered.length < split + 4 + length) return
      answers.push({ lines, body: buffered.slice(split + 4, split + 4 + length) })
      buffered = buffered.slice(split + 4 + length)
      if (!pipelined) sendNext()
    }
  })
  const ended = new Promise<void>((resolve, reject) => { socket.on('end', resolve); socket.on('error', reject) })
  if (pipelined) socket.write(requests.map((r, i) => text(r, i === requests.length - 1)).join(''))
  else sendNext()
  await ended
  if (buffered !== '') throw new Error(`bytes after the last answer: ${JSON.stringify(buffered)}`)
  return answers
}

/**
 * The Date line Node writes, checked apart (it is the clock's), in RFC 9110's IMF-fixdate. Node keeps the formatted
 * date for the rest of its second and drops it on a timer; on a loaded machine that timer runs late, so the date
 * may trail the exchange by a few seconds. It is never later than the answer.
 */
const DATE_LAG_MS = 5000

function withoutDate (t: Test, answer: Raw, sentAt: number): string[] {
  const date = answer.lines.find(l => l.startsWith('Date: '))?.slice(6) ?? ''
  t.match(date, /^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d\d (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{4} \d\d:\d\d:\d\d GMT$/)
  const at = Date.parse(date)
  // The real clock: a test may hold Date.now still (holdClock), and Node dates its answers by the real one.
  const realNow = performance.timeOrigin + performance.now()
  t.ok(at >= Math.floor(sentAt / 1000) * 1000 - DATE_LAG_MS && at <= realNow, `Date ${date} is the exchange's time (within ${DATE_LAG_MS / 1000} s)`)
  return answer.lines.map(l => l.startsWith('Date: ') ? 'Date: <now>' : l)
}

/** Holds Date.now still until the test ends, so that its requests share one window of the limiter (no sleeps). */
function holdClock (t: Test): void {
  const realNow = Date.now
  const now = realNow()
  Date.now = () => now
  t.teardown(() => { Date.now = realNow })
}

/** A user with one stored reading (81 bpm) and a token with the read scope (or `scope`). */
async function withReading (s: TestService, username: string, scope = 'data:heart_rate:read'): Promise<{ auth: string, body: string }> {
  await s.user(username)
  const write = await s.token(username, 'data:heart_rate:write')
  const read = await s.token(username, scope)
  const measuredAt = Date.now() - 1000
  const res = await fetch(`${s.url}/api/v1/data`, { method: 'POST', headers: { authorization: `Bearer ${write}`, 'content-type': 'application/json' }, body: JSON.stringify({ measured_at: measuredAt, data: { heart_rate: 81 } }) })
  if (res.status !== 200) throw new Error(`write answered ${res.status}`)
  return { auth: `authorization: Bearer ${read}`, body: `{"measured_at":${measuredAt},"data":{"heart_rate":81}}` }
}

/** Counts the token lookups and latest-reading reads that went past the caches (`lookup`, `latest`). */
function countStoreReads (t: Test, s: TestService): () => { lookups: number, latest: number } {
  const { tokens, readings } = s.service.services
  const n = { lookups: 0, latest: 0 }
  const lookup = tokens.lookup.bind(tokens)
  const latest = readings.latest.bind(readings)
  tokens.lookup = async (...args) => { n.lookups++; return await lookup(...args) }
  readings.latest = async (...args) => { n.latest++; return await latest(...args) }
  t.teardown(() => { tokens.lookup = lookup; readings.latest = latest })
  return () => ({ ...n })
}

const limitLines = (limit: number, remaining: number): string[] => [`ratelimit-limit: ${limit}`, `ratelimit-remaining: ${remaining}`, 'ratelimit-reset: 1']
const keepAlive = ['Connection: keep-alive', 'Keep-Alive: timeout=5']

t.test('a poll\'s answer, byte for byte: the token from the store, then from the caches; keep-alive, then close', async t => {
  const s = await startTestService(t, { http: { rate_limit_per_second: 100 } })
  const { auth, body } = await withReading(s, 'ana')
  const reads = countStoreReads(t, s)
  holdClock(t)
  const sentAt = Date.now()
  const answers = await exchange(s.url, [
    { path: LATEST, headers: [auth] }, // the token is not cached yet: looked up in the store
    { path: LATEST, headers: [auth] }, // token and reading from the caches
    { path: `${LATEST}?response_mode=json`, headers: [auth] },
    { path: `${LATEST}?response_mode=text_plain_only_heart_rate`, headers: [auth] },
    { path: LATEST, headers: [auth] } // connection: close
  ])
  const json = (remaining: number, connection: string[]): string[] =>
    ['HTTP/1.1 200 OK', NOSNIFF, ...limitLines(100, remaining), JSON_TYPE, `content-length: ${body.length}`, 'Date: <now>', ...connection]
  t.same(answers.map(a => withoutDate(t, a, sentAt)), [
    json(99, keepAlive),
    json(98, keepAlive),
    json(97, keepAlive),
    ['HTTP/1.1 200 OK', NOSNIFF, ...limitLines(100, 96), 'content-type: text/plain; charset=UTF-8', 'content-length: 2', 'Date: <now>', ...keepAlive],
    json(95, ['Connection: close'])
  ])
  t.same(answers.map(a => a.body), [body, body, body, '81', body])
  t.same(reads(), { lookups: 1, latest: 0 }, 'the token read once from the store, then from its cache; the reading from the cache the write filled')
})

t.test('pipelined polls are answered in order, between answers of other routes', async t => {
  const s = await startTestService(t, { http: { rate_limit_per_second: 100 } })
  const { auth, body } = await withReading(s, 'pip')
  holdClock(t)
  t.equal((await exchange(s.url, [{ path: LATEST, headers: [auth] }]))[0]?.body, body, 'the token is cached')
  const paths = [LATEST, LATEST, '/health', LATEST, '/health', LATEST, LATEST]
  const answers = await exchange(s.url, paths.map(path => ({ path, headers: [auth] })), true)
  t.same(answers.map(a => a.body === body ? 'reading' : (JSON.parse(a.body) as { status: string }).status), ['reading', 'reading', 'ok', 'reading', 'ok', 'reading', 'reading'])
  t.same(answers.filter(a => a.body === body).map(a => a.lines.find(l => l.startsWith('ratelimit-remaining: '))), [98, 97, 96, 95, 94].map(n => `ratelimit-remaining: ${n}`))
  t.same(answers.map(a => a.lines.find(l => l.startsWith('Connection: '))), [...Array(paths.length - 1).fill('Connection: keep-alive'), 'Connection: close'])
})

t.test('with the rate limit off, no RateLimit headers', async t => {
  const s = await startTestService(t)
  const { auth, body } = await withReading(s, 'ben')
  const sentAt = Date.now()
  const answers = await exchange(s.url, [{ path: LATEST, headers: [auth] }, { path: LATEST, headers: [auth] }])
  t.same(answers.map(a => withoutDate(t, a, sentAt)), [
    ['HTTP/1.1 200 OK', NOSNIFF, JSON_TYPE, `content-length: ${body.length}`, 'Date: <now>', ...keepAlive],
    ['HTTP/1.1 200 OK', NOSNIFF, JSON_TYPE, `content-length: ${body.length}`, 'Date: <now>', 'Connection: close']
  ])
  t.same(answers.map(a => a.body), [body, body])
})

t.test('past the limit: 429 with Retry-After, before the reading is read, on the counter of every route', async t => {
  const s = await startTestService(t, { http: { rate_limit_per_second: 3 } })
  const { auth, body } = await withReading(s, 'cy', 'data:heart_rate:read profile:read')
  holdClock(t)
  const sentAt = Date.now()
  const profile = await exchange(s.url, [{ path: '/api/v1/profile', headers: [auth] }])
  t.equal(profile[0]?.lines[0], 'HTTP/1.1 200 OK', 'another route, counted on the same window')
  const answers = await exchange(s.url, [{ path: LATEST, headers: [auth] }, { path: LATEST, headers: [auth] }, { path: LATEST, headers: [auth] }])
  const limited = '{"error_code":9429,"error_message":"too_many_requests"}'
  t.same(answers.map(a => withoutDate(t, a, sentAt)), [
    ['HTTP/1.1 200 OK', NOSNIFF, ...limitLines(3, 1), JSON_TYPE, `content-length: ${body.length}`, 'Date: <now>', ...keepAlive],
    ['HTTP/1.1 200 OK', NOSNIFF, ...limitLines(3, 0), JSON_TYPE, `content-length: ${body.length}`, 'Date: <now>', ...keepAlive],
    ['HTTP/1.1 429 Too Many Requests', NOSNIFF, ...limitLines(3, 0), 'retry-after: 1', JSON_TYPE, `content-length: ${limited.length}`, 'Date: <now>', 'Connection: close']
  ])
  t.same(answers.map(a => a.body), [body, body, limited])
})

t.test('refusals and errors: the status and the JSON body, from the store and again from the caches', async t => {
  const s = await startTestService(t)
  const { auth, body } = await withReading(s, 'dee')
  const noScope = `authorization: Bearer ${await s.token('dee', 'profile:read')}`
  await s.user('eve')
  const noReading = `authorization: Bearer ${await s.token('eve', 'data:heart_rate:read')}`
  const cases: Array<[string, Req, string, string]> = [
    ['no token', { path: LATEST }, 'HTTP/1.1 403 Forbidden', '{"error_code":7009,"error_message":"error_authorization_header_is_not_present"}'],
    ['not a Bearer token', { path: LATEST, headers: ['authorization: Basic abc'] }, 'HTTP/1.1 403 Forbidden', '{"error_code":7010,"error_message":"error_authorization_header_has_wrong_format"}'],
    ['an unknown token', { path: LATEST, headers: ['authorization: Bearer 11111111-2222-3333-4444-555555555555'] }, 'HTTP/1.1 401 Unauthorized', '{"error_code":7005,"error_message":"token_not_found"}'],
    ['no read scope', { path: LATEST, headers: [noScope] }, 'HTTP/1.1 400 Bad Request', '{"error_code":7011,"error_message":"error_invalid_scope"}'],
    ['no read scope, cached', { path: LATEST, headers: [noScope] }, 'HTTP/1.1 400 Bad Request', '{"error_code":7011,"error_message":"error_invalid_scope"}'],
    ['no reading yet', { path: LATEST, headers: [noReading] }, 'HTTP/1.1 412 Precondition Failed', '{"error_code":9412,"error_message":"no_heart_rate_data"}'],
    ['no reading yet, cached', { path: LATEST, headers: [noReading] }, 'HTTP/1.1 412 Precondition Failed', '{"error_code":9412,"error_message":"no_heart_rate_data"}'],
    ['an unknown response mode', { path: `${LATEST}?response_mode=xml`, headers: [auth] }, 'HTTP/1.1 422 Unprocessable Entity', '{"error_code":6004,"error_message":"error_invalid_response_mode"}'],
    ['a repeated parameter', { path: `${LATEST}?response_mode=json&response_mode=json`, headers: [auth] }, 'HTTP/1.1 400 Bad Request', '{"error_code":7013,"error_message":"invalid_request","detail":"querystring/response_mode must be string"}'],
    ['a repeated parameter without a token: the token first', { path: `${LATEST}?response_mode=json&response_mode=json` }, 'HTTP/1.1 403 Forbidden', '{"error_code":7009,"error_message":"error_authorization_header_is_not_present"}'],
    ['an unknown mode without a token: the token first', { path: `${LATEST}?response_mode=xml` }, 'HTTP/1.1 403 Forbidden', '{"error_code":7009,"error_message":"error_authorization_header_is_not_present"}'],
    ['a body on the GET (not read)', { path: LATEST, headers: [auth, 'content-length: 2', 'content-type: application/json'] }, 'HTTP/1.1 200 OK', body]
  ]
  for (const [what, request, status, expected] of cases) {
    const sentAt = Date.now()
    const [answer] = await exchange(s.url, [request])
    if (answer === undefined) { t.fail(what); continue }
    t.same(withoutDate(t, answer, sentAt), [status, NOSNIFF, JSON_TYPE, `content-length: ${expected.length}`, 'Date: <now>', 'Connection: close'], what)
    t.equal(answer.body, expected, what)
  }

  t.test('HEAD: the headers of the GET, no body', async t => {
    const sentAt = Date.now()
    const [answer] = await exchange(s.url, [{ path: LATEST, headers: [auth], method: 'HEAD' }])
    if (answer === undefined) throw new Error('no answer')
    t.same(withoutDate(t, answer, sentAt), ['HTTP/1.1 200 OK', NOSNIFF, JSON_TYPE, `content-length: ${body.length}`, 'Date: <now>', 'Connection: close'])
    t.equal(answer.body, '')
  })

  t.test('an expired token that the cache still holds', async t => {
    const realNow = Date.now
    const later = realNow() + 30 * 365 * 24 * 3600 * 1000 // manual tokens last 20 years
    Date.now = () => later
    t.teardown(() => { Date.now = realNow })
    const [answer] = await exchange(s.url, [{ path: LATEST, headers: [auth] }])
    t.equal(answer?.lines[0], 'HTTP/1.1 401 Unauthorized')
    t.equal(answer?.body, '{"error_code":7006,"error_message":"token_expired"}')
  })

  t.test('a revoked token: never answered again, not even from the cache', async t => {
    const revoked = await s.token('dee', 'data:heart_rate:read')
    const h = `authorization: Bearer ${revoked}`
    const before = await exchange(s.url, [{ path: LATEST, headers: [h] }, { path: LATEST, headers: [h] }])
    t.same(before.map(a => a.body), [body, body])
    const res = await fetch(`${s.url}/oauth2/revoke`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: `token=${revoked}` })
    t.equal(res.status, 200)
    const [answer] = await exchange(s.url, [{ path: LATEST, headers: [h] }])
    t.equal(answer?.lines[0], 'HTTP/1.1 401 Unauthorized')
    t.equal(answer?.body, '{"error_code":7005,"error_message":"token_not_found"}')
  })
})

t.test('a store that fails to read the latest reading: 500 6002', async t => {
  const s = await startTestService(t)
  await s.user('fay')
  const auth = `authorization: Bearer ${await s.token('fay', 'data:heart_rate:read')}`
  const readings = s.service.services.readings
  const latest = readings.latest.bind(readings)
  readings.latest = async () => { throw new Error('the read failed') }
  t.teardown(() => { readings.latest = latest })
  const sentAt = Date.now()
  const [answer] = await exchange(s.url, [{ path: LATEST, headers: [auth] }])
  if (answer === undefined) throw new Error('no answer')
  const expected = '{"error_code":6002,"error_message":"error_retrieving_latest_heart_rate"}'
  t.same(withoutDate(t, answer, sentAt), ['HTTP/1.1 500 Internal Server Error', NOSNIFF, JSON_TYPE, `content-length: ${expected.length}`, 'Date: <now>', 'Connection: close'])
  t.equal(answer.body, expected)
})
