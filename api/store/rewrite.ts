// Rewrites the store's database into a fresh one and swaps it in: what a
// member's erasure needs so that no file under the data directory keeps their
// bytes. Deleting keys is not enough with LevelDB:
// - a deleted key stays in the table files as a deletion marker, and the old
//   value with it, until a compaction reaches the bottom level; compactRange
//   does not compact the deepest level that has files, so what sits there stays;
// - the MANIFEST records the first and last key of every table file made since
//   the database was opened;
// - the info LOG names the key ranges of manual compactions.
// A fresh database holds only the live entries, with a MANIFEST and LOG of its
// own. Everything goes through classic-level's public API: an iterator (a
// snapshot), batches, close and open.
//
// The service keeps running meanwhile: the copy reads a snapshot while batches
// go on, and the keys they touch are recorded (Store.recordTouched). Then new
// batches are held, the recorded keys are copied again with their current value
// (or deleted), the old database is closed, the directories are swapped and the
// same Level instance and its sublevels are opened on the new one. Reads that
// arrive while the database is closed fail with LEVEL_DATABASE_NOT_OPEN, which
// the HTTP layer answers with 503 (storage busy, retry).
//
// A crash at any point leaves either the old database or the new one in place:
// recoverRewrite (called by Store.open) finishes or undoes a swap that was cut off.
import { open as openFile, rename, rm, stat } from 'node:fs/promises'
import { dirname } from 'node:path'
import { Level } from 'level'
import type { Sub } from './sublevel.ts'

/** What a rewrite needs of the store (db.ts's Store): its database, its sublevels and its write gate. */
export interface RewritableStore {
  readonly db: Level<string, unknown>
  readonly sublevels: ReadonlyArray<Sub<any>>
  recordTouched (on?: boolean): void
  holdWrites (): Promise<{ touched: Set<string>, release: () => void }>
  rewriting<T> (fn: () => Promise<T>): Promise<T>
}

const COPY_BATCH = 1000

/** classic-level's compactRange, which the `level` package's types leave out (they cover browsers too). */
interface Compactable { compactRange (start: string, end: string): Promise<void> }

const nextOf = (location: string): string => `${location}.rewrite`
const pendingOf = (location: string): string => `${location}.rewrite-pending`
const oldOf = (location: string): string => `${location}.old`

async function exists (path: string): Promise<boolean> {
  try { await stat(path); return true } catch { return false }
}

/** Makes the renames in a directory durable. */
async function syncDir (dir: string): Promise<void> {
  const fd = await openFile(dir, 'r')
  try { await fd.sync() } finally { await fd.close() }
}

/**
 * Before the database at `location` is opened: a rewrite cut off by a crash is finished or undone. A complete new
 * database was renamed into place only after the copy was synced, so `location` present means it is the one to
 * keep; the old one (which may hold erased data) and an unfinished copy are removed. Answers whether a rewrite is
 * still due (markRewritePending was called and no rewrite completed since): the store runs it once open.
 */
export async function recoverRewrite (location: string): Promise<boolean> {
  const old = oldOf(location)
  if (!(await exists(location)) && await exists(old)) await rename(old, location)
  await rm(old, { recursive: true, force: true })
  await rm(nextOf(location), { recursive: true, force: true })
  return await exists(pendingOf(location))
}

/** Records that a rewrite is due, durably: if the service stops before one completes, the next start runs it. */
export async function markRewritePending (location: string): Promise<void> {
  const fd = await openFile(pendingOf(location), 'w')
  try { await fd.sync() } finally { await fd.close() }
  await syncDir(dirname(location))
}

/** Copies the live entries of the store into a fresh database and swaps it in. Returns how many entries were copied. */
export async function rewriteStore (store: RewritableStore): Promise<{ entries: number }> {
  return await store.rewriting(async () => await rewriteNow(store))
}

async function rewriteNow (store: RewritableStore): Promise<{ entries: number }> {
  // Recording starts before the copy's snapshot: a batch that ends after this is recorded, one that ended before is in it.
  store.recordTouched()
  const location = store.db.location
  const next = nextOf(location)
  const old = oldOf(location)
  let fresh: Level<string, Uint8Array> | undefined
  let hold: { touched: Set<string>, release: () => void } | undefined
  try {
    await rm(next, { recursive: true, force: true })
    // The constructor starts opening the new database (abstract-level's deferred open): only once the old copy is gone.
    fresh = new Level<string, Uint8Array>(next, { keyEncoding: 'utf8', valueEncoding: 'view' })
    await fresh.open()
    let entries = 0
    let ops: Array<{ type: 'put', key: string, value: Uint8Array }> = []
    for await (const [key, value] of store.db.iterator<string, Uint8Array>({ keyEncoding: 'utf8', valueEncoding: 'view' })) {
      ops.push({ type: 'put', key, value })
      entries++
      if (ops.length >= COPY_BATCH) { await fresh.batch(ops); ops = [] }
    }
    if (ops.length > 0) await fresh.batch(ops)
    // The copy's batches were not synced one by one, and LevelDB does not sync a log file it leaves for the next:
    // compacting moves everything into table files, which LevelDB syncs, before the old database is given up.
    await (fresh as unknown as Compactable).compactRange('', '\xff')
    hold = await store.holdWrites()
    const again: Array<{ type: 'put', key: string, value: Uint8Array } | { type: 'del', key: string }> = []
    for (const key of hold.touched) {
      const value = await store.db.get<string, Uint8Array>(key, { keyEncoding: 'utf8', valueEncoding: 'view' })
      again.push(value === undefined ? { type: 'del', key } : { type: 'put', key, value })
    }
    await fresh.batch(again, { sync: true })
    await fresh.close()
    await store.db.close()
    try {
      await rename(location, old)
      await rename(next, location)
      await syncDir(dirname(location))
    } finally {
      // Whatever happened to the renames, the service gets a database back: the new one, or the old one restored.
      await recoverRewrite(location)
      await store.db.open()
      for (const sub of store.sublevels) await sub.open()
    }
    await rm(pendingOf(location), { force: true })
    return { entries }
  } finally {
    if (fresh !== undefined && fresh.status !== 'closed') await fresh.close().catch(() => undefined)
    await rm(next, { recursive: true, force: true }).catch(() => undefined)
    if (hold === undefined) store.recordTouched(false)
    else hold.release()
  }
}
