// The store rewrite (api/store/rewrite.ts): after deletes and a rewrite no file
// of the database holds the deleted keys or values; what was written during the
// copy is kept; a swap cut off by a crash is finished or undone at the next open.
import t from 'tap'
import { mkdir, mkdtemp, rename, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Store } from '../../../api/store/db.ts'
import { markRewritePending, rewriteStore } from '../../../api/store/rewrite.ts'
import { filesContaining } from '../../helpers/files-scan.ts'

const SECRET_KEY = 'erased-member-7f3a9c'
const SECRET_VALUE = 'value-of-erased-5be1d2'

async function freshStore (t: { teardown: (fn: () => unknown) => void }): Promise<{ dir: string, store: Store }> {
  const dir = await mkdtemp(join(tmpdir(), 'hr-rewrite-'))
  const store = await Store.open(dir, { writeBufferSize: 64 * 1024 })
  t.teardown(async () => { await store.close().catch(() => undefined); await rm(dir, { recursive: true, force: true }) })
  return { dir, store }
}

t.test('deleted keys and values are in no file after a rewrite; live data and sublevels work on', async t => {
  const { dir, store } = await freshStore(t)
  const users = store.sub<{ name: string }>('users')
  const other = store.sub<Uint8Array>('hr_raw', 'view')
  await store.batch([{ type: 'put', sublevel: users, key: SECRET_KEY, value: { name: SECRET_VALUE } }], { sync: true })
  // Enough other data that LevelDB writes table files at several levels.
  for (let i = 0; i < 40; i++) {
    const ops = Array.from({ length: 500 }, (_, j) => ({ type: 'put' as const, sublevel: other, key: `keep!${String(i * 500 + j).padStart(8, '0')}`, value: new Uint8Array(40).fill(7) }))
    await store.batch(ops, { sync: true })
  }
  await store.batch([{ type: 'put', sublevel: users, key: `${SECRET_KEY}!2`, value: { name: SECRET_VALUE } }], { sync: true })
  await store.batch([{ type: 'del', sublevel: users, key: SECRET_KEY }, { type: 'del', sublevel: users, key: `${SECRET_KEY}!2` }], { sync: true })
  // classic-level's compactRange (the `level` package's types leave it out, being for browsers too).
  await (store.db as unknown as { compactRange: (start: string, end: string) => Promise<void> }).compactRange('', '\xff')
  t.not((await filesContaining(dir, [SECRET_KEY])).length, 0, 'deleting and compacting leave the deleted key in some file (why the rewrite exists)')
  const { entries } = await rewriteStore(store)
  t.same(await filesContaining(dir, [SECRET_KEY, SECRET_VALUE]), [], 'no file holds the deleted key or value')
  t.ok(entries >= 20_000, `the live entries were copied (${entries})`)
  t.same(Buffer.from((await other.get('keep!00012345'))!), Buffer.alloc(40, 7), 'a live entry reads back through its sublevel')
  await store.batch([{ type: 'put', sublevel: users, key: 'after', value: { name: 'x' } }], { sync: true })
  t.same(await users.get('after'), { name: 'x' }, 'writes work after the swap')
  await store.close()
  const again = await Store.open(dir)
  t.same(await again.sub<{ name: string }>('users').get('after'), { name: 'x' }, 'the rewritten store opens again with its data')
  t.equal(await again.sub<{ name: string }>('users').get(SECRET_KEY), undefined)
  await again.close()
})

t.test('batches written during the copy are in the new database, deletes too', async t => {
  const { store } = await freshStore(t)
  const s = store.sub<number>('meta2')
  const ops = Array.from({ length: 20_000 }, (_, i) => ({ type: 'put' as const, sublevel: s, key: `k${String(i).padStart(6, '0')}`, value: i }))
  await store.batch(ops)
  const rewriting = rewriteStore(store)
  // These batches start while the copy runs (it reads 20,000 entries): recorded and copied again, or held until the swap.
  const during = Promise.all([
    store.batch([{ type: 'put', sublevel: s, key: 'new-during', value: 1 }], { sync: true }),
    store.batch([{ type: 'del', sublevel: s, key: 'k000001' }], { sync: true }),
    store.batch([{ type: 'put', sublevel: s, key: 'k000002', value: -2 }], { sync: true })
  ])
  await Promise.all([rewriting, during])
  t.equal(await s.get('new-during'), 1)
  t.equal(await s.get('k000001'), undefined)
  t.equal(await s.get('k000002'), -2)
  t.equal(await s.get('k019999'), 19_999)
})

t.test('a swap cut off by a crash: the old database is put back, or the new one kept and the old removed', async t => {
  const dir = await mkdtemp(join(tmpdir(), 'hr-rewrite-crash-'))
  t.teardown(async () => { await rm(dir, { recursive: true, force: true }) })
  const first = await Store.open(dir)
  await first.batch([{ type: 'put', sublevel: first.sub<string>('users'), key: 'u', value: 'kept' }], { sync: true })
  await first.close()
  // Cut off after the first rename: only db.old (and an unfinished copy) exist.
  await rename(join(dir, 'db'), join(dir, 'db.old'))
  await mkdir(join(dir, 'db.rewrite'))
  await writeFile(join(dir, 'db.rewrite', 'partial'), SECRET_VALUE)
  const second = await Store.open(dir)
  t.equal(await second.sub<string>('users').get('u'), 'kept', 'the old database is back')
  await second.close()
  t.same(await filesContaining(dir, [SECRET_VALUE]), [], 'the unfinished copy is removed')
  // Cut off after both renames: db (new) and db.old (holding what was erased) exist.
  await mkdir(join(dir, 'db.old'))
  await writeFile(join(dir, 'db.old', '000001.ldb'), SECRET_VALUE)
  const third = await Store.open(dir)
  t.equal(await third.sub<string>('users').get('u'), 'kept')
  await third.close()
  t.same(await filesContaining(dir, [SECRET_VALUE]), [], 'the old database, which held erased data, is removed')
})

t.test('a rewrite marked as due and cut off by a stop runs at the next open', async t => {
  const { dir, store } = await freshStore(t)
  const users = store.sub<string>('users')
  await store.batch([{ type: 'put', sublevel: users, key: SECRET_KEY, value: SECRET_VALUE }, { type: 'put', sublevel: users, key: 'kept', value: 'yes' }], { sync: true })
  await markRewritePending(store.db.location)
  await store.batch([{ type: 'del', sublevel: users, key: SECRET_KEY }], { sync: true })
  await store.close()
  t.not((await filesContaining(dir, [SECRET_KEY])).length, 0, 'the deleted key is still in a file')
  const reopened = await Store.open(dir)
  t.teardown(async () => { await reopened.close() })
  t.same(await filesContaining(dir, [SECRET_KEY, SECRET_VALUE]), [], 'the open ran the rewrite')
  t.equal(await reopened.sub<string>('users').get('kept'), 'yes')
  await reopened.close()
  const again = await Store.open(dir)
  t.equal(await again.sub<string>('users').get('kept'), 'yes', 'the marker is gone: the next open just opens')
  await again.close()
})
