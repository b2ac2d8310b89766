// The write-ahead journal (api/store/journal.ts): what a power cut can take from LevelDB (its log is written without
// a sync when the journal is on) comes back from the journal at the next open. A power cut is simulated by putting
// back a copy of LevelDB's directory taken before the batches, beside the journal as it was after them.
import t from 'tap'
import { cp, mkdir, mkdtemp, open, readdir, readFile, rm, stat, truncate, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Store, journalPath, type SyncPolicy } from '../../../api/store/db.ts'
import { AREA_START, createJournal, decodeBatch, encodeBatch, encodeCancel, readJournal, type JournalOp, type JournalTiming } from '../../../api/store/journal.ts'

const MiB = 1024 * 1024
/** Makes a batch about 1.2 kB in the journal. */
const PAD = 'x'.repeat(1000)

async function tempDir (t: { teardown (fn: () => unknown): void }): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'hr-journal-'))
  t.teardown(async () => { await rm(dir, { recursive: true, force: true }) })
  return dir
}

/** Every group through the journal, at any rate. */
const ALWAYS_JOURNAL: SyncPolicy = { belowPerSecond: 0, windowMs: 1000 }
/** Every group a (marked) sync batch, at any rate. */
const ALWAYS_SYNC: SyncPolicy = { belowPerSecond: Infinity, windowMs: 1000 }

/** A store whose journal is on and ready (every group through it, unless a policy says otherwise). */
async function journaled (dir: string, bytes = MiB, timing?: JournalTiming, policy = ALWAYS_JOURNAL): Promise<Store> {
  const store = await Store.open(dir)
  await store.startJournal(bytes, timing, policy)
  return store
}

/** Records up to 2,000 bytes on the event loop's thread, whatever the disk's speed (the tests' machines are shared). */
const ANY_DISK: JournalTiming = { onThreadBytes: 2000, slowMedianMs: Infinity, stallMs: Infinity, poolMs: 60_000 }

/** One batch of the kind the pipeline writes: a JSON value, a binary value and a delete. */
function batchOps (store: Store, i: number, pad = ''): any[] {
  return [
    { type: 'put', sublevel: store.sub('t'), key: `k${String(i).padStart(5, '0')}`, value: { n: i, name: `reading ${i} ♥${pad}` } },
    { type: 'put', sublevel: store.sub('r', 'view'), key: `r${i}`, value: Uint8Array.of(i & 255, 0, 255) },
    { type: 'del', sublevel: store.sub('t'), key: 'gone' }
  ]
}

/** Closes the store as a power cut would leave it: LevelDB as `snapshot`, the journal as it is now. */
async function powerCut (dir: string, store: Store, snapshot: string): Promise<void> {
  const journal = await readFile(journalPath(dir))
  await store.close()
  await rm(join(dir, 'db'), { recursive: true })
  await cp(snapshot, join(dir, 'db'), { recursive: true })
  await writeFile(journalPath(dir), journal)
}

/** A copy of LevelDB's directory while the store is closed. */
async function snapshotOf (dir: string): Promise<string> {
  const snap = join(dir, `snap-${Date.now()}`)
  await cp(join(dir, 'db'), snap, { recursive: true })
  return snap
}

async function values (store: Store, n: number): Promise<Array<number | undefined>> {
  const out: Array<number | undefined> = []
  for (let i = 1; i <= n; i++) out.push((await store.sub<{ n: number }>('t').get(`k${String(i).padStart(5, '0')}`))?.n)
  return out
}

t.test('a record holds the operations as LevelDB takes them, strings and bytes, and decodes to the same', async t => {
  const ops: JournalOp[] = [
    { type: 'put', key: '!hr_minute!p1!0001', value: '{"n":1,"name":"♥ ü"}' },
    { type: 'put', key: '!hr_raw!p1!0002', value: Uint8Array.of(0, 1, 254, 255) },
    { type: 'del', key: '!hr_latest!p1' },
    { type: 'put', key: Uint8Array.of(0x21, 0xff), value: '' }
  ]
  const rec = encodeBatch(7, ops)
  t.equal(rec.readUInt32LE(0), 0x48524a31, 'magic HRJ1')
  t.equal(rec.readDoubleLE(12), 7, 'sequence number')
  t.same(decodeBatch(rec.subarray(24)), [
    { type: 'put', key: '!hr_minute!p1!0001', keyEncoding: 'utf8', value: '{"n":1,"name":"♥ ü"}', valueEncoding: 'utf8' },
    { type: 'put', key: '!hr_raw!p1!0002', keyEncoding: 'utf8', value: Uint8Array.of(0, 1, 254, 255), valueEncoding: 'view' },
    { type: 'del', key: '!hr_latest!p1', keyEncoding: 'utf8' },
    { type: 'put', key: Uint8Array.of(0x21, 0xff), keyEncoding: 'view', value: '', valueEncoding: 'utf8' }
  ])
})

t.test('journaled batches lost from LevelDB come back from the journal at the next open', async t => {
  const dir = await tempDir(t)
  let store = await journaled(dir)
  await store.sub('t').put('gone', { n: -1 })
  await store.close()
  const snapshot = await snapshotOf(dir)

  store = await journaled(dir)
  for (let i = 1; i <= 200; i++) await store.batch(batchOps(store, i), { journal: true })
  const before = await readJournal(journalPath(dir))
  t.equal(before?.batches.length, 200, 'the journal holds the 200 batches, after its checkpoint')
  await powerCut(dir, store, snapshot)

  store = await Store.open(dir)
  t.teardown(async () => { await store.close() })
  t.equal(store.replayedBatches, 200, 'the open says how many it replayed (the service logs it)')
  t.same(await values(store, 200), Array.from({ length: 200 }, (_, i) => i + 1), 'every batch is back')
  t.same(await store.sub('r', 'view').get('r200'), Buffer.of(200, 0, 255), 'binary values byte for byte')
  t.equal(await store.sub('t').get('gone'), undefined, 'deletes are replayed too')
  const after = await readJournal(journalPath(dir))
  t.equal(after?.batches.length, 0, 'nothing is left to replay once the open has checkpointed them')
  t.equal(after?.checkpoint, before?.lastSeq, 'the checkpoint covers the last record')
})

/** A journaled store that wrote batches 1..n, then lost them from LevelDB in a power cut (closed: not open again). */
async function cutAfter (t: { teardown (fn: () => unknown): void }, n: number): Promise<string> {
  const dir = await tempDir(t)
  let store = await journaled(dir)
  await store.close()
  const snapshot = await snapshotOf(dir)
  store = await journaled(dir)
  for (let i = 1; i <= n; i++) await store.batch(batchOps(store, i), { journal: true })
  await powerCut(dir, store, snapshot)
  return dir
}

t.test('without the journal the same power cut loses the batches (the simulation can fail)', async t => {
  const dir = await cutAfter(t, 20)
  await rm(journalPath(dir))
  const store = await Store.open(dir)
  t.teardown(async () => { await store.close() })
  t.same(await values(store, 20), Array.from({ length: 20 }, () => undefined), 'LevelDB alone has none of them')
})

t.test('when a half fills, writing moves on and a checkpoint flushes LevelDB to table files', async t => {
  const dir = await tempDir(t)
  const store = await journaled(dir)
  t.teardown(async () => { await store.close() })
  const tables = async (): Promise<number> => (await readdir(join(dir, 'db'))).filter(f => f.endsWith('.ldb')).length
  t.equal(await tables(), 0, 'no table file before')
  // Each batch is about 1.2 kB in the journal: 1,200 of them fill more than the two halves of 1 MiB.
  for (let i = 1; i <= 1200; i++) await store.batch(batchOps(store, i, PAD), { journal: true })
  const j = await readJournal(journalPath(dir))
  t.ok((j?.checkpoint ?? 0) > 400, `checkpoints covered the first halves (${j?.checkpoint})`)
  t.ok((j?.batches.length ?? 0) > 0 && (j?.batches.length ?? 0) < 1200 - 400, `what is after the checkpoint is replayable (${j?.batches.length})`)
  t.equal(j?.lastSeq, 1200, 'the last record is the last batch')
  t.ok(await tables() >= 1, 'the checkpoint flushed the memtable to a table file')
  t.same((await values(store, 1200)).filter((v, i) => v !== i + 1), [], 'every batch is readable')
})

t.test('a torn record ends replay: the records before it come back, nothing after it is applied', async t => {
  const dir = await cutAfter(t, 10)
  // Tear the 6th record: one byte of its payload changes, so its CRC no longer matches.
  const buf = await readFile(journalPath(dir))
  let at = AREA_START
  for (let k = 1; k < 6; k++) at += 24 + buf.readUInt32LE(at + 8)
  buf[at + 30] = (buf[at + 30] as number) ^ 0xff
  await writeFile(journalPath(dir), buf)
  const store = await Store.open(dir)
  t.teardown(async () => { await store.close() })
  t.same(await values(store, 10), [1, 2, 3, 4, 5, undefined, undefined, undefined, undefined, undefined])
})

t.test('a cancelled record (in the journal, refused by LevelDB) is not replayed', async t => {
  const dir = await tempDir(t)
  await createJournal(journalPath(dir), MiB, 0)
  let store = await Store.open(dir)
  const ops = (i: number): JournalOp[] => [{ type: 'put', key: `!t!k${String(i).padStart(5, '0')}`, value: JSON.stringify({ n: i }) }]
  await store.close()
  const fh = await open(journalPath(dir), 'r+')
  let at = AREA_START
  for (const rec of [encodeBatch(1, ops(1)), encodeBatch(2, ops(2)), encodeCancel(3, 2), encodeBatch(4, ops(3))]) {
    await fh.write(rec, 0, rec.length, at)
    at += rec.length
  }
  await fh.close()
  store = await Store.open(dir)
  t.teardown(async () => { await store.close() })
  t.same(await values(store, 3), [1, undefined, 3])
})

t.test('a journal whose two header slots are damaged stops the open with a clear error', async t => {
  const dir = await tempDir(t)
  const store = await journaled(dir)
  await store.batch(batchOps(store, 1), { journal: true })
  await store.close()
  const fh = await open(journalPath(dir), 'r+')
  await fh.write(Buffer.alloc(1024, 0x55), 0, 1024, 0)
  await fh.close()
  await t.rejects(Store.open(dir), { name: 'StoreOpenError', code: 'HR_STORE_OPEN', message: /the journal .*journal is damaged \(no valid header\); move it away/ })
})

t.test('a journal cut short (a partial copy) stops the open with a clear error too', async t => {
  const dir = await tempDir(t)
  const store = await journaled(dir)
  await store.batch(batchOps(store, 1), { journal: true })
  await store.close()
  await truncate(journalPath(dir), MiB / 2)
  await t.rejects(Store.open(dir), { name: 'StoreOpenError', code: 'HR_STORE_OPEN', message: /journal is damaged \(524288 bytes, its header says 1048576\); move it away/ })
})

t.test('a batch larger than half the journal is made durable by a checkpoint', async t => {
  const dir = await tempDir(t)
  let store = await journaled(dir)
  const big = 'x'.repeat(600 * 1024)
  await store.batch([{ type: 'put', sublevel: store.sub('t'), key: 'big', value: { big } } as any], { journal: true })
  const j = await readJournal(journalPath(dir))
  t.equal(j?.batches.length, 0, 'no record of it: the checkpoint covers it')
  await store.close()
  store = await Store.open(dir)
  t.teardown(async () => { await store.close() })
  t.equal((await store.sub<{ big: string }>('t').get('big'))?.big.length, 600 * 1024)
})

t.test('a new size remakes the journal, and its sequence numbers go on after the old ones', async t => {
  const dir = await tempDir(t)
  let store = await journaled(dir)
  for (let i = 1; i <= 5; i++) await store.batch(batchOps(store, i), { journal: true })
  await store.close()
  store = await journaled(dir, 2 * MiB)
  t.teardown(async () => { await store.close() })
  t.equal((await stat(journalPath(dir))).size, 2 * MiB)
  await store.batch(batchOps(store, 6), { journal: true })
  const j = await readJournal(journalPath(dir))
  t.same(j?.batches.map(b => b.seq), [6], 'the first record of the new journal is number 6')
})

t.test('small records are written on the event loop\'s thread, larger ones on the thread pool', async t => {
  const dir = await tempDir(t)
  const store = await journaled(dir, MiB, ANY_DISK)
  t.teardown(async () => { await store.close() })
  for (let i = 1; i <= 10; i++) await store.batch(batchOps(store, i), { journal: true })
  t.same(store.journalWrites, { onThread: 10, pool: 0 }, 'a batch of about 200 bytes: on the thread')
  for (let i = 11; i <= 13; i++) await store.batch(batchOps(store, i, PAD + PAD), { journal: true })
  t.same(store.journalWrites, { onThread: 10, pool: 3 }, 'about 2.2 kB: on the pool')
  t.same(await values(store, 13), Array.from({ length: 13 }, (_, i) => i + 1))
})

t.test('a slow disk sends the records to the thread pool for a while', async t => {
  const dir = await tempDir(t)
  // Every write counts as slow: the median of the first eight sends the rest to the pool.
  let store = await journaled(dir, MiB, { ...ANY_DISK, slowMedianMs: -Infinity })
  for (let i = 1; i <= 20; i++) await store.batch(batchOps(store, i), { journal: true })
  t.same(store.journalWrites, { onThread: 8, pool: 12 }, 'slow by their median: eight writes on the thread, then the pool')
  await store.close()
  // One write longer than the stall bound is enough.
  store = await journaled(dir, MiB, { ...ANY_DISK, stallMs: -Infinity })
  t.teardown(async () => { await store.close() })
  for (let i = 1; i <= 20; i++) await store.batch(batchOps(store, i), { journal: true })
  t.same(store.journalWrites, { onThread: 1, pool: 19 }, 'one stalled write: the rest on the pool')
  t.same(await values(store, 20), Array.from({ length: 20 }, (_, i) => i + 1))
})

t.test('records written by both threads, at the same time, all come back after a power cut', async t => {
  const dir = await tempDir(t)
  let store = await journaled(dir, MiB, ANY_DISK)
  await store.close()
  const snapshot = await snapshotOf(dir)
  store = await journaled(dir, MiB, ANY_DISK)
  // Thirty waves of ten batches at once, every fifth too large for the thread: the first four of a wave are written
  // on the thread, the fifth goes to the pool, and the five after it queue behind it there.
  for (let wave = 0; wave < 30; wave++) {
    await Promise.all(Array.from({ length: 10 }, async (_, k) => {
      await store.batch(batchOps(store, wave * 10 + k + 1, k % 5 === 4 ? PAD + PAD : ''), { journal: true })
    }))
  }
  t.same(store.journalWrites, { onThread: 120, pool: 180 }, 'both threads wrote, one record a batch')
  const before = await readJournal(journalPath(dir))
  t.equal(before?.batches.length, 300, 'replay reads all 300: their sequence numbers follow each other in the file')
  await powerCut(dir, store, snapshot)
  store = await Store.open(dir)
  t.teardown(async () => { await store.close() })
  t.equal(store.replayedBatches, 300)
  t.same((await values(store, 300)).filter((v, i) => v !== i + 1), [], 'every batch is back')
})

t.test('before the journal is ready, a journaled batch is a sync batch', async t => {
  const dir = await tempDir(t)
  const store = await Store.open(dir)
  t.teardown(async () => { await store.close() })
  t.equal(store.journalReady, false)
  await store.batch(batchOps(store, 1), { journal: true })
  t.same(await values(store, 1), [1])
  t.equal(await readJournal(journalPath(dir)), undefined, 'no journal file was made')
})

t.test('a clean close leaves nothing to replay', async t => {
  const dir = await tempDir(t)
  let store = await journaled(dir)
  for (let i = 1; i <= 30; i++) await store.batch(batchOps(store, i), { journal: true })
  await store.close()
  store = await Store.open(dir)
  t.teardown(async () => { await store.close() })
  t.equal(store.replayedBatches, 0)
  t.same((await values(store, 30)).filter((v, i) => v !== i + 1), [], 'and every batch is in LevelDB')
})

t.test('the header is written to its two slots in turn: a torn header write leaves the one before it', async t => {
  const dir = await tempDir(t)
  let store = await journaled(dir)
  for (let i = 1; i <= 1200; i++) await store.batch(batchOps(store, i, PAD), { journal: true })
  await store.close()
  const buf = await readFile(journalPath(dir))
  const counters = [buf.readDoubleLE(8), buf.readDoubleLE(512 + 8)]
  t.equal(Math.abs((counters[0] as number) - (counters[1] as number)), 1, `the slots hold headers n and n + 1 (${counters.join(', ')})`)
  // Tear the newer one.
  const newer = (counters[0] as number) > (counters[1] as number) ? 0 : 512
  const fh = await open(journalPath(dir), 'r+')
  await fh.write(Buffer.alloc(64, 0xaa), 0, 64, newer)
  await fh.close()
  store = await Store.open(dir)
  t.teardown(async () => { await store.close() })
  t.same((await values(store, 1200)).filter((v, i) => v !== i + 1), [], 'the older header is used, and every batch is there')
})

t.test('a journal smaller than its minimum is refused with the figures', async t => {
  const dir = await tempDir(t)
  const store = await Store.open(dir)
  t.teardown(async () => { await store.close() })
  await t.rejects(store.startJournal(4096), { name: 'RangeError', message: 'a journal needs at least 135168 bytes (asked: 4096)' })
  t.equal(store.journalReady, false)
})

t.test('a journal that cannot be made leaves the store on sync batches, and nothing half-made', async t => {
  const dir = await tempDir(t)
  const store = await Store.open(dir)
  t.teardown(async () => { await store.close() })
  // A directory where the journal's temporary file would go: opening it for writing fails (EISDIR).
  await mkdir(`${journalPath(dir)}.tmp`)
  await t.rejects(store.startJournal(MiB), { code: 'EISDIR' })
  t.equal(store.journalReady, false)
  await store.batch(batchOps(store, 1), { journal: true })
  t.same(await values(store, 1), [1], 'batches are still stored, with a sync batch')
  t.equal(await readJournal(journalPath(dir)), undefined, 'no journal')
})

// The hybrid (SyncPolicy): below a rate, a group is a LevelDB sync batch that carries the number of the journal's
// last record; replay skips the records at or below it, which that synced batch has behind it in LevelDB's log.

/** A batch that also sets the shared key `last` to i: replaying an older batch over a newer one would show there. */
function lastOps (store: Store, i: number): any[] {
  return [...batchOps(store, i), { type: 'put', sublevel: store.sub('t'), key: 'last', value: { n: i } }]
}

/** Writes batches from..to, each as `how` says. */
async function writeRange (store: Store, from: number, to: number, how: 'journal' | 'sync'): Promise<void> {
  store.syncPolicy = how === 'sync' ? ALWAYS_SYNC : ALWAYS_JOURNAL
  for (let i = from; i <= to; i++) await store.batch(lastOps(store, i), { journal: true })
}

/** A copy of LevelDB's directory while the store is open and idle: what its log holds is what a power cut leaves of a synced batch. */
async function snapshotOpen (dir: string): Promise<string> {
  const snap = join(dir, `snap-open-${Date.now()}`)
  await cp(join(dir, 'db'), snap, { recursive: true })
  return snap
}

/** The key the last sync batch wrote: the journal's last record then. */
async function syncedKey (store: Store): Promise<unknown> {
  return await store.db.get('\uffff journal synced', { keyEncoding: 'utf8', valueEncoding: 'utf8' } as never)
}

t.test('below the rate a group is a sync batch, above it a journal record, counted for /metrics', async t => {
  const dir = await tempDir(t)
  // 1 reading/s over a minute: 60 readings a window. No window ends within the test.
  const store = await journaled(dir, MiB, ANY_DISK, { belowPerSecond: 1, windowMs: 60_000 })
  t.teardown(async () => { await store.close() })
  for (let i = 1; i <= 5; i++) await store.batch(batchOps(store, i), { journal: true, readings: 1 })
  t.equal(store.syncBatches, 5, 'five groups of one reading: sync batches')
  t.same(store.journalWrites, { onThread: 0, pool: 0 }, 'and no journal record')
  t.equal(await syncedKey(store), '0', 'each names the journal\'s last record (none yet)')
  await store.batch(batchOps(store, 6), { journal: true, readings: 100 })
  await store.batch(batchOps(store, 7), { journal: true, readings: 1 })
  t.equal(store.syncBatches, 5, 'over 60 readings in the window: no more sync batches...')
  t.same(store.journalWrites, { onThread: 2, pool: 0 }, '... but journal records, for the rest of the window')
  store.syncPolicy = ALWAYS_SYNC
  await store.batch(batchOps(store, 8), { journal: true })
  t.equal(await syncedKey(store), '2', 'a sync batch after them names record 2')
  t.same(await values(store, 8), [1, 2, 3, 4, 5, 6, 7, 8])
})

/**
 * Batches 1..10 through the journal, 11..20 as sync batches, then 21..`last` through the journal again; then a
 * power cut that keeps LevelDB's log up to the sync batches. Returns the store opened again.
 */
async function cutAfterSwitch (t: { teardown (fn: () => unknown): void }, last: number): Promise<Store> {
  const dir = await tempDir(t)
  const store = await journaled(dir)
  await writeRange(store, 1, 10, 'journal')
  await writeRange(store, 11, 20, 'sync')
  const snapshot = await snapshotOpen(dir)
  await writeRange(store, 21, last, 'journal')
  await powerCut(dir, store, snapshot)
  const again = await Store.open(dir)
  t.teardown(async () => { await again.close() })
  return again
}

t.test('a power cut right after sync batches: the journal records before them are not replayed over them', async t => {
  const again = await cutAfterSwitch(t, 20)
  t.equal(again.replayedBatches, 0, 'records 1..10 are behind the synced batch: skipped')
  t.same(await again.sub<{ n: number }>('t').get('last'), { n: 20 }, 'the key both wrote keeps the newer value (replaying 1..10 would have put back 10)')
  t.same(await values(again, 20), Array.from({ length: 20 }, (_, i) => i + 1))
})

t.test('journal, then sync batches, then journal again: a power cut loses none of them, in order', async t => {
  const again = await cutAfterSwitch(t, 30)
  t.equal(again.replayedBatches, 10, 'records 11..20 (batches 21..30) are replayed, on top of the sync batches')
  t.same(await again.sub<{ n: number }>('t').get('last'), { n: 30 })
  t.same(await values(again, 30), Array.from({ length: 30 }, (_, i) => i + 1))
})

t.test('groups of readings in flight at a switch, both ways, all come back after a power cut', async t => {
  const dir = await tempDir(t)
  // Every record on the pool: a journaled batch's record then takes its number after the batch was started.
  const store = await journaled(dir, MiB, { ...ANY_DISK, onThreadBytes: 0 })
  // Waves of ten at once, the policy switched in the middle of each: a sync batch then waits for the journaled ones
  // before it (their records numbered), and a journaled one for the sync batches before it.
  const wave = async (w: number, first: SyncPolicy, second: SyncPolicy): Promise<void> => {
    store.syncPolicy = first
    await Promise.all(Array.from({ length: 10 }, async (_, k) => {
      if (k === 5) store.syncPolicy = second
      await store.batch(batchOps(store, w * 10 + k + 1), { journal: true })
    }))
  }
  for (let w = 0; w < 19; w++) await (w % 2 === 0 ? wave(w, ALWAYS_JOURNAL, ALWAYS_SYNC) : wave(w, ALWAYS_SYNC, ALWAYS_JOURNAL))
  t.equal(store.syncBatches, 95, 'half the batches were sync batches')
  t.equal(store.journalWrites!.onThread + store.journalWrites!.pool, 95, 'and half journal records')
  // The last wave ended with sync batches: a power cut keeps LevelDB's log up to them...
  const snapshot = await snapshotOpen(dir)
  // ... and loses what only the journal has after them.
  await wave(19, ALWAYS_JOURNAL, ALWAYS_JOURNAL)
  await powerCut(dir, store, snapshot)
  const again = await Store.open(dir)
  t.teardown(async () => { await again.close() })
  t.equal(again.replayedBatches, 10, 'only the last wave is replayed: every record before it is behind a synced batch')
  t.same((await values(again, 200)).filter((v, i) => v !== i + 1), [], 'every batch is back')
})

t.test('a new journal after sync batches numbers its records above their key, so that replay applies them', async t => {
  const dir = await tempDir(t)
  let store = await journaled(dir)
  await writeRange(store, 1, 5, 'journal')
  await writeRange(store, 6, 6, 'sync')
  await store.close()
  // The operator moved the journal away: the next one starts afresh, and LevelDB still says record 5 is synced.
  await rm(journalPath(dir))
  const snapshot = await snapshotOf(dir)
  store = await journaled(dir)
  await writeRange(store, 7, 9, 'journal')
  t.same((await readJournal(journalPath(dir)))?.batches.map(b => b.seq), [6, 7, 8], 'the new journal goes on from 6')
  await powerCut(dir, store, snapshot)
  const again = await Store.open(dir)
  t.teardown(async () => { await again.close() })
  t.equal(again.replayedBatches, 3)
  t.same(await values(again, 9), [1, 2, 3, 4, 5, 6, 7, 8, 9])
})
