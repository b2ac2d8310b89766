// The hub's Pulsoid-compatible API on two instances at once (issue 42 §1): a token issued at the hub works on
// both, a WebSocket on either instance receives every reading of its member whether it was posted to the other
// instance or came from a box through the broker, the stored readings read the same from both (latest, history,
// statistics, sessions), and a token revoked through one instance ends the stream open on the other.
// Real PostgreSQL, real Mosquitto, hub instances as processes.
import t from 'tap'
import mqtt from 'mqtt'
import { startHubChain } from '../helpers/hub-process.ts'
import { openPgStores } from '../../hub/store/pg-stores.ts'
import { upstreamPayload, upstreamTopic, chainBoxPrefix } from '../../firmware-protocol/upstream.ts'
import { call, openWs, refused, wsUrl } from '../api/http/fetch.ts'
import { eventually } from '../helpers/wait.ts'

const ROOT = 'hub-api-test/v1'

t.test('the API of a hub of two instances', async t => {
  const { dbUrl, broker, hubs } = await startHubChain(t, { instances: 2, clientIdPrefix: 'hub-api', topicRoot: ROOT })
  const [one, two] = hubs.map(h => h.url) as [string, string]
  t.not(one, two, 'two instances, two addresses')
  const stores = await openPgStores({ url: dbUrl, gapMs: 5000, migrate: false, poolSize: 2 })
  t.teardown(async () => { await stores.close() })

  const alice = await stores.users.create({ username: 'alice', password: 'pw-alice', display_name: 'Alice', age: 30, weight_kg: 60, sex: 'female' })
  const bob = await stores.users.create({ username: 'bob', password: 'pw-bob' })
  const app = await stores.clients.create({ name: 'Chain app', redirect_uris: ['https://app.example/cb'] })
  const issue = async (profileId: string, scopes: string[]): Promise<string> => (await stores.tokens.issue({ client_id: app.client.client_id, profile_id: profileId, scopes, flow: 'manual', expires_in: 3600 })).access_token
  const read = await issue(alice.profile_id, ['data:heart_rate:read', 'data:statistics:read', 'profile:read'])
  const write = await issue(alice.profile_id, ['data:heart_rate:write'])
  const bobRead = await issue(bob.profile_id, ['data:heart_rate:read'])

  await t.test('a token issued at the hub is valid on every instance', async t => {
    for (const url of [one, two]) {
      const v = await call(url, 'GET', '/api/v1/token/validate', { token: read })
      t.equal(v.status, 200, url)
      t.match(v.json, { client_id: app.client.client_id, profile_id: alice.profile_id, scopes: ['data:heart_rate:read', 'data:statistics:read', 'profile:read'] })
      t.ok(v.json.expires_in > 3500 && v.json.expires_in <= 3600, 'expires_in in seconds')
      const none = await call(url, 'GET', '/api/v1/data/heart_rate/latest', { token: read })
      t.equal(none.status, 412, 'no reading yet')
      t.same(none.json, { error_code: 9412, error_message: 'no_heart_rate_data' })
      const unknown = await call(url, 'GET', '/api/v1/data/heart_rate/latest', { token: '11111111-2222-3333-4444-555555555555' })
      t.same([unknown.status, unknown.json], [401, { error_code: 7005, error_message: 'token_not_found' }])
    }
    const profile = await call(two, 'GET', '/api/v1/profile', { token: read })
    t.equal(profile.status, 200)
    t.same(profile.json, { channel: 'alice', username: 'alice', mobile_login: false, heart_rate: false })
    const wrongScope = await call(two, 'GET', '/api/v1/statistics', { token: bobRead })
    t.same([wrongScope.status, wrongScope.json], [400, { error_code: 7011, error_message: 'error_invalid_scope' }], 'every scope is checked, as on a box')
  })

  // Streams: Alice on both instances, Bob on the second (he must receive none of hers).
  const onTwo = await openWs(wsUrl(two, `/api/v1/data/real_time?access_token=${read}`))
  const onOne = await openWs(wsUrl(one, '/api/v1/data/real_time?response_mode=text_plain_only_heart_rate'), { authorization: `Bearer ${read}` })
  const bobs = await openWs(wsUrl(two, `/api/v1/data/real_time?access_token=${bobRead}`))
  const bobFrames: string[] = []
  bobs.ws.on('message', d => { bobFrames.push(d.toString()) })
  t.teardown(() => { onTwo.ws.terminate(); onOne.ws.terminate(); bobs.ws.terminate() })

  const t0 = Date.now() - 60_000
  await t.test('a reading posted to one instance streams on both', async t => {
    const posted = await call(one, 'POST', '/api/v1/data', { token: write, body: { measured_at: t0, data: { heart_rate: 71 } } })
    t.equal(posted.status, 200)
    t.same(JSON.parse(await onTwo.next()), { measured_at: t0, data: { heart_rate: 71 } }, 'the other instance\'s stream')
    t.equal(await onOne.next(), '71', 'the same instance\'s stream, text mode')
  })

  await t.test('a box\'s reading, through the broker, streams on both', async t => {
    const box = await mqtt.connectAsync(broker.url, { clientId: 'box-gym-a', protocolVersion: 5 })
    t.teardown(async () => { await box.endAsync() })
    const prefix = chainBoxPrefix(ROOT, 'gym-a')
    await box.publishAsync(upstreamTopic(prefix, alice.profile_id), upstreamPayload({ measured_at: t0 + 1000, heart_rate: 75, source: 'ble', device_id: 'C8:2F:9A:00:00:01' }), { qos: 1 })
    await box.publishAsync(upstreamTopic(prefix, alice.profile_id), upstreamPayload({ measured_at: t0 + 2000, heart_rate: 80, source: 'ble', device_id: 'C8:2F:9A:00:00:01' }), { qos: 1 })
    // The two instances share the box's topic, and readings they commit at the same moment may arrive in either
    // order (docs/hub.md, "Live readings"): both, whatever the order.
    const json = [JSON.parse(await onTwo.next()), JSON.parse(await onTwo.next())] as Array<{ measured_at: number }>
    t.same(json.sort((a, b) => a.measured_at - b.measured_at), [{ measured_at: t0 + 1000, data: { heart_rate: 75 } }, { measured_at: t0 + 2000, data: { heart_rate: 80 } }])
    t.same([await onOne.next(), await onOne.next()].sort(), ['75', '80'])
  })

  await t.test('stored readings read the same on both instances', async t => {
    for (const url of [one, two]) {
      const latest = await call(url, 'GET', '/api/v1/data/heart_rate/latest', { token: read })
      t.same([latest.status, latest.json], [200, { measured_at: t0 + 2000, data: { heart_rate: 80 } }], `latest on ${url}`)
      const history = await call(url, 'GET', `/api/v1/data/heart_rate/history?from=${t0 - 1}&to=${t0 + 60_000}`, { token: read })
      t.equal(history.status, 200)
      t.same(history.json.data.map((r: { measured_at: number, heart_rate: number }) => [r.measured_at - t0, r.heart_rate]), [[0, 71], [1000, 75], [2000, 80]], 'history across the box and the posting, in time order')
      const stats = await call(url, 'GET', '/api/v1/statistics?time_range=24h', { token: read })
      t.equal(stats.status, 200)
      t.match(stats.json, { maximum_beats_per_minute: 80, minimum_beats_per_minute: 71, average_beats_per_minute: 75.3, streamed_duration_in_seconds: 2 }, 'one rollup across the box\'s readings and the posted one')
      const sessions = await call(url, 'GET', `/api/v1/data/sessions?from=${t0 - 1}&to=${t0 + 60_000}`, { token: read })
      t.equal(sessions.status, 200, `sessions on ${url}`)
    }
    t.same(bobFrames, [], 'Bob\'s stream received none of Alice\'s readings')
  })

  await t.test('a token revoked through one instance ends the stream on the other', async t => {
    const revoked = await call(one, 'POST', '/oauth2/revoke', { raw: `token=${read}`, headers: { 'content-type': 'application/x-www-form-urlencoded' } })
    t.equal(revoked.status, 200)
    t.same(await onTwo.closed, { code: 1008, reason: 'token revoked' }, 'closed with 1008 on the other instance')
    t.same(await onOne.closed, { code: 1008, reason: 'token revoked' })
    const v = await eventually('validation refused on instance two', async () => {
      const a = await call(two, 'GET', '/api/v1/token/validate', { token: read })
      return a.status === 200 ? undefined : a
    })
    t.same([v.status, v.json], [401, { error_code: 7005, error_message: 'token_not_found' }])
    const again = await refused(wsUrl(two, `/api/v1/data/real_time?access_token=${read}`))
    t.equal(again.status, 401, 'no new stream with it')
  })
})
