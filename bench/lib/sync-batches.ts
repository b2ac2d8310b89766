// The durable references' store (workers/aedes-ref.ts and
// workers/ws-broadcast-ref.ts, started with { durable: true }): hr-relay's
// group commit with the least work around it. Each message is one record in a
// LevelDB batch written with sync; the messages that arrive while a batch is
// written form the next batch, which starts before the finished one is
// answered (as api/pipeline/ingest.ts does). A message's callback runs once
// its batch is durable, so a reference that acknowledges or forwards in it
// keeps hr-relay's "acknowledged means stored" and "publish after storage".
//
// BENCH_DURABLE_REF=journal makes a batch durable another way, to measure it
// beside the LevelDB sync batch (bench/README.md, "The targets not met"): the
// batch goes to LevelDB without sync and, at the same time, to a journal file
// that was zero-filled and synced when the store opened, overwritten in place
// with O_DSYNC. Its blocks are allocated and written before the first batch,
// so a batch changes no metadata, and its fdatasync waits for no ext4
// unwritten-extent conversion on a kernel worker, as an append does. The
// journal wraps round when full: a real journal would be checkpointed before
// its space is reused; this one only measures the disk path, and the store is
// thrown away on close. As in hr-relay's store, a record of up to
// DEFAULT_TIMING.onThreadBytes (a group of a few readings) is written on the
// event loop's thread with writeSync, right after LevelDB's batch has gone to
// a pool thread; a larger one goes to the pool too.
import { closeSync, constants, openSync, write as writeAt, writeSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Level } from 'level'
import { createJournal, DEFAULT_TIMING } from '../../api/store/journal.ts'

/** How a batch is made durable: a LevelDB sync batch (hr-relay's way), or a preallocated journal beside a LevelDB batch without sync. */
export type DurableMode = 'sync' | 'journal'

/** The mode BENCH_DURABLE_REF asks for ('sync' when unset); throws on any other value. */
export function durableMode (value = process.env.BENCH_DURABLE_REF): DurableMode {
  if (value === undefined || value === '' || value === 'sync') return 'sync'
  if (value === 'journal') return 'journal'
  throw new Error(`BENCH_DURABLE_REF=${value}: expected sync or journal`)
}

/** The journal's size: 64 MiB, several minutes of the bench's 2,000 readings a second (about 100 bytes a record) before it wraps round. */
export const JOURNAL_BYTES = 64 << 20

interface Waiting { key: string, value: Uint8Array, done: (err: Error | null) => void }

const SYNC = Object.freeze({ sync: true })

export class SyncBatches {
  /** Sync batches written and records stored since open. */
  batches = 0
  stored = 0
  private pending: Waiting[] = []
  private writing = false
  private seq = 0

  /** Where the next batch goes in the journal. */
  private journalAt = 0

  /** `journal`: the journal's descriptor (O_DSYNC), or -1 in sync mode. */
  private constructor (readonly dir: string, private readonly db: Level<string, Uint8Array>, private readonly journal: number) {}

  /** A fresh store in a temporary directory (removed by close). */
  static async open (mode: DurableMode = durableMode()): Promise<SyncBatches> {
    const dir = await mkdtemp(join(tmpdir(), 'hr-relay-bench-durable-'))
    const db = new Level<string, Uint8Array>(dir, { keyEncoding: 'utf8', valueEncoding: 'view' })
    await db.open()
    return new SyncBatches(dir, db, mode === 'journal' ? await openJournal(join(dir, 'journal')) : -1)
  }

  /** Stores `value` under `prefix` and a sequence number; `done` runs once its batch is durable. */
  add (prefix: string, value: Uint8Array, done: (err: Error | null) => void): void {
    this.pending.push({ key: `${prefix}!${String(this.seq++).padStart(12, '0')}`, value, done })
    this.write()
  }

  async close (): Promise<void> {
    if (this.journal >= 0) closeSync(this.journal)
    await this.db.close()
    await rm(this.dir, { recursive: true, force: true })
  }

  private write (): void {
    if (this.writing || this.pending.length === 0 || this.db.status !== 'open') return
    this.writing = true
    const group = this.pending
    this.pending = []
    const ops = group.map(w => ({ type: 'put' as const, key: w.key, value: w.value }))
    const settle = (err: Error | null): void => {
      this.writing = false
      if (err === null) { this.batches++; this.stored += group.length }
      this.write()
      for (const w of group) w.done(err)
    }
    if (this.journal < 0) {
      this.db.batch(ops, SYNC).then(() => { settle(null) }, (err: Error) => { settle(err) })
      return
    }
    // Durable when both are done: the journal's write (O_DSYNC) and LevelDB's batch (which reads then see).
    const record = journalRecord(group)
    if (this.journalAt + record.length > JOURNAL_BYTES) this.journalAt = 0
    const at = this.journalAt
    this.journalAt += record.length
    let left = 2
    let failed: Error | null = null
    const half = (err: Error | null): void => {
      failed ??= err
      if (--left === 0) settle(failed)
    }
    this.db.batch(ops).then(() => { half(null) }, (err: Error) => { half(err) })
    if (record.length > DEFAULT_TIMING.onThreadBytes) {
      writeAt(this.journal, record, 0, record.length, at, err => { half(err) })
      return
    }
    try {
      writeSync(this.journal, record, 0, record.length, at)
      half(null)
    } catch (err) {
      half(err as Error)
    }
  }
}

/**
 * Creates the journal zero-filled and synced as hr-relay's store does (api/store/journal.ts), so that every block of
 * it is allocated and written; opens it with O_DSYNC. Its header is overwritten by the first records: this journal
 * is never read back.
 */
async function openJournal (path: string): Promise<number> {
  await createJournal(path, JOURNAL_BYTES, 0)
  return openSync(path, constants.O_RDWR | constants.O_DSYNC)
}

/** A batch as the journal holds it: for each record, its key's and value's lengths (32-bit little-endian), then both. */
export function journalRecord (group: ReadonlyArray<{ key: string, value: Uint8Array }>): Buffer {
  let size = 0
  for (const w of group) size += 8 + Buffer.byteLength(w.key) + w.value.byteLength
  const out = Buffer.allocUnsafe(size)
  let at = 0
  for (const w of group) {
    const keyAt = at + 8
    const keyEnd = keyAt + out.write(w.key, keyAt)
    out.writeUInt32LE(keyEnd - keyAt, at)
    out.writeUInt32LE(w.value.byteLength, at + 4)
    out.set(w.value, keyEnd)
    at = keyEnd + w.value.byteLength
  }
  return out
}
