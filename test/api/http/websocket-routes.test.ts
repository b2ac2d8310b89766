// The WebSocket routes' plumbing (api/http/websocket.ts) over raw TCP: an
// upgrade request is routed like any request, so a route that does not
// upgrade, a missing route and a refused token are HTTP answers with the JSON
// error body, after which the connection closes; a WebSocket route asked
// without an Upgrade is 426 (HEAD too, without a body); closing the server
// closes the open WebSockets.
import t from 'tap'
import { connect } from 'node:net'
import { randomBytes } from 'node:crypto'
import WebSocket from 'ws'
import { startTestService } from '../../helpers/service.ts'

/** Sends a WebSocket upgrade request for `path` and returns every byte the server sent until it closed the connection. */
async function upgradeAnswer (base: string, path: string, extra = ''): Promise<string> {
  const url = new URL(base)
  const sock = connect(Number(url.port), url.hostname)
  let got = ''
  sock.on('data', (c: Buffer) => { got += c.toString('utf8') })
  const closed = new Promise<void>(resolve => { sock.on('close', () => { resolve() }) })
  await new Promise<void>((resolve, reject) => { sock.once('connect', resolve); sock.once('error', reject) })
  sock.write(`GET ${path} HTTP/1.1\r\nHost: ${url.host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: ${randomBytes(16).toString('base64')}\r\nSec-WebSocket-Version: 13\r\n${extra}\r\n`)
  await closed
  return got
}

const bodyOf = (answer: string): unknown => JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4))

t.test('an upgrade to a route that does not upgrade, to no route, or refused: an HTTP answer, then the connection closes', async t => {
  const s = await startTestService(t)
  await s.user('ann')
  const token = await s.token('ann', 'data:heart_rate:read')

  const health = await upgradeAnswer(s.url, '/health')
  t.match(health, /^HTTP\/1\.1 200 OK\r\n/)
  t.match(health, /\r\nx-content-type-options: nosniff\r\n/i)
  t.match(bodyOf(health), { status: 'ok' })

  const none = await upgradeAnswer(s.url, '/no/such/route')
  t.match(none, /^HTTP\/1\.1 404 Not Found\r\n/)
  t.same(bodyOf(none), { error_code: 9404, error_message: 'not_found' })

  const noToken = await upgradeAnswer(s.url, '/api/v1/data/real_time')
  t.match(noToken, /^HTTP\/1\.1 403 Forbidden\r\n/)
  t.same(bodyOf(noToken), { error_code: 7009, error_message: 'error_authorization_header_is_not_present' })

  const badToken = await upgradeAnswer(s.url, '/api/v1/data/real_time', 'Authorization: Bearer 00000000-0000-0000-0000-000000000000\r\n')
  t.match(badToken, /^HTTP\/1\.1 401 Unauthorized\r\n/)
  t.same(bodyOf(badToken), { error_code: 7005, error_message: 'token_not_found' })

  // The same route with the token upgrades.
  const ws = new WebSocket(`${s.url.replace('http', 'ws')}/api/v1/data/real_time?access_token=${token}`)
  await new Promise<void>((resolve, reject) => { ws.once('open', resolve); ws.once('error', reject) })
  t.equal(ws.readyState, WebSocket.OPEN)

  // Closing the server closes it.
  const closed = new Promise<number>(resolve => { ws.once('close', code => { resolve(code) }) })
  await s.stop()
  t.ok(await closed > 0, 'the open WebSocket was closed by the server')
})

t.test('a WebSocket route without an Upgrade: 426 with the JSON error body; HEAD without one', async t => {
  const s = await startTestService(t)
  await s.user('ann')
  const token = await s.token('ann', 'data:heart_rate:read')
  const get = await fetch(`${s.url}/api/v1/data/real_time?access_token=${token}`)
  t.equal(get.status, 426)
  t.equal(get.headers.get('upgrade'), 'websocket')
  t.same(await get.json(), { error_code: 9426, error_message: 'upgrade_required', detail: 'this is a WebSocket endpoint: connect with Upgrade: websocket' })
  const head = await fetch(`${s.url}/api/v1/data/real_time?access_token=${token}`, { method: 'HEAD' })
  t.equal(head.status, 426)
  t.equal(await head.text(), '')
})
