// The OAuth flows on a hub of two instances (hub/store/pg-oauth.ts): every step of a flow may reach either
// instance. Sign-in on one and consent and exchange on the other; one code redeemed on both at once (exactly one
// answer has tokens, and the reuse revokes them, RFC 9700 4.1.2 / RFC 6749 4.1.2); refresh rotation and its replay
// across instances; client credentials; a device flow approved on one and polled on the other; sign-out and
// erasure end the session on both. Real PostgreSQL, hub instances as processes.
import t from 'tap'
import pg from 'pg'
import { startHubChain } from '../helpers/hub-process.ts'
import { openPgStores } from '../../hub/store/pg-stores.ts'
import { eraseChainMember } from '../../hub/membership/erase.ts'
import { eventually } from '../helpers/wait.ts'
import { digest } from '../../api/store/secrets.ts'
import type { WriteOp } from '../../api/store/types.ts'
import { PgOAuthCodes } from '../../hub/store/pg-oauth.ts'
import { Browser, authorize, basic, codeFrom, csrfOf, pkcePair, post, validate, type Answer } from '../api/oauth/helpers.ts'

const REDIRECT = 'https://app.example/cb'

/** The same browser (its cookie) talking to another instance. */
function on (base: string, browser: Browser): Browser {
  const b = new Browser(base)
  b.cookie = browser.cookie
  return b
}

t.test('the OAuth flows on a hub of two instances', async t => {
  const { dbUrl, hubs, postgres } = await startHubChain(t, { instances: 2, clientIdPrefix: 'hub-oauth', topicRoot: 'hub-oauth-test/v1' })
  const [one, two] = hubs.map(h => h.url) as [string, string]
  const stores = await openPgStores({ url: dbUrl, gapMs: 5000, migrate: false, poolSize: 2 })
  t.teardown(async () => { await stores.close() })
  const db = new pg.Pool({ connectionString: dbUrl, max: 1 })
  // PostgreSQL is stopped by the last test: an idle connection of this pool then reports its end.
  db.on('error', () => {})
  t.teardown(async () => { await db.end() })

  const alice = await stores.users.create({ username: 'alice', password: 'pw-alice' })
  const pub = (await stores.clients.create({ name: 'Phone app', redirect_uris: [REDIRECT], public: true })).client
  const conf = await stores.clients.create({ name: 'Server app', redirect_uris: [REDIRECT] })
  const secret = conf.client_secret ?? ''
  const confAuth = { authorization: basic(conf.client.client_id, secret) }

  // Signed in on instance one: the sign-in form rendered by one is posted to two (anonymous sessions are shared too).
  const signIn = async (username: string, password: string): Promise<Browser> => {
    const b1 = new Browser(one)
    const page = await b1.get('/signin')
    t.equal(page.status, 200)
    const b2 = on(two, b1)
    const r = await b2.post('/signin', { csrf: csrfOf(page.text), username, password, return_to: '/account' })
    t.equal(r.status, 303, `${username} signed in`)
    b1.cookie = b2.cookie
    return b1
  }
  const aliceOn1 = await signIn('alice', 'pw-alice')
  t.equal((await aliceOn1.get('/account')).status, 200, 'the session started on two is known on one')

  const exchange = async (base: string, code: string, verifier?: string, headers: Record<string, string> = {}, clientId = pub.client_id): Promise<Answer> =>
    await post(`${base}/oauth2/token`, { grant_type: 'authorization_code', code, redirect_uri: REDIRECT, client_id: clientId, ...(verifier === undefined ? {} : { code_verifier: verifier }) }, headers)
  const codeFor = async (browser: Browser, clientId: string, challenge?: string): Promise<string> =>
    codeFrom(await authorize(browser, { client_id: clientId, redirect_uri: REDIRECT, scope: 'data:heart_rate:read profile:read', extra: challenge === undefined ? {} : { code_challenge: challenge, code_challenge_method: 'S256' } }))

  await t.test('authorization code with PKCE: signed in on one, consent and exchange on two', async t => {
    const { verifier, challenge } = pkcePair()
    const code = await codeFor(on(two, aliceOn1), pub.client_id, challenge)
    const wrong = await exchange(two, code, pkcePair().verifier)
    t.same([wrong.status, wrong.json?.error], [400, 'invalid_grant'], 'a wrong verifier is refused')
    // The wrong verifier did not use the code up.
    const r = await exchange(two, code, verifier)
    t.equal(r.status, 200, r.text)
    t.match(r.json, { token_type: 'bearer', scope: 'data:heart_rate:read profile:read', refresh_token: String })
    const v = await validate(one, r.json.access_token)
    t.same([v.status, v.json?.profile_id, v.json?.client_id], [200, alice.profile_id, pub.client_id], 'the token works on one')
    const again = await exchange(one, code, verifier)
    t.same([again.status, again.json?.error], [400, 'invalid_grant'], 'the code is used up on the other instance too')
    t.equal((await validate(two, r.json.access_token)).status, 401, 'and its reuse revoked the tokens issued from it')
    const stored = async (text: string): Promise<number> => (await db.query<{ n: number }>('SELECT count(*)::int AS n FROM oauth_codes WHERE digest = $1 OR record::text LIKE $2', [text, `%${text}%`])).rows[0]?.n ?? -1
    t.same([await stored(digest(code)), await stored(code)], [1, 0], 'the code is stored by its digest only')
  })

  await t.test('one code redeemed on both instances at once: exactly one 200, and the reuse revokes its tokens', async t => {
    for (let round = 0; round < 3; round++) {
      const { verifier, challenge } = pkcePair()
      const code = await codeFor(aliceOn1, pub.client_id, challenge)
      const answers = await Promise.all([exchange(one, code, verifier), exchange(two, code, verifier)])
      t.same(answers.map(a => a.status).sort(), [200, 400], `round ${round}: one exchange wins`)
      const won = answers.find(a => a.status === 200)
      const lost = answers.find(a => a.status === 400)
      t.equal(lost?.json?.error, 'invalid_grant')
      t.equal((await validate(one, won?.json?.access_token)).status, 401, 'the winner\'s access token is revoked')
      const refreshed = await post(`${two}/oauth2/token`, { grant_type: 'refresh_token', refresh_token: won?.json?.refresh_token, client_id: pub.client_id })
      t.same([refreshed.status, refreshed.json?.error], [400, 'invalid_grant'], 'and its refresh token')
    }
  })

  await t.test('the store: of two redemptions of one code, or two decisions of one device session, racing in PostgreSQL, one writes', async t => {
    // Two stores, two per-process locks: only the conditional UPDATE keeps them apart.
    const a = new PgOAuthCodes(stores.pool)
    const b = new PgOAuthCodes(stores.pool)
    for (let round = 0; round < 5; round++) {
      const code = await a.createCode({ client_id: pub.client_id, redirect_uri: REDIRECT, profile_id: alice.profile_id, scopes: ['profile:read'], code_challenge: null }, 600)
      const key = digest(code)
      const rec = await b.getCode(key)
      if (rec === undefined) throw new Error('code not stored')
      const opsA: WriteOp[] = []
      const opsB: WriteOp[] = []
      const issuedA = stores.tokens.prepare({ client_id: rec.client_id, profile_id: rec.profile_id, scopes: rec.scopes, flow: 'authorization_code', expires_in: 60, family: rec.family }, opsA)
      const issuedB = stores.tokens.prepare({ client_id: rec.client_id, profile_id: rec.profile_id, scopes: rec.scopes, flow: 'authorization_code', expires_in: 60, family: rec.family }, opsB)
      const now = Date.now()
      const won = await Promise.all([a.redeemCode(key, rec, opsA, now), b.redeemCode(key, rec, opsB, now)])
      t.same([...won].sort(), [false, true], `round ${round}: one redemption`)
      const valid = await Promise.all([issuedA, issuedB].map(async i => (await stores.tokens.lookup(i.access_token)).ok))
      t.same(valid, won, 'only the winner\'s tokens were written')
      t.type((await a.getCode(key))?.used_at, 'number')
    }
    const started = await a.createDevice({ client_id: pub.client_id, scopes: ['profile:read'] }, 600, 3)
    const found = await b.deviceByUserCode(started.user_code)
    if (found === undefined) throw new Error('device session not found by its user code')
    const decided = await Promise.all([
      a.updateDevice(found.key, found.rec, { ...found.rec, status: 'approved', profile_id: alice.profile_id }, { release: true }),
      b.updateDevice(found.key, found.rec, { ...found.rec, status: 'denied', profile_id: alice.profile_id }, { release: true })
    ])
    t.same([...decided].sort(), [false, true], 'one decision')
    t.equal((await a.getDevice(found.key))?.status, decided[0] === true ? 'approved' : 'denied')
    t.equal(await b.deviceByUserCode(started.user_code), undefined, 'the user code is released')
  })

  await t.test('refresh rotation across instances; a replay on the other revokes the family', async t => {
    const code = await codeFor(on(two, aliceOn1), conf.client.client_id)
    const first = await exchange(one, code, undefined, confAuth, conf.client.client_id)
    t.equal(first.status, 200, first.text)
    const rotated = await post(`${two}/oauth2/token`, { grant_type: 'refresh_token', refresh_token: first.json.refresh_token }, confAuth)
    t.equal(rotated.status, 200, rotated.text)
    t.not(rotated.json.refresh_token, first.json.refresh_token, 'a new refresh token')
    t.equal((await validate(one, rotated.json.access_token)).status, 200, 'the new access token works on one')
    const replay = await post(`${one}/oauth2/token`, { grant_type: 'refresh_token', refresh_token: first.json.refresh_token }, confAuth)
    t.same([replay.status, replay.json?.error], [400, 'invalid_grant'], 'the old refresh token is refused')
    t.equal((await validate(two, rotated.json.access_token)).status, 401, 'and the replay revoked the grant')
  })

  await t.test('client credentials', async t => {
    const r = await post(`${one}/oauth2/token`, { grant_type: 'client_credentials' }, confAuth)
    t.equal(r.status, 200, r.text)
    t.equal(r.json.scope, 'profile:create')
    const v = await validate(two, r.json.access_token)
    t.same([v.status, v.json?.profile_id, v.json?.scopes], [200, null, ['profile:create']])
    const publicOne = await post(`${two}/oauth2/token`, { grant_type: 'client_credentials', client_id: pub.client_id })
    t.same([publicOne.status, publicOne.json?.error], [400, 'unauthorized_client'])
  })

  await t.test('device flow: started and approved on one, polled on two', async t => {
    const started = await post(`${one}/oauth2/device_authorization`, { client_id: pub.client_id, scope: 'data:heart_rate:read' })
    t.equal(started.status, 200, started.text)
    t.equal(started.json.verification_uri, `${one}/device`, 'without http.public_url: the address the instance listens on + /device')
    const poll = async (base: string): Promise<Answer> => await post(`${base}/oauth2/token`, { grant_type: 'urn:ietf:params:oauth:grant-type:device_code', device_code: started.json.device_code, client_id: pub.client_id })
    const pending = await poll(two)
    t.same([pending.status, pending.json?.error], [400, 'authorization_pending'])
    const page = await aliceOn1.post('/device', { csrf: csrfOf((await aliceOn1.get('/device')).text), user_code: started.json.user_code })
    t.equal(page.status, 200, 'the consent page for the code')
    const decided = await aliceOn1.post('/device/decision', { csrf: csrfOf(page.text), user_code: started.json.user_code, decision: 'allow' })
    t.equal(decided.status, 200)
    t.match(decided.text, /You allowed access/)
    const reuse = await on(two, aliceOn1).post('/device', { csrf: csrfOf(page.text), user_code: started.json.user_code })
    t.equal(reuse.status, 400, 'a decided user code no longer works, on either instance')
    // The test does not wait out the polling interval: the last poll is moved back (as test/api/oauth/device.test.ts).
    await db.query("UPDATE device_sessions SET record = jsonb_set(record, '{last_poll_at}', 'null')")
    const issued = await poll(two)
    t.equal(issued.status, 200, issued.text)
    t.equal((await validate(one, issued.json.access_token)).json?.profile_id, alice.profile_id)
    const twice = await poll(one)
    t.same([twice.status, twice.json?.error], [400, 'invalid_grant'], 'one token per device session')
  })

  await t.test('signing out on one instance ends the session on the other', async t => {
    const bob = await stores.users.create({ username: 'bob', password: 'pw-bob' })
    t.ok(bob.profile_id)
    const b1 = await signIn('bob', 'pw-bob')
    const b2 = on(two, b1)
    t.equal((await b2.get('/account')).status, 200, 'known on two')
    const account = await b1.get('/account')
    const out = await b1.post('/signout', { csrf: csrfOf(account.text) })
    t.equal(out.status, 303)
    const after = await eventually('the session ended on two', async () => {
      const a = await call2(b2, '/account')
      return a.status === 303 ? a : undefined
    })
    t.match(after.headers.get('location'), /^\/signin/)
  })

  await t.test('erasure at the hub deletes the member\'s codes, device sessions and sign-in sessions', async t => {
    const carol = await stores.users.create({ username: 'carol', password: 'pw-carol' })
    const b1 = await signIn('carol', 'pw-carol')
    await codeFor(b1, pub.client_id, pkcePair().challenge)
    const started = await post(`${one}/oauth2/device_authorization`, { client_id: pub.client_id, scope: 'data:heart_rate:read' })
    const page = await b1.post('/device', { csrf: csrfOf((await b1.get('/device')).text), user_code: started.json.user_code })
    t.equal((await b1.post('/device/decision', { csrf: csrfOf(page.text), user_code: started.json.user_code, decision: 'allow' })).status, 200)
    const erased = await eraseChainMember(stores, carol)
    t.match(erased, { account: 1, oauth_codes: 2, sign_in_sessions: 1 })
    const left = async (table: string): Promise<number> => (await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table} WHERE profile_id = $1`, [carol.profile_id])).rows[0]?.n ?? -1
    t.same([await left('oauth_codes'), await left('device_sessions'), await left('sign_in_sessions')], [0, 0, 0])
    for (const base of [one, two]) {
      const a = await eventually(`the session ended on ${base}`, async () => {
        const r = await call2(on(base, b1), '/account')
        return r.status === 303 ? r : undefined
      })
      t.match(a.headers.get('location'), /^\/signin/)
    }
  })

  // Last but one: it leaves this machine's address at the sign-in limit for a minute.
  await t.test('wrong passwords are counted by both instances together', async t => {
    await stores.users.create({ username: 'dave', password: 'pw-dave' })
    const wrong = async (base: string, password: string): Promise<Answer> => {
      const b = new Browser(base)
      const page = await b.get('/signin')
      return await b.post('/signin', { csrf: csrfOf(page.text), username: 'dave', password, return_to: '/account' })
    }
    const statuses: number[] = []
    for (let i = 0; i < 10; i++) statuses.push((await wrong(i % 2 === 0 ? one : two, `wrong-${i}`)).status)
    t.same(statuses, Array(10).fill(401), 'ten wrong passwords, five on each instance, are answered 401')
    for (const base of [one, two]) {
      const refused = await wrong(base, 'pw-dave')
      t.equal(refused.status, 429, `the eleventh attempt on ${base} is refused, even with the right password`)
      t.ok(Number(refused.headers.get('retry-after')) >= 1 && Number(refused.headers.get('retry-after')) <= 60, 'with Retry-After within the minute')
    }
  })

  await t.test('PostgreSQL out of reach: 503 with Retry-After, not 500', async t => {
    await postgres.stop()
    t.teardown(async () => { await postgres.start() })
    const b = new Browser(two)
    const page = await b.get('/signin')
    const r = await b.post('/signin', { csrf: csrfOf(page.text), username: 'dave', password: 'pw-dave', return_to: '/account' })
    t.equal(r.status, 503)
    t.equal(r.headers.get('retry-after'), '1')
    t.match(JSON.parse(r.text), { error_code: 9503, error_message: 'storage_busy' })
  })
})

/** A GET that does not follow redirects and keeps no cookie. */
async function call2 (browser: Browser, path: string): Promise<Answer> {
  return await on(browser.base, browser).get(path)
}
