// Token families under concurrent writers (store level; the OAuth endpoint adds
// its own lock per refresh token, so these races are only reachable here or
// through two different tokens of one family).
import t from 'tap'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Store } from '../../../api/store/db.ts'
import { Tokens } from '../../../api/store/tokens.ts'
import { KeyedLock } from '../../../api/store/lock.ts'

async function openStore (t: { teardown (fn: () => unknown): void }): Promise<Store> {
  const dir = await mkdtemp(join(tmpdir(), 'hr-store-'))
  const store = await Store.open(dir)
  t.teardown(async () => { await store.close(); await rm(dir, { recursive: true, force: true }) })
  return store
}

const pair = { client_id: 'c1', profile_id: 'p1', scopes: ['profile:read'], flow: 'authorization_code' as const, expires_in: 3600, refresh_expires_in: 86400 }

t.test('10 concurrent rotations of one refresh token: exactly one succeeds, the next is a replay that revokes the family', async t => {
  const store = await openStore(t)
  const tokens = new Tokens(store)
  const issued = await tokens.issue(pair)
  const results = await Promise.all(Array.from({ length: 10 }, async () => await tokens.rotate(issued.refresh_token!, 'c1', 3600, 86400)))
  const ok = results.filter(r => r.ok)
  t.equal(ok.length, 1, 'one rotation')
  // The first replay revokes the family; the ones after it find nothing.
  t.same(results.filter(r => !r.ok).map(r => r.ok ? '' : r.reason).sort(), ['not_found', 'not_found', 'not_found', 'not_found', 'not_found', 'not_found', 'not_found', 'not_found', 'replayed'])
  const fresh = ok[0]
  if (fresh === undefined || !fresh.ok) throw new Error('no rotation')
  t.same(await tokens.lookup(fresh.issued.access_token), { ok: false, reason: 'not_found' }, 'the replays revoked the pair issued beside them')
  t.same(await tokens.rotate(fresh.issued.refresh_token!, 'c1', 3600, 86400), { ok: false, reason: 'not_found' })
})

t.test('a rotation concurrent with the revocation of its family leaves no live token in that family', async t => {
  const store = await openStore(t)
  const tokens = new Tokens(store)
  const families = await Promise.all(Array.from({ length: 20 }, async () => await tokens.issue(pair)))
  const rotations = await Promise.all(families.flatMap(f => [
    tokens.rotate(f.refresh_token!, 'c1', 3600, 86400),
    tokens.revokeFamily(f.family).then(() => null)
  ]))
  let live = 0
  for (const r of rotations) {
    if (r === null || !r.ok) continue
    if ((await tokens.lookup(r.issued.access_token)).ok) live++
    if ((await tokens.rotate(r.issued.refresh_token!, 'c1', 3600, 86400)).ok) live++
  }
  t.equal(live, 0, 'nothing issued in a revoked family still works')
})

t.test('KeyedLock: one key at a time, other keys in parallel, and no entry left when idle', async t => {
  const lock = new KeyedLock()
  const running = { a: 0, b: 0 }
  let mostA = 0
  let overlapped = false
  const task = (k: 'a' | 'b') => async (): Promise<void> => {
    running[k]++
    mostA = Math.max(mostA, running.a)
    if (running.a > 0 && running.b > 0) overlapped = true
    await new Promise<void>(resolve => { setImmediate(resolve) })
    running[k]--
  }
  await Promise.all([...Array.from({ length: 10 }, async () => { await lock.run('a', task('a')) }), lock.run('b', task('b'))])
  t.equal(mostA, 1, 'key a ran one task at a time')
  t.ok(overlapped, 'key b ran beside key a')
  t.equal(lock.size, 0)
  await t.rejects(lock.run('a', async () => { throw new Error('boom') }), /boom/)
  t.equal(await lock.run('a', async () => 7), 7, 'a failed task does not block the key')
  t.equal(lock.size, 0)
})
