// A stream lives no longer than the authorization it was opened with: every
// path that ends a token (revoke, refresh rotation, refresh replay, code
// reuse, disconnect app, expiry) closes the open /api/v1/data/real_time and
// /api/v2/data/rooms/{id}/real_time sockets with 1008 and a reason, and so do
// a deleted widget and a rotated display link for their capability streams.
// Over a listening server; each test waits on the close event.
import t from 'tap'
import { startTestService, type TestService } from '../../helpers/service.ts'
import { call, openWs, refused, wsUrl } from './fetch.ts'
import { authorize, codeFrom, post, signedInBrowser } from '../oauth/helpers.ts'

const REDIRECT = 'https://app.example/cb'
/** The bound: a stream closes within 1 s of the event. */
const BOUND_MS = 1000

/** The close event of a stream; rejects after a generous bound, so a stream that never closes fails its own test. */
async function closeOf (c: { closed: Promise<{ code: number, reason: string }> }, ms = 20_000): Promise<{ code: number, reason: string }> {
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<never>((_resolve, reject) => { timer = setTimeout(() => { reject(new Error(`the stream stayed open for ${ms} ms`)) }, ms) })
  try { return await Promise.race([c.closed, late]) } finally { clearTimeout(timer) }
}

interface CodeGrant { id: string, secret: string, code: string, access: string, refresh: string }

/** A confidential client, the user signed in, and the tokens of one authorization-code exchange. */
async function codeGrant (s: TestService, username: string, scope = 'data:heart_rate:read'): Promise<CodeGrant> {
  const { client_id: id, client_secret: secret } = await s.client([REDIRECT])
  const { browser } = await signedInBrowser(s, username)
  const code = codeFrom(await authorize(browser, { client_id: id, redirect_uri: REDIRECT, scope }))
  const tok = await post(`${s.url}/oauth2/token`, { grant_type: 'authorization_code', client_id: id, client_secret: secret ?? '', code, redirect_uri: REDIRECT })
  if (tok.status !== 200) throw new Error(`code exchange failed: ${tok.status} ${tok.text}`)
  return { id, secret: secret ?? '', code, access: tok.json.access_token, refresh: tok.json.refresh_token }
}

async function realtime (s: TestService, token: string): ReturnType<typeof openWs> {
  const c = await openWs(wsUrl(s.url, `/api/v1/data/real_time?access_token=${token}`))
  t.teardown(() => { c.ws.terminate() })
  return c
}

t.test('revoking the access token (POST /oauth2/revoke) closes its real-time stream with 1008', async t => {
  const s = await startTestService(t)
  const g = await codeGrant(s, 'alice')
  const other = await codeGrant(s, 'bob')
  const stream = await realtime(s, g.access)
  const untouched = await realtime(s, other.access)
  const t0 = Date.now()
  const r = await post(`${s.url}/oauth2/revoke`, { token: g.access, client_id: g.id, client_secret: g.secret })
  t.equal(r.status, 200)
  const closed = await closeOf(stream)
  t.same(closed, { code: 1008, reason: 'token revoked' })
  t.ok(Date.now() - t0 < BOUND_MS, `closed within ${BOUND_MS} ms of the revocation`)
  t.equal(untouched.ws.readyState, untouched.ws.OPEN, 'another grant\'s stream stays open')
  t.equal(s.service.services.hub.streams.open, 1)
})

t.test('revoking the refresh token revokes its family and closes the stream of the access token', async t => {
  const s = await startTestService(t)
  const g = await codeGrant(s, 'alice')
  const stream = await realtime(s, g.access)
  t.equal((await post(`${s.url}/oauth2/revoke`, { token: g.refresh, client_id: g.id, client_secret: g.secret })).status, 200)
  t.same(await closeOf(stream), { code: 1008, reason: 'token revoked' })
})

t.test('refresh rotation ends the old access token, so its stream closes; a replay closes the new one', async t => {
  const s = await startTestService(t)
  const g = await codeGrant(s, 'alice')
  const old = await realtime(s, g.access)
  const params = { grant_type: 'refresh_token', client_id: g.id, client_secret: g.secret, refresh_token: g.refresh }
  const rotated = await post(`${s.url}/oauth2/token`, params)
  t.equal(rotated.status, 200)
  t.same(await closeOf(old), { code: 1008, reason: 'token revoked' })
  const fresh = await realtime(s, rotated.json.access_token)
  const replay = await post(`${s.url}/oauth2/token`, params)
  t.equal(replay.status, 400)
  t.equal(replay.json.error, 'invalid_grant')
  t.same(await closeOf(fresh), { code: 1008, reason: 'token revoked' }, 'the replay revoked the whole family')
})

t.test('a reused authorization code revokes the grant and closes its stream', async t => {
  const s = await startTestService(t)
  const g = await codeGrant(s, 'alice')
  const stream = await realtime(s, g.access)
  const again = await post(`${s.url}/oauth2/token`, { grant_type: 'authorization_code', client_id: g.id, client_secret: g.secret, code: g.code, redirect_uri: REDIRECT })
  t.equal(again.status, 400)
  t.same(await closeOf(stream), { code: 1008, reason: 'token revoked' })
})

t.test('disconnecting the app (operator DELETE /admin/users/:u/clients/:c and the member page) closes its streams', async t => {
  const s = await startTestService(t)
  await s.user('alice')
  const manual = await s.token('alice', 'data:heart_rate:read')
  const stream = await realtime(s, manual)
  const t0 = Date.now()
  const answer = await s.admin('DELETE', '/admin/users/alice/clients/hr-relay-admin')
  t.equal(answer.revoked > 0, true)
  t.same(await closeOf(stream), { code: 1008, reason: 'token revoked' })
  t.ok(Date.now() - t0 < BOUND_MS, `closed within ${BOUND_MS} ms`)

  const g = await codeGrant(s, 'bob')
  const viaApp = await realtime(s, g.access)
  await s.admin('DELETE', `/admin/users/bob/clients/${g.id}`)
  t.same(await closeOf(viaApp), { code: 1008, reason: 'token revoked' })
})

t.test('a stream closes with 1008 when its token expires (timer, no poll), and the token is then refused', async t => {
  const s = await startTestService(t)
  await s.user('alice')
  const short = await s.token('alice', 'data:heart_rate:read', 2)
  const stream = await realtime(s, short)
  const closed = await closeOf(stream)
  t.same(closed, { code: 1008, reason: 'token expired' })
  const a = await refused(wsUrl(s.url, `/api/v1/data/real_time?access_token=${short}`))
  t.equal(a.status, 401)
  t.same(a.body, { error_code: 7006, error_message: 'token_expired' })
})

t.test('room member stream: token revocation and expiry close it with 1008; membership is still checked', async t => {
  const s = await startTestService(t)
  await s.user('alice')
  await s.user('bob')
  const room = await s.admin('POST', '/admin/rooms', { name: 'Spin' })
  await s.admin('POST', `/admin/rooms/${room.room_id}/members`, { username: 'alice' })
  await s.admin('POST', `/admin/rooms/${room.room_id}/members`, { username: 'bob' })
  const path = `/api/v2/data/rooms/${room.room_id}/real_time`
  const g = await codeGrant(s, 'carol', 'data:room:read')
  await s.admin('POST', `/admin/rooms/${room.room_id}/members`, { username: 'carol' })

  const revoked = await openWs(wsUrl(s.url, `${path}?access_token=${g.access}`))
  const expiring = await openWs(wsUrl(s.url, `${path}?access_token=${await s.token('bob', 'data:room:read', 2)}`))
  const stays = await openWs(wsUrl(s.url, `${path}?access_token=${await s.token('alice', 'data:room:read')}`))
  t.teardown(() => { for (const c of [revoked, expiring, stays]) c.ws.terminate() })

  t.equal((await post(`${s.url}/oauth2/revoke`, { token: g.access, client_id: g.id, client_secret: g.secret })).status, 200)
  t.same(await closeOf(revoked), { code: 1008, reason: 'token revoked' })
  t.same(await closeOf(expiring), { code: 1008, reason: 'token expired' })
  t.equal(stays.ws.readyState, stays.ws.OPEN)
  const w = await s.token('alice', 'data:heart_rate:write')
  const now = Date.now()
  t.equal((await call(s.url, 'POST', '/api/v1/data', { token: w, body: { measured_at: now, data: { heart_rate: 80 } } })).status, 200)
  t.equal(JSON.parse(await stays.next()).heart_rate.bpm, 80, 'the remaining stream still gets readings')
})

t.test('capability streams: a deleted widget and a rotated display link close their streams with 1008', async t => {
  const s = await startTestService(t)
  await s.user('alice')
  const wt = await s.token('alice', 'widgets:update')
  const created = await call(s.url, 'POST', '/api/v1/widgets', { token: wt, body: { meta_id: 'bf6bdf21-10a7-4a28-97ec-a239e6c77f8b', name: 'bpm', configuration: {} } })
  t.equal(created.status, 200)
  const widget = await openWs(wsUrl(s.url, `/widgets/${created.json.widget.id as string}/stream`))
  const room = await s.admin('POST', '/admin/rooms', { name: 'Floor' })
  const display = await openWs(wsUrl(s.url, `/rooms/${room.room_id as string}/stream?display_id=${room.display_id as string}`))
  t.teardown(() => { widget.ws.terminate(); display.ws.terminate() })

  t.equal((await call(s.url, 'DELETE', `/api/v1/widgets/${created.json.widget.id as string}`, { token: wt })).status, 200)
  t.same(await closeOf(widget), { code: 1008, reason: 'widget deleted' })
  await s.admin('POST', `/admin/rooms/${room.room_id as string}/display`)
  t.same(await closeOf(display), { code: 1008, reason: 'no longer allowed in this room' })
})
