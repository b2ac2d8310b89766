import t from 'tap'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Store } from '../../../api/store/db.ts'
import { Users, UserExistsError, premiumActive } from '../../../api/store/users.ts'
import { Clients, InvalidRedirectUriError, redirectUriAllowed } from '../../../api/store/clients.ts'

async function openStore (t: { teardown (fn: () => unknown): void }): Promise<Store> {
  const dir = await mkdtemp(join(tmpdir(), 'hr-store-'))
  const store = await Store.open(dir)
  t.teardown(async () => { await store.close(); await rm(dir, { recursive: true, force: true }) })
  return store
}

t.test('users: passwords hashed with scrypt, usernames unique case-insensitively', async t => {
  const store = await openStore(t)
  const users = new Users(store)
  const u = await users.create({ username: 'Alice', password: 'correct horse', age: 30, sex: 'female' })
  t.match(u.password_hash, /^scrypt\$16384\$8\$1\$/)
  t.notOk(JSON.stringify(u).includes('correct horse'))
  t.equal((await users.authenticate('alice', 'correct horse'))?.profile_id, u.profile_id)
  t.equal(await users.authenticate('alice', 'wrong'), undefined)
  t.equal(await users.authenticate('nobody', 'correct horse'), undefined)
  await t.rejects(users.create({ username: 'ALICE', password: 'x' }), UserExistsError)
  t.equal((await users.list()).length, 1)
})

t.test('premium plans: trial and subscription expire, lifetime does not', async t => {
  const store = await openStore(t)
  const users = new Users(store)
  const now = Date.now()
  const none = await users.create({ username: 'n', password: 'p' })
  const trial = await users.create({ username: 't', password: 'p', premium: 'trial' })
  const expired = await users.create({ username: 'e', password: 'p', premium: 'subscription', premium_expires_at: now - 1 })
  const life = await users.create({ username: 'l', password: 'p', premium: 'lifetime' })
  t.equal(premiumActive(none), false)
  t.equal(premiumActive(trial), true)
  t.equal(trial.premium.expires_at! > now + 13 * 86_400_000, true, 'trial lasts 14 days')
  t.equal(premiumActive(expired), false)
  t.equal(premiumActive(life), true)
  const granted = await users.grantFeature(none.profile_id, 'game_mod')
  t.same(granted?.features, ['game_mod'])
  t.same((await users.grantFeature(none.profile_id, 'game_mod'))?.features, ['game_mod'], 'granting twice keeps one entry')
})

t.test('clients: secret hashed and shown once; redirect URIs match exactly', async t => {
  const store = await openStore(t)
  const clients = new Clients(store)
  const { client, client_secret: secret } = await clients.create({ name: 'App', redirect_uris: ['https://app.example/cb', 'http://127.0.0.1:5000/cb'] })
  t.type(secret, 'string')
  t.notOk(JSON.stringify(client).includes(secret!))
  t.equal((await clients.authenticate(client.client_id, secret!))?.client_id, client.client_id)
  t.equal(await clients.authenticate(client.client_id, 'wrong'), undefined)
  t.equal(await clients.authenticate('unknown', secret!), undefined)
  const pub = await clients.create({ name: 'Public', redirect_uris: ['http://localhost/cb'], public: true })
  t.equal(pub.client_secret, null)
  t.equal(await clients.authenticate(pub.client.client_id, ''), undefined, 'a public client cannot authenticate with a secret')

  const cases: Array<[string, boolean]> = [
    ['https://app.example/cb', true],
    ['https://app.example/cb/', false],
    ['https://app.example/cb?x=1', false],
    ['https://app.example/cb#frag', false],
    ['https://app.example/cbx', false],
    ['https://APP.example/cb', false],
    ['https://app.example.evil.com/cb', false],
    ['https://app.example@evil.com/cb', false],
    ['http://app.example/cb', false],
    ['http://127.0.0.1:5000/cb', true],
    ['http://127.0.0.1:61234/cb', true],
    ['http://127.0.0.1:61234/other', false],
    ['http://user@127.0.0.1:61234/cb', false],
    ['http://localhost:5000/cb', false],
    ['not a url', false]
  ]
  for (const [uri, ok] of cases) t.equal(redirectUriAllowed(client, uri), ok, uri)

  await t.rejects(clients.create({ name: 'Bad', redirect_uris: ['https://x.example/cb#f'] }), InvalidRedirectUriError)
  await t.rejects(clients.create({ name: 'Bad', redirect_uris: ['javascript:alert(1)'] }), InvalidRedirectUriError)
  await t.rejects(clients.create({ name: 'Bad', redirect_uris: ['/relative'] }), InvalidRedirectUriError)
})
