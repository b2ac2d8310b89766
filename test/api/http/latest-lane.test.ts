// The latest-reading fast lane (api/http/latest-lane.ts) against the route it
// stands in front of: the same bytes, the same rate-limit counter, and every
// case it does not take left to the route, which checks it the long way.
import t, { type Test } from 'tap'
import { connect } from 'node:net'
import { ServerResponse } from 'node:http'
import { startTestService, type TestService } from '../../helpers/service.ts'

const LATEST = '/api/v1/data/heart_rate/latest'

interface Raw { status: string, headers: Array<[string, string]>, body: string }

/** One request on its own connection; the answer as it came off the socket. */
async function raw (url: string, path: string, extra: string[] = [], method = 'GET'): Promise<Raw> {
  const { hostname, port } = new URL(url)
  const socket = connect(Number(port), hostname)
  const chunks: Buffer[] = []
  socket.on('data', c => chunks.push(c))
  socket.write([`${method} ${path} HTTP/1.1`, `host: ${hostname}:${port}`, 'connection: close', ...extra, '', ''].join('\r\n'))
  await new Promise<void>((resolve, reject) => { socket.on('end', resolve); socket.on('error', reject) })
  const text = Buffer.concat(chunks).toString('utf8')
  const split = text.indexOf('\r\n\r\n')
  const [status = '', ...lines] = text.slice(0, split).split('\r\n')
  return { status, headers: lines.map(l => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]), body: text.slice(split + 4) }
}

/**
 * Requests on one keep-alive connection, the last with `connection: close`: one after the other, or all in one
 * write (pipelined). The answers as they came off the socket, split by their content-length.
 */
async function keepAlive (url: string, requests: Array<{ path: string, extra: string[] }>, pipelined = false): Promise<Raw[]> {
  const { hostname, port } = new URL(url)
  const socket = connect(Number(port), hostname)
  let buffered = ''
  const answers: Raw[] = []
  const waiting: Array<() => void> = []
  socket.setEncoding('latin1')
  socket.on('data', (chunk: string) => {
    buffered += chunk
    for (;;) {
      const split = buffered.indexOf('\r\n\r\n')
      if (split < 0) return
      const [status = '', ...lines] = buffered.slice(0, split).split('\r\n')
      const headers = lines.map(l => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()] as [string, string])
      const length = Number(headers.find(([k]) => k === 'content-length')?.[1])
      if (buffered.length < split + 4 + length) return
      answers.push({ status, headers, body: buffered.slice(split + 4, split + 4 + length) })
      buffered = buffered.slice(split + 4 + length)
      waiting.shift()?.()
    }
  })
  const ended = new Promise<void>((resolve, reject) => { socket.on('end', resolve); socket.on('error', reject) })
  const text = (r: { path: string, extra: string[] }, last: boolean): string =>
    [`GET ${r.path} HTTP/1.1`, `host: ${hostname}:${port}`, ...(last ? ['connection: close'] : []), ...r.extra, '', ''].join('\r\n')
  if (pipelined) socket.write(requests.map((r, i) => text(r, i === requests.length - 1)).join(''))
  else {
    for (const [i, r] of requests.entries()) {
      const answered = new Promise<void>(resolve => waiting.push(resolve))
      socket.write(text(r, i === requests.length - 1))
      await answered
    }
  }
  await ended
  return answers
}

/**
 * Counts reads of the latest reading through `Readings.latest`, which the route makes and the lane does not
 * (it reads only the cache). Installed after the test's writes: the pipeline reads it too.
 */
function countRouteReads (s: TestService): () => number {
  const readings = s.service.services.readings
  const latest = readings.latest.bind(readings)
  let n = 0
  readings.latest = async (profileId: string) => { n++; return await latest(profileId) }
  return () => n
}

async function withReading (s: TestService, username: string, scope = 'data:heart_rate:read'): Promise<{ token: string, measuredAt: number }> {
  await s.user(username)
  const w = await s.token(username, 'data:heart_rate:write')
  const token = await s.token(username, scope)
  const measuredAt = Date.now() - 1000
  const res = await fetch(`${s.url}/api/v1/data`, { method: 'POST', headers: { authorization: `Bearer ${w}`, 'content-type': 'application/json' }, body: JSON.stringify({ measured_at: measuredAt, data: { heart_rate: 81 } }) })
  if (res.status !== 200) throw new Error(`write answered ${res.status}`)
  return { token, measuredAt }
}

/** Holds Date.now at its present value until the test ends (no sleeps: the limiter's windows do not move). */
function holdClock (t: { teardown: (fn: () => void) => void }): void {
  const realNow = Date.now
  const now = realNow()
  Date.now = () => now
  t.teardown(() => { Date.now = realNow })
}

const without = (headers: Array<[string, string]>, names: string[]): Array<[string, string]> => headers.filter(([k]) => !names.includes(k))

/** A service with the limit at 100/s, a user with a reading and a read token, route reads counted, the clock held. */
async function pollingSetup (t: Test, username: string): Promise<{ s: TestService, measuredAt: number, auth: string, routeReads: () => number }> {
  const s = await startTestService(t, { http: { rate_limit_per_second: 100 } })
  const { token, measuredAt } = await withReading(s, username)
  const routeReads = countRouteReads(s)
  // The requests of a test must share one limiter window whatever the machine's load: hold the clock still.
  holdClock(t)
  return { s, measuredAt, auth: `authorization: Bearer ${token}`, routeReads }
}

/** The lane's answer and the route's: the same status, body and headers in the same order (Date and the remaining count aside). */
function sameAnswer (t: Test, lane: Raw, route: Raw, reading: { measured_at: number, heart_rate: number }): void {
  t.equal(lane.body, JSON.stringify({ measured_at: reading.measured_at, data: { heart_rate: reading.heart_rate } }))
  t.equal(lane.body, route.body)
  t.equal(lane.status, route.status)
  t.same(lane.headers.map(([k]) => k), route.headers.map(([k]) => k), 'the same headers in the same order')
  t.same(without(lane.headers, ['date', 'ratelimit-remaining']), without(route.headers, ['date', 'ratelimit-remaining']))
}

t.test('the lane answers a cached token and reading with the route\'s bytes', async t => {
  const { s, measuredAt, auth, routeReads } = await pollingSetup(t, 'ana')
  // A token not looked up before is not in the cache: the route answers and caches it.
  const first = await raw(s.url, LATEST, [auth])
  t.equal(first.status, 'HTTP/1.1 200 OK')
  t.equal(routeReads(), 1, 'the first request went to the route')
  const lane = await raw(s.url, LATEST, [auth])
  t.equal(routeReads(), 1, 'the second was answered by the lane')
  // The same request through the route (a query string is never taken by the lane).
  const route = await raw(s.url, `${LATEST}?response_mode=json`, [auth])
  t.equal(routeReads(), 2, 'a query string goes to the route')
  sameAnswer(t, lane, route, { measured_at: measuredAt, heart_rate: 81 })
  t.same(lane.headers.map(([k]) => k), ['ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset', 'content-type', 'x-content-type-options', 'content-length', 'date', 'connection'])
  t.same([first, lane, route].map(r => r.headers.find(([k]) => k === 'ratelimit-remaining')?.[1]), ['99', '98', '97'], 'one counter for both')
})

t.test('on a keep-alive connection the lane writes the route\'s bytes itself, and the connection goes on', async t => {
  const { s, measuredAt, auth, routeReads } = await pollingSetup(t, 'kai')
  // Counts the answers that went through ServerResponse#writeHead (the route's, and the lane's when it cannot write raw).
  const writeHead = ServerResponse.prototype.writeHead
  let heads = 0
  ServerResponse.prototype.writeHead = function (this: ServerResponse, ...args: Parameters<typeof writeHead>) { heads++; return writeHead.apply(this, args) } as typeof writeHead
  t.teardown(() => { ServerResponse.prototype.writeHead = writeHead })
  const sentAt = Date.now()
  const [first, lane, route, closing] = await keepAlive(s.url, [
    { path: LATEST, extra: [auth] }, // the route, which caches the token
    { path: LATEST, extra: [auth] }, // the lane, written raw
    { path: `${LATEST}?response_mode=json`, extra: [auth] }, // the route again
    { path: LATEST, extra: [auth] } // the lane, with connection: close (through writeHead)
  ])
  if (first === undefined || lane === undefined || route === undefined || closing === undefined) throw new Error('an answer is missing')
  t.equal(routeReads(), 2, 'the first and the third went to the route')
  t.equal(heads, 3, 'the second was written raw; the closing one through writeHead')
  t.same([first, lane, route, closing].map(r => r.status), Array(4).fill('HTTP/1.1 200 OK'))
  sameAnswer(t, lane, route, { measured_at: measuredAt, heart_rate: 81 })
  t.same(lane.headers.map(([k]) => k), ['ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset', 'content-type', 'x-content-type-options', 'content-length', 'date', 'connection', 'keep-alive'])
  t.match(lane.headers.find(([k]) => k === 'date')?.[1], /^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d\d (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{4} \d\d:\d\d:\d\d GMT$/)
  // The current second, as Node writes it: a second within the exchange (not the assertion's, which may be the next).
  const date = Date.parse(lane.headers.find(([k]) => k === 'date')?.[1] ?? '')
  t.ok(date >= Math.floor(sentAt / 1000) * 1000 && date <= Date.now(), `Date ${new Date(date).toUTCString()} is a second of the exchange`)
  t.equal(new Date(date).toUTCString(), lane.headers.find(([k]) => k === 'date')?.[1], 'in the form Node writes')
  t.equal(lane.headers.find(([k]) => k === 'keep-alive')?.[1], route.headers.find(([k]) => k === 'keep-alive')?.[1])
  t.same([first, lane, route, closing].map(r => r.headers.find(([k]) => k === 'ratelimit-remaining')?.[1]), ['99', '98', '97', '96'], 'one counter for all')
  t.equal(closing.headers.find(([k]) => k === 'connection')?.[1], 'close', 'the closing request is answered with connection: close')
  t.equal(closing.body, lane.body)
})

t.test('pipelined polls are answered in order, the lane\'s between the router\'s', async t => {
  const s = await startTestService(t, { http: { rate_limit_per_second: 100 } })
  const { token, measuredAt } = await withReading(s, 'pip')
  const auth = `authorization: Bearer ${token}`
  holdClock(t)
  t.equal((await raw(s.url, LATEST, [auth])).status, 'HTTP/1.1 200 OK') // caches the token
  const routeReads = countRouteReads(s)
  // /health is answered by the router, asynchronously: the polls sent after it wait for its answer.
  const paths = [LATEST, LATEST, '/health', LATEST, '/health', LATEST, LATEST]
  const answers = await keepAlive(s.url, paths.map(path => ({ path, extra: [auth] })), true)
  t.equal(answers.length, paths.length, 'every request answered')
  t.equal(routeReads(), 0, 'every poll answered by the lane')
  t.same(answers.map(r => r.status), Array(paths.length).fill('HTTP/1.1 200 OK'))
  const reading = JSON.stringify({ measured_at: measuredAt, data: { heart_rate: 81 } })
  t.same(answers.map(r => r.body === reading ? 'reading' : (JSON.parse(r.body) as { status?: string }).status), ['reading', 'reading', 'ok', 'reading', 'ok', 'reading', 'reading'], 'in the order sent')
  t.same(answers.filter(r => r.body === reading).map(r => r.headers.find(([k]) => k === 'ratelimit-remaining')?.[1]), ['98', '97', '96', '95', '94'])
  t.same(answers.map(r => r.headers.find(([k]) => k === 'connection')?.[1]), [...Array(paths.length - 1).fill('keep-alive'), 'close'])
})

t.test('with the rate limit off, neither sends RateLimit headers', async t => {
  const s = await startTestService(t)
  const { token } = await withReading(s, 'ben')
  const routeReads = countRouteReads(s)
  const auth = `authorization: Bearer ${token}`
  await raw(s.url, LATEST, [auth])
  const lane = await raw(s.url, LATEST, [auth])
  const route = await raw(s.url, `${LATEST}?response_mode=json`, [auth])
  t.equal(routeReads(), 2, 'the first (token not cached yet) and the one with a query string went to the route')
  t.same(lane.headers.map(([k]) => k), ['content-type', 'x-content-type-options', 'content-length', 'date', 'connection'])
  t.same(without(lane.headers, ['date']), without(route.headers, ['date']))
})

t.test('past the limit the route answers 429, on the same counter', async t => {
  const s = await startTestService(t, { http: { rate_limit_per_second: 3 } })
  const { token } = await withReading(s, 'cy')
  const auth = `authorization: Bearer ${token}`
  // The limiter's windows run on Date.now: hold it still, so that every request below is in one window.
  holdClock(t)
  await raw(s.url, LATEST, [auth]) // caches the token; its window starts
  const routeReads = countRouteReads(s)
  const a = await raw(s.url, LATEST, [auth])
  const b = await raw(s.url, LATEST, [auth])
  t.same([a.status, b.status], ['HTTP/1.1 200 OK', 'HTTP/1.1 200 OK'])
  t.equal(routeReads(), 0, 'both answered by the lane')
  t.equal(b.headers.find(([k]) => k === 'ratelimit-remaining')?.[1], '0')
  const limited = await raw(s.url, LATEST, [auth])
  t.equal(limited.status, 'HTTP/1.1 429 Too Many Requests')
  t.same(JSON.parse(limited.body), { error_code: 9429, error_message: 'too_many_requests' })
  t.equal(limited.headers.find(([k]) => k === 'retry-after')?.[1], '1')
  t.equal(routeReads(), 0, 'refused before the route read anything')
})

t.test('what the lane does not take, the route answers', async t => {
  const s = await startTestService(t)
  const { token } = await withReading(s, 'dee')
  const routeReads = countRouteReads(s)
  const auth = `authorization: Bearer ${token}`
  t.equal((await raw(s.url, LATEST, [auth])).status, 'HTTP/1.1 200 OK')
  t.equal((await raw(s.url, LATEST, [auth])).status, 'HTTP/1.1 200 OK')
  t.equal(routeReads(), 1, 'the route caches the token, then the lane answers')

  t.test('a body on the GET', async t => {
    const before = routeReads()
    const r = await raw(s.url, LATEST, [auth, 'content-length: 2', 'content-type: application/json'])
    t.equal(r.status.split(' ')[1], '200')
    t.equal(routeReads(), before + 1)
  })
  t.test('HEAD', async t => {
    const before = routeReads()
    const r = await raw(s.url, LATEST, [auth], 'HEAD')
    t.equal(r.status, 'HTTP/1.1 200 OK')
    t.equal(routeReads(), before + 1)
  })
  t.test('a malformed Authorization header', async t => {
    const r = await raw(s.url, LATEST, ['authorization: Basic abc'])
    t.equal(r.status, 'HTTP/1.1 403 Forbidden')
    t.same(JSON.parse(r.body), { error_code: 7010, error_message: 'error_authorization_header_has_wrong_format' })
  })
  t.test('a token without the read scope, also once it is cached', async t => {
    const other = await s.token('dee', 'profile:read')
    for (const round of [1, 2]) {
      const r = await raw(s.url, LATEST, [`authorization: Bearer ${other}`])
      t.equal(r.status.split(' ')[1], '400', `round ${round}`)
      t.same(JSON.parse(r.body), { error_code: 7011, error_message: 'error_invalid_scope' })
    }
  })
  t.test('a user with no reading yet', async t => {
    await s.user('eve')
    const e = await s.token('eve', 'data:heart_rate:read')
    for (const round of [1, 2]) {
      const r = await raw(s.url, LATEST, [`authorization: Bearer ${e}`])
      t.equal(r.status, 'HTTP/1.1 412 Precondition Failed', `round ${round}`)
      t.same(JSON.parse(r.body), { error_code: 9412, error_message: 'no_heart_rate_data' })
    }
  })
  t.test('an expired token that the cache still holds', async t => {
    const realNow = Date.now
    const later = realNow() + 30 * 365 * 24 * 3600 * 1000 // manual tokens last 20 years
    Date.now = () => later
    t.teardown(() => { Date.now = realNow })
    const r = await raw(s.url, LATEST, [auth])
    t.equal(r.status, 'HTTP/1.1 401 Unauthorized')
    t.same(JSON.parse(r.body), { error_code: 7006, error_message: 'token_expired' })
  })
  t.test('a revoked token: never answered again, not even from the cache', async t => {
    const revoked = await s.token('dee', 'data:heart_rate:read')
    const h = `authorization: Bearer ${revoked}`
    t.equal((await raw(s.url, LATEST, [h])).status, 'HTTP/1.1 200 OK')
    t.equal((await raw(s.url, LATEST, [h])).status, 'HTTP/1.1 200 OK')
    const res = await fetch(`${s.url}/oauth2/revoke`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: `token=${revoked}` })
    t.equal(res.status, 200)
    const r = await raw(s.url, LATEST, [h])
    t.equal(r.status, 'HTTP/1.1 401 Unauthorized')
    t.same(JSON.parse(r.body), { error_code: 7005, error_message: 'token_not_found' })
  })
})
