// Chat-app rich-presence configuration over a listening server.
import t from 'tap'
import { startTestService } from '../../helpers/service.ts'
import { call } from './fetch.ts'

const PATH = '/api/v1/chatapp/rich_presence/configuration'
const UNSET = { enabled: null, show_heart_rate: null, details_template: null, state_template: null, large_image_text: null }
const INVALID_SCOPE = { error_code: 7011, error_message: 'error_invalid_scope' }
const PREMIUM_REQUIRED = { error_code: 7007, error_message: 'premium_required' }

t.test('round trip: nothing stored reads every key null; a write replaces the whole object and stores null for each key it leaves out', async t => {
  const s = await startTestService(t)
  const alice = await s.user('alice', { premium: 'trial' })
  await s.user('bob', { premium: 'lifetime' })
  const r = await s.token('alice', 'chatapp:rich_presence:config:read')
  const w = await s.token('alice', 'chatapp:rich_presence:config:write')
  const bob = await s.token('bob', 'chatapp:rich_presence:config:read')
  const stored = async (): Promise<unknown> => await s.service.services.store.sub<unknown>('rich_presence').get(alice)

  let a = await call(s.url, 'GET', PATH, { token: r })
  t.equal(a.status, 200)
  t.equal(a.text, '{"configuration":{"enabled":null,"show_heart_rate":null,"details_template":null,"state_template":null,"large_image_text":null}}', 'nothing stored: every key null')
  t.equal(await stored(), undefined, 'a read stores nothing')

  const full = { enabled: true, show_heart_rate: false, details_template: 'Running at {heart_rate}', state_template: 'Zone 3', large_image_text: 'x'.repeat(128) }
  a = await call(s.url, 'POST', PATH, { token: w, body: { configuration: full } })
  t.equal(a.status, 200)
  t.same(a.json, { configuration: full })
  t.same(await stored(), full)
  a = await call(s.url, 'GET', PATH, { token: r })
  t.same(a.json, { configuration: full })
  a = await call(s.url, 'GET', PATH, { token: bob })
  t.same(a.json, { configuration: UNSET }, 'another user does not see it')

  a = await call(s.url, 'POST', PATH, { token: w, body: { configuration: { enabled: true, state_template: 'Resting' } } })
  t.equal(a.status, 200)
  t.equal(a.text, '{"configuration":{"enabled":true,"show_heart_rate":null,"details_template":null,"state_template":"Resting","large_image_text":null}}', 'keys left out are null, not a default')
  t.equal(JSON.stringify(await stored()), '{"enabled":true,"show_heart_rate":null,"details_template":null,"state_template":"Resting","large_image_text":null}', 'and stored as null')
  a = await call(s.url, 'GET', PATH, { token: r })
  t.same(a.json, { configuration: { ...UNSET, enabled: true, state_template: 'Resting' } })

  // What a client read can be written back as it is: null is accepted and stays null.
  a = await call(s.url, 'POST', PATH, { token: w, body: a.json })
  t.equal(a.status, 200)
  t.same(a.json, { configuration: { ...UNSET, enabled: true, state_template: 'Resting' } })
  a = await call(s.url, 'POST', PATH, { token: w, body: { configuration: { show_heart_rate: false, large_image_text: null } } })
  t.same(a.json, { configuration: { ...UNSET, show_heart_rate: false } }, 'an explicit null is null')
  a = await call(s.url, 'POST', PATH, { token: w, body: { configuration: {} } })
  t.same(a.json, { configuration: UNSET }, 'an empty object unsets every key')
  t.same(await stored(), UNSET)
})

t.test('bad types, unknown keys and long strings: 400 7013, nothing changed', async t => {
  const s = await startTestService(t)
  await s.user('alice', { premium: 'subscription' })
  const r = await s.token('alice', 'chatapp:rich_presence:config:read')
  const w = await s.token('alice', 'chatapp:rich_presence:config:write')
  const stored = { enabled: true, show_heart_rate: true, details_template: 'a', state_template: 'b', large_image_text: 'c' }
  t.equal((await call(s.url, 'POST', PATH, { token: w, body: { configuration: stored } })).status, 200)
  for (const [what, body] of [
    ['enabled a string', { configuration: { enabled: 'yes' } }],
    ['enabled a number', { configuration: { enabled: 1 } }],
    ['show_heart_rate a string', { configuration: { show_heart_rate: 'true' } }],
    ['details_template a number', { configuration: { details_template: 5 } }],
    ['state_template a boolean', { configuration: { state_template: false } }],
    ['details_template 129 characters', { configuration: { details_template: 'x'.repeat(129) } }],
    ['state_template 129 characters', { configuration: { state_template: 'x'.repeat(129) } }],
    ['large_image_text 129 characters', { configuration: { large_image_text: 'é'.repeat(129) } }],
    ['unknown key', { configuration: { small_image_text: 'x' } }],
    ['unknown top-level key', { configuration: {}, extra: 1 }],
    ['no configuration', {}],
    ['configuration an array', { configuration: [] }],
    ['configuration null', { configuration: null }]
  ] as const) {
    const a = await call(s.url, 'POST', PATH, { token: w, body })
    t.equal(a.status, 400, what)
    t.equal(a.json.error_code, 7013, what)
    t.equal(a.json.error_message, 'invalid_request', what)
  }
  const a = await call(s.url, 'POST', PATH, { token: w, raw: '{"configuration": {' })
  t.equal(a.status, 400, 'malformed JSON')
  t.equal(a.json.error_code, 7013)
  t.same((await call(s.url, 'GET', PATH, { token: r })).json, { configuration: stored }, 'refused writes changed nothing')
})

t.test('feature off (no active premium, no grant): 402 7007 on read and write; a grant opens both', async t => {
  const s = await startTestService(t)
  await s.user('free')
  await s.user('lapsed', { premium: 'subscription', premium_expires_at: Date.now() - 1000 })
  await s.user('gamer')
  await s.admin('POST', '/admin/users/gamer/features', { feature_id: 'game_mod' })
  for (const user of ['free', 'lapsed', 'gamer']) {
    const token = await s.token(user, 'chatapp:rich_presence:config:read chatapp:rich_presence:config:write')
    let a = await call(s.url, 'GET', PATH, { token })
    t.equal(a.status, 402, `${user} read`)
    t.same(a.json, PREMIUM_REQUIRED, `${user} read`)
    a = await call(s.url, 'POST', PATH, { token, body: { configuration: { enabled: true } } })
    t.equal(a.status, 402, `${user} write`)
    t.same(a.json, PREMIUM_REQUIRED, `${user} write`)
    a = await call(s.url, 'POST', PATH, { token, body: { configuration: { enabled: 'bad' } } })
    t.equal(a.status, 402, `${user}: the feature is checked before the body`)
  }
  await s.admin('POST', '/admin/users/free/features', { feature_id: 'chatapp_rich_presence' })
  const token = await s.token('free', 'chatapp:rich_presence:config:read chatapp:rich_presence:config:write')
  let a = await call(s.url, 'POST', PATH, { token, body: { configuration: { enabled: true } } })
  t.equal(a.status, 200, 'an individual grant turns the feature on')
  a = await call(s.url, 'GET', PATH, { token })
  t.same(a.json, { configuration: { ...UNSET, enabled: true } })
})

t.test('scopes: read scope for GET, write scope for POST; no token, bad header', async t => {
  const s = await startTestService(t)
  await s.user('alice', { premium: 'lifetime' })
  const r = await s.token('alice', 'chatapp:rich_presence:config:read')
  const w = await s.token('alice', 'chatapp:rich_presence:config:write')
  const other = await s.token('alice', 'game_mod:configuration:read game_mod:configuration:write')
  let a = await call(s.url, 'GET', PATH, { token: w })
  t.equal(a.status, 400)
  t.same(a.json, INVALID_SCOPE, 'write scope does not read')
  a = await call(s.url, 'POST', PATH, { token: r, body: { configuration: { enabled: true } } })
  t.equal(a.status, 400)
  t.same(a.json, INVALID_SCOPE, 'read scope does not write')
  a = await call(s.url, 'GET', PATH, { token: other })
  t.same(a.json, INVALID_SCOPE)
  a = await call(s.url, 'POST', PATH, { token: other, body: { configuration: {} } })
  t.same(a.json, INVALID_SCOPE)
  t.same((await call(s.url, 'GET', PATH, { token: r })).json, { configuration: UNSET }, 'the refused write stored nothing')
  a = await call(s.url, 'GET', PATH)
  t.equal(a.status, 403)
  t.same(a.json, { error_code: 7009, error_message: 'error_authorization_header_is_not_present' })
  a = await call(s.url, 'POST', PATH, { headers: { authorization: 'Basic abc' }, body: { configuration: {} } })
  t.equal(a.status, 403)
  t.same(a.json, { error_code: 7010, error_message: 'error_authorization_header_has_wrong_format' })
  a = await call(s.url, 'GET', PATH, { token: 'not-a-token' })
  t.equal(a.status, 401)
  t.same(a.json, { error_code: 7005, error_message: 'token_not_found' })
})
