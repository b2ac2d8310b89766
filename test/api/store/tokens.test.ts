import t from 'tap'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Store, StoreLockedError } from '../../../api/store/db.ts'
import { Tokens } from '../../../api/store/tokens.ts'
import { GUID_RE, digest } from '../../../api/store/secrets.ts'

async function openStore (t: { teardown (fn: () => unknown): void }): Promise<Store> {
  const dir = await mkdtemp(join(tmpdir(), 'hr-store-'))
  const store = await Store.open(dir)
  t.teardown(async () => { await store.close(); await rm(dir, { recursive: true, force: true }) })
  return store
}

t.test('issued tokens look like GUIDs and only their digests are stored', async t => {
  const store = await openStore(t)
  const tokens = new Tokens(store)
  const issued = await tokens.issue({ client_id: 'c1', profile_id: 'p1', scopes: ['profile:read'], flow: 'authorization_code', expires_in: 3600, refresh_expires_in: 86400 })
  t.match(issued.access_token, GUID_RE)
  t.match(issued.refresh_token, GUID_RE)
  t.equal(issued.expires_in, 3600)
  t.equal(issued.scope, 'profile:read')
  const raw: string[] = []
  for await (const [k, v] of store.db.iterator()) raw.push(`${k}=${JSON.stringify(v)}`)
  const dump = raw.join('\n')
  t.notOk(dump.includes(issued.access_token), 'access token not stored in clear')
  t.notOk(dump.includes(issued.refresh_token!), 'refresh token not stored in clear')
  t.ok(dump.includes(digest(issued.access_token)), 'its digest is')
  const found = await tokens.lookup(issued.access_token)
  t.equal(found.ok, true)
  if (found.ok) {
    t.equal(found.token.profile_id, 'p1')
    t.same(found.token.scopes, ['profile:read'])
  }
  t.same(await tokens.lookup('00000000-0000-0000-0000-000000000000'), { ok: false, reason: 'not_found' })
})

t.test('expired tokens are reported as expired', async t => {
  const store = await openStore(t)
  const tokens = new Tokens(store)
  const now = Date.now()
  const issued = await tokens.issue({ client_id: 'c', profile_id: 'p', scopes: [], flow: 'manual', expires_in: 10 }, now - 20_000)
  t.same(await tokens.lookup(issued.access_token), { ok: false, reason: 'expired' })
})

t.test('refresh rotation invalidates the old pair; a replay revokes the family', async t => {
  const store = await openStore(t)
  const tokens = new Tokens(store)
  const first = await tokens.issue({ client_id: 'c', profile_id: 'p', scopes: ['data:heart_rate:read'], flow: 'authorization_code', expires_in: 3600, refresh_expires_in: 86400 })
  t.equal((await tokens.lookup(first.access_token)).ok, true, 'looked up (and cached) before the rotation')
  t.same(await tokens.rotate(first.refresh_token!, 'other-client', 3600, 86400), { ok: false, reason: 'wrong_client' })
  const second = await tokens.rotate(first.refresh_token!, 'c', 3600, 86400)
  t.equal(second.ok, true)
  if (!second.ok) return
  t.not(second.issued.access_token, first.access_token)
  t.not(second.issued.refresh_token, first.refresh_token)
  t.equal((await tokens.lookup(first.access_token)).ok, false, 'old access token stops working')
  t.equal((await tokens.lookup(second.issued.access_token)).ok, true, 'new access token works')
  t.same(await tokens.rotate(first.refresh_token!, 'c', 3600, 86400), { ok: false, reason: 'replayed' })
  t.same(await tokens.lookup(second.issued.access_token), { ok: false, reason: 'not_found' }, 'replay revoked the family')
  t.same(await tokens.rotate(second.issued.refresh_token!, 'c', 3600, 86400), { ok: false, reason: 'not_found' })
})

t.test('revoke and revokeGrant (disconnect app)', async t => {
  const store = await openStore(t)
  const tokens = new Tokens(store)
  const a = await tokens.issue({ client_id: 'app', profile_id: 'u', scopes: [], flow: 'implicit', expires_in: 100 })
  const b = await tokens.issue({ client_id: 'app', profile_id: 'u', scopes: [], flow: 'authorization_code', expires_in: 100, refresh_expires_in: 1000 })
  const other = await tokens.issue({ client_id: 'other', profile_id: 'u', scopes: [], flow: 'implicit', expires_in: 100 })
  t.same((await tokens.grantedClients('u')).sort(), ['app', 'other'])
  t.equal(await tokens.revoke('not-a-token'), false)
  t.equal(await tokens.revoke(a.access_token), true)
  t.equal((await tokens.lookup(a.access_token)).ok, false)
  t.equal((await tokens.lookup(b.access_token)).ok, true)
  await tokens.revokeGrant('u', 'app')
  t.equal((await tokens.lookup(b.access_token)).ok, false, 'access token of the app is gone')
  t.same(await tokens.rotate(b.refresh_token!, 'app', 100, 1000), { ok: false, reason: 'not_found' }, 'and its refresh token')
  t.equal((await tokens.lookup(other.access_token)).ok, true, 'other apps keep working')
  t.same(await tokens.grantedClients('u'), ['other'])
})

t.test('a second store on the same directory fails with StoreLockedError', async t => {
  const store = await openStore(t)
  const err = await Store.open(store.dir).then(() => null, (e: unknown) => e)
  t.type(err, StoreLockedError)
  t.match((err as Error).message, /in use by another hr-relay process/)
})

t.test('a lookup that overlaps a revocation does not cache the revoked token', async t => {
  const store = await openStore(t)
  const tokens = new Tokens(store)
  const issued = await tokens.issue({ client_id: 'c', profile_id: 'p', scopes: [], flow: 'manual', expires_in: 100 })
  // Hold the lookup's read until the revocation has been written: the read saw the token before it was deleted.
  const access = store.sub<unknown>('tokens_access')
  const realGet = access.get.bind(access)
  let release: () => void = () => {}
  const gate = new Promise<void>(resolve => { release = resolve })
  let held = false
  ;(access as any).get = async (key: string) => {
    const value = await realGet(key)
    if (!held) { held = true; await gate }
    return value
  }
  const during = tokens.lookup(issued.access_token)
  ;(access as any).get = realGet
  t.equal(await tokens.revoke(issued.access_token), true)
  release()
  t.equal((await during).ok, true, 'the overlapping lookup answered from its earlier read')
  t.same(await tokens.lookup(issued.access_token), { ok: false, reason: 'not_found' }, 'but did not cache the revoked token')
})
