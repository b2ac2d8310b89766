// WebSocket /api/v1/data/real_time over a listening server: both modes, query
// and header auth, refusal at the handshake, keep-alive, and a client that
// stops reading.
import t from 'tap'
import { connect } from 'node:net'
import { randomBytes } from 'node:crypto'
import { startTestService } from '../../helpers/service.ts'
import { call, openWs, refused, wsUrl } from './fetch.ts'
import { readingPayload } from '../../../api/http/realtime.ts'
import type { StoredReading } from '../../../api/pipeline/reading.ts'
import WebSocket from 'ws'

t.test('streams readings in json and text modes, query and header auth', async t => {
  const s = await startTestService(t)
  await s.user('alice')
  await s.user('bob')
  const w = await s.token('alice', 'data:heart_rate:write')
  const r = await s.token('alice', 'data:heart_rate:read')
  const bobWrite = await s.token('bob', 'data:heart_rate:write')

  const json = await openWs(wsUrl(s.url, `/api/v1/data/real_time?access_token=${r}`))
  const text = await openWs(wsUrl(s.url, '/api/v1/data/real_time?response_mode=text_plain_only_heart_rate'), { authorization: `Bearer ${r}` })
  t.teardown(() => { json.ws.terminate(); text.ws.terminate() })

  // Readings in the past: one ahead of the relay's clock is stored at receive time (clock-skew correction).
  const now = Date.now() - 10_000
  // Bob's reading must not reach Alice's stream.
  t.equal((await call(s.url, 'POST', '/api/v1/data', { token: bobWrite, body: { measured_at: now, data: { heart_rate: 120 } } })).status, 200)
  t.equal((await call(s.url, 'POST', '/api/v1/data', { token: w, body: { measured_at: now, data: { heart_rate: 65 } } })).status, 200)
  t.equal((await call(s.url, 'POST', '/api/v1/data', { token: w, body: { measured_at: now + 1000, data: { heart_rate: 66 } } })).status, 200)
  // Not stored, so not streamed.
  t.equal((await call(s.url, 'POST', '/api/v1/data', { token: w, body: { measured_at: now + 1500, data: { heart_rate: 0 } } })).status, 200)
  t.equal((await call(s.url, 'POST', '/api/v1/data', { token: w, body: { measured_at: now + 2000, data: { heart_rate: 67 } } })).status, 200)

  t.same(JSON.parse(await json.next()), { measured_at: now, data: { heart_rate: 65 } })
  t.same(JSON.parse(await json.next()), { measured_at: now + 1000, data: { heart_rate: 66 } })
  t.same(JSON.parse(await json.next()), { measured_at: now + 2000, data: { heart_rate: 67 } })
  t.equal(await text.next(), '65')
  t.equal(await text.next(), '66')
  t.equal(await text.next(), '67')
})

t.test('one reading reaches many viewers as text frames, serialized and encoded once per mode', async t => {
  const r: StoredReading = { profile_id: 'p', measured_at: 1_700_000_000_000, heart_rate: 71, source: 'http' }
  const json = readingPayload(r, 'json')
  t.equal(json.toString(), '{"measured_at":1700000000000,"data":{"heart_rate":71}}')
  t.equal(readingPayload(r, 'json'), json, 'the second viewer is sent the same Buffer, not a new encoding')
  t.equal(readingPayload(r, 'text_plain_only_heart_rate').toString(), '71')
  t.equal(readingPayload(r, 'text_plain_only_heart_rate'), readingPayload(r, 'text_plain_only_heart_rate'), 'once per mode')
  t.not(readingPayload({ ...r }, 'json'), json, 'another reading is encoded anew')

  const s = await startTestService(t)
  await s.user('alice')
  const w = await s.token('alice', 'data:heart_rate:write')
  const read = await s.token('alice', 'data:heart_rate:read')
  const frames: Array<{ mode: string, binary: boolean, data: string }> = []
  const viewers = await Promise.all(['json', 'json', 'json', 'text_plain_only_heart_rate', 'text_plain_only_heart_rate'].map(async mode => {
    const ws = new WebSocket(wsUrl(s.url, `/api/v1/data/real_time?access_token=${read}&response_mode=${mode}`))
    ws.on('message', (data, binary) => { frames.push({ mode, binary, data: data.toString() }) })
    await new Promise((resolve, reject) => { ws.once('open', resolve); ws.once('error', reject) })
    return ws
  }))
  t.teardown(() => { for (const ws of viewers) ws.terminate() })
  const now = Date.now() - 5000
  const got = new Promise<void>(resolve => { for (const ws of viewers) ws.on('message', () => { if (frames.length === viewers.length) resolve() }) })
  t.equal((await call(s.url, 'POST', '/api/v1/data', { token: w, body: { measured_at: now, data: { heart_rate: 88 } } })).status, 200)
  await got
  const json5 = JSON.stringify({ measured_at: now, data: { heart_rate: 88 } })
  t.same(frames.map(f => [f.mode, f.binary, f.data]).sort(), [
    ['json', false, json5], ['json', false, json5], ['json', false, json5],
    ['text_plain_only_heart_rate', false, '88'], ['text_plain_only_heart_rate', false, '88']
  ], 'each viewer one text frame (not binary) with its mode\'s message')
})

t.test('refuses bad handshakes with the HTTP status and JSON body', async t => {
  const s = await startTestService(t)
  await s.user('alice')
  const r = await s.token('alice', 'data:heart_rate:read')
  const w = await s.token('alice', 'data:heart_rate:write')
  const expiring = await s.token('alice', 'data:heart_rate:read', 2)
  // Opened while the token is valid; its expiry timer closes it, and we wait on that instead of sleeping.
  const beforeExpiry = await openWs(wsUrl(s.url, `/api/v1/data/real_time?access_token=${expiring}`))
  t.teardown(() => { beforeExpiry.ws.terminate() })
  const base = wsUrl(s.url, '/api/v1/data/real_time')

  let a = await refused(base)
  t.equal(a.status, 403)
  t.same(a.body, { error_code: 7009, error_message: 'error_authorization_header_is_not_present' })
  t.match(a.type, /application\/json/)
  a = await refused(`${base}?access_token=11111111-2222-3333-4444-555555555555`)
  t.equal(a.status, 401)
  t.same(a.body, { error_code: 7005, error_message: 'token_not_found' })
  a = await refused(base, { authorization: 'Bearer 11111111-2222-3333-4444-555555555555' })
  t.equal(a.status, 401)
  t.same(a.body, { error_code: 7005, error_message: 'token_not_found' })
  a = await refused(base, { authorization: 'Token abc' })
  t.equal(a.status, 403)
  t.same(a.body, { error_code: 7010, error_message: 'error_authorization_header_has_wrong_format' })
  a = await refused(`${base}?access_token=${w}`)
  t.equal(a.status, 400, 'write-only token lacks the read scope')
  t.same(a.body, { error_code: 7011, error_message: 'error_invalid_scope' })
  a = await refused(`${base}?access_token=${r}&response_mode=csv`)
  t.equal(a.status, 422)
  t.same(a.body, { error_code: 6004, error_message: 'error_invalid_response_mode' })
  t.same(await beforeExpiry.closed, { code: 1008, reason: 'token expired' })
  a = await refused(`${base}?access_token=${expiring}`)
  t.equal(a.status, 401)
  t.same(a.body, { error_code: 7006, error_message: 'token_expired' })
  t.equal(s.service.services.hub.streams.opened, 1, 'no stream was opened by a refused handshake')
})

t.test('keep-alive: a client that does not answer pings is terminated', async t => {
  const s = await startTestService(t)
  s.service.services.config.streams = { pingIntervalMs: 100 }
  const profile = await s.user('alice')
  const r = await s.token('alice', 'data:heart_rate:read')
  // A client that answers pings (ws does so automatically) stays connected across several intervals.
  const good = await openWs(wsUrl(s.url, `/api/v1/data/real_time?access_token=${r}`))
  let pings = 0
  good.ws.on('ping', () => { pings++ })
  await new Promise<void>(resolve => { const h = (): void => { if (pings >= 3) { good.ws.off('ping', h); resolve() } }; good.ws.on('ping', h) })
  t.equal(good.ws.readyState, good.ws.OPEN, 'answering client still open after 3 pings')
  // A raw client that completes the upgrade and ignores pings.
  const sock = await rawUpgrade(s.url, `/api/v1/data/real_time?access_token=${r}`)
  t.teardown(() => { sock.destroy(); good.ws.terminate() })
  await new Promise<void>(resolve => { sock.on('close', () => { resolve() }); sock.resume() })
  t.equal(s.service.services.hub.streams.ping_timeouts, 1)
  t.equal(s.service.services.hub.profileSubscribers(profile), 1, 'only the answering client is subscribed')
})

t.test('a client that stops reading is disconnected with bounded buffer', async t => {
  const s = await startTestService(t)
  const maxBufferedBytes = 64 * 1024
  s.service.services.config.streams = { maxBufferedBytes, pingIntervalMs: 600_000 }
  const profile = await s.user('alice')
  const r = await s.token('alice', 'data:heart_rate:read')
  const sock = await rawUpgrade(s.url, `/api/v1/data/real_time?access_token=${r}`)
  sock.pause() // never read again
  t.teardown(() => { sock.destroy() })
  const hub = s.service.services.hub
  t.equal(hub.profileSubscribers(profile), 1)
  // Publish straight into the hub (what the pipeline does after each write) until the stream gives up.
  let n = 0
  const t0 = Date.now()
  while (hub.streams.slow_disconnects === 0) {
    for (let i = 0; i < 500; i++) hub.publishReading({ profile_id: profile, measured_at: t0 + n++, heart_rate: 60 + (n % 100), source: 'sim' })
    await new Promise(resolve => setImmediate(resolve))
    if (n > 5_000_000) break
  }
  t.equal(hub.streams.slow_disconnects, 1, `disconnected after ${n} messages`)
  t.equal(hub.profileSubscribers(profile), 0, 'unsubscribed from the hub')
  t.ok(hub.streams.last_slow_buffered_bytes > maxBufferedBytes, 'closed because the buffer passed the bound')
  t.ok(hub.streams.last_slow_buffered_bytes < maxBufferedBytes + 1024, `buffer stayed bounded: ${hub.streams.last_slow_buffered_bytes} bytes`)
  // The server side closes the socket (terminate after the close grace period).
  await new Promise<void>(resolve => { const check = (): void => { if (hub.streams.open === 0) resolve(); else setTimeout(check, 50) }; check() })
  t.equal(hub.streams.open, 0, 'no stream left open')
})

/** A raw TCP WebSocket client: sends the upgrade, reads the 101 answer, then does nothing. */
async function rawUpgrade (base: string, path: string): Promise<import('node:net').Socket> {
  const url = new URL(base)
  const sock = connect(Number(url.port), url.hostname)
  await new Promise<void>((resolve, reject) => { sock.once('connect', resolve); sock.once('error', reject) })
  sock.write(`GET ${path} HTTP/1.1\r\nHost: ${url.host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: ${randomBytes(16).toString('base64')}\r\nSec-WebSocket-Version: 13\r\n\r\n`)
  await new Promise<void>((resolve, reject) => {
    let head = ''
    const onData = (c: Buffer): void => {
      head += c.toString('latin1')
      if (head.includes('\r\n\r\n')) {
        sock.off('data', onData)
        sock.pause()
        if (head.startsWith('HTTP/1.1 101')) resolve()
        else reject(new Error(`upgrade refused: ${head.split('\r\n')[0]}`))
      }
    }
    sock.on('data', onData)
  })
  return sock
}
