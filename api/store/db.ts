// The LevelDB store: one database per data directory, one sublevel per
// aggregate, a schema-version key and an ordered list of migrations.
// LevelDB locks its directory, so a second process on the same directory
// fails with StoreLockedError (a clear message, not a stack trace).
import { mkdir } from 'node:fs/promises'
import { join } from 'node:path'
import { Level, type BatchOperation, type BatchOptions } from 'level'
import type { BatchOp, Sub } from './sublevel.ts'
import { DEFAULT_TIMING, JOURNAL_SUPPORTED, MIN_JOURNAL_BYTES, Journal, JournalDamagedError, createJournal, readJournal, type JournalOp, type JournalTiming, type Recovered } from './journal.ts'
import { buildHourRollups } from './hour-rollups.ts'
import { apiErrorMessage } from '../error-codes.ts'
import type { AtomicBatch } from './types.ts'
import { WindowCount } from '../window-count.ts'

export type { BatchOp, Sub }

export class StoreLockedError extends Error {
  readonly code = 'HR_STORE_LOCKED'
  constructor (dir: string, options?: { cause?: unknown }) {
    super(apiErrorMessage('HR_STORE_LOCKED', { dir }), options)
    this.name = 'StoreLockedError'
  }
}

export class StoreOpenError extends Error {
  readonly code = 'HR_STORE_OPEN'
  constructor (dir: string, options?: { cause?: unknown }) {
    const why = (options?.cause as Error | undefined)?.message ?? 'unknown error'
    super(apiErrorMessage('HR_STORE_OPEN', { dir, why }), options)
    this.name = 'StoreOpenError'
  }
}

/**
 * The data directory (or a file in it) cannot be used: permission denied,
 * a path component that is not a directory, a read-only file system. The
 * message names the path and what to fix.
 */
export class DataDirError extends Error {
  readonly code = 'HR_DATA_DIR'
  constructor (dir: string, problem: string, path: string, options?: { cause?: unknown }) {
    super(apiErrorMessage('HR_DATA_DIR', { dir, problem, path }), options)
    this.name = 'DataDirError'
  }
}

const FS_PROBLEMS: Record<string, string> = {
  EACCES: 'permission denied (the service user needs read and write access)',
  EPERM: 'permission denied (the service user needs read and write access)',
  ENOTDIR: 'not a directory (a part of the path is a file)',
  EROFS: 'read-only file system',
  ENOSPC: 'no space left on device'
}

/** A DataDirError for a failed file-system call on the data directory, or the error itself when it is another kind. */
export function dataDirError (dir: string, err: unknown): unknown {
  const e = err as NodeJS.ErrnoException
  const problem = typeof e?.code === 'string' ? FS_PROBLEMS[e.code] : undefined
  return problem === undefined ? err : new DataDirError(dir, problem, e.path ?? dir, { cause: err })
}

/**
 * What a failed store write means: 'full' (no space left on the device),
 * 'io' (another LevelDB I/O error) or undefined (not a storage failure).
 * LevelDB reports the OS error only in its status text (LEVEL_IO_ERROR
 * "IO error: <file>: No space left on device"), so that text is read here.
 */
export function storageFailure (err: unknown): 'full' | 'io' | undefined {
  let e = err as { code?: unknown, message?: unknown, cause?: unknown } | undefined
  for (let depth = 0; depth < 8 && e !== undefined && e !== null && typeof e === 'object'; depth++) {
    if (e.code === 'ENOSPC') return 'full'
    if (e.code === 'LEVEL_IO_ERROR' || e.code === 'EIO') {
      return typeof e.message === 'string' && /no space left on device/i.test(e.message) ? 'full' : 'io'
    }
    e = e.cause as typeof e
  }
  return undefined
}

/** Current schema version; bump it and append a migration when record shapes change. */
export const SCHEMA_VERSION = 2

export interface Migration {
  to: number
  describe: string
  run (store: Store): Promise<void>
}

/** Ordered migrations from version N-1 to N. Version 1 is the first schema and needs none. */
export const MIGRATIONS: Migration[] = [
  { to: 2, describe: 'hourly heart-rate rollups (hr_hour) built from the minute rollups', run: async store => { await buildHourRollups(store) } }
]

/**
 * The batch options, made once and frozen. abstract-level copies the batch's options into every operation
 * (`{ ...options, ...op }` in its array batch); V8 does that copy about 3x faster from a frozen object than from a
 * fresh `{ sync }` literal: the public batch path cost 7 µs per operation with the literal and 2 µs with these
 * (classic-level 3, abstract-level 3.1, Node 20), which was a quarter of the ingest path's CPU
 * (bench/HISTORY.md, ingest-capacity profile).
 */
const SYNC: BatchOptions<string, unknown> = Object.freeze({ sync: true })
const NO_SYNC: BatchOptions<string, unknown> = Object.freeze({ sync: false })
/** The options of a journaled batch: LevelDB without a sync, the journal with O_DSYNC (JournaledLevel._batch knows it by identity). */
const JOURNALED: BatchOptions<string, unknown> = Object.freeze({ sync: false })

/**
 * The options of a group written as a LevelDB sync batch while the journal is on (the rate is low: SyncPolicy). Its
 * batch carries SYNCED_KEY, the sequence number of the journal's last record: once the batch is synced, so is every
 * journaled batch before it (LevelDB's log is one file, written in order), and replay skips those records.
 */
const MARKED: BatchOptions<string, unknown> = Object.freeze({ sync: true })
/** The root key that a marked sync batch writes: the last journal record that LevelDB's synced log holds. */
const SYNCED_KEY = '\uffff journal synced'
const UTF8 = Object.freeze({ keyEncoding: 'utf8', valueEncoding: 'utf8' })

/**
 * When a group of readings, with the journal on, is a LevelDB sync batch instead of a journal record. Beside busy
 * processes, the sync batch costs the event loop one wait for a core (a pool thread sleeps in the fsync and wakes it
 * once) where the journal's record costs two (its thread sleeps in the O_DSYNC write twice), and it meets the
 * contention target at 200 devices where the journal does not; at a high rate the sync batch's fsync (an append,
 * which waits for ext4's extent conversion worker) falls behind and the journal does not (bench/README.md, "The
 * store's write-ahead journal").
 */
export interface SyncPolicy {
  /** Readings per second below which a group is a sync batch (0: every group goes through the journal). */
  belowPerSecond: number
  /** The window the rate is counted over (ms). */
  windowMs: number
}
export const DEFAULT_SYNC_POLICY: Readonly<SyncPolicy> = Object.freeze({ belowPerSecond: 500, windowMs: 1000 })

/** The empty key range whose compaction is a memtable flush (LevelDB's CompactRange flushes the memtable first). */
const FLUSH_START = '\uffff journal checkpoint 0'
const FLUSH_END = '\uffff journal checkpoint 1'

/** The journal's file in the data directory, beside LevelDB's directory. */
export function journalPath (dataDir: string): string {
  return join(dataDir, 'readings-journal')
}

/** classic-level's private batch method (abstract-level's implementer API) and its compactRange, which `level`'s types leave out. */
interface LevelInternals {
  _batch (operations: unknown[], options: BatchOptions<string, unknown>): Promise<void>
  compactRange (start: string, end: string): Promise<void>
}
const levelBatch = (Level.prototype as unknown as LevelInternals)._batch

/**
 * classic-level with the journal in its private batch method, where abstract-level hands over the operations
 * already prefixed and encoded: a journaled batch is written to the journal as LevelDB takes it, and to LevelDB
 * without a sync, at the same time. It resolves when both have.
 */
class JournaledLevel extends Level<string, unknown> {
  journal: Journal | undefined
  /** LevelDB writes of journaled batches still in flight: a checkpoint's flush waits for them. */
  readonly inflight = new Set<Promise<void>>()
  /**
   * Journaled and marked batches still in flight, each whole. One kind waits for the other's to settle before it
   * starts, so that a marked batch's key covers exactly the records whose LevelDB writes are before it in the log,
   * and every record after it is written after it (replay then applies those on top of it, in their order).
   */
  private readonly journaling = new Set<Promise<void>>()
  private readonly marking = new Set<Promise<void>>()
  /** Groups written as marked sync batches while the journal was on (SyncPolicy). */
  syncBatches = 0

  // Not an async function: every other batch goes to classic-level as before, with no promise added.
  _batch (operations: JournalOp[], options: BatchOptions<string, unknown>): Promise<void> {
    const journal = this.journal
    const ours = options === JOURNALED || options === MARKED
    if (!ours || journal === undefined) return levelBatch.call(this, operations, ours ? SYNC : options)
    return options === JOURNALED ? track(this.journaling, this.journaledBatch(operations, journal)) : track(this.marking, this.markedBatch(operations, journal))
  }

  private async markedBatch (operations: JournalOp[], journal: Journal): Promise<void> {
    if (this.journaling.size > 0) await Promise.allSettled([...this.journaling])
    const marker: JournalOp = { type: 'put', key: SYNCED_KEY, value: String(journal.lastSeq), ...UTF8 } as JournalOp
    await levelBatch.call(this, [...operations, marker], SYNC)
    this.syncBatches++
  }

  private async journaledBatch (operations: JournalOp[], journal: Journal): Promise<void> {
    if (this.marking.size > 0) await Promise.allSettled([...this.marking])
    const level = levelBatch.call(this, operations, NO_SYNC)
    this.inflight.add(level)
    void level.then(() => this.inflight.delete(level), () => this.inflight.delete(level))
    // The record is written on this thread while a pool thread writes LevelDB, where it can be (JournalTiming).
    let record: number | Promise<number | undefined>
    try {
      const now = journal.appendNow(operations)
      record = now === false ? journal.append(operations) : now
    } catch (err) {
      record = Promise.reject(err)
    }
    const [wrote, written] = await Promise.allSettled([level, record])
    if (wrote.status === 'rejected') {
      // In the journal but not in LevelDB: replay must not apply it (the pipeline plans on the store without it).
      // A cancel that fails marks the journal for a checkpoint before its next record (which then covers this one).
      if (written.status === 'fulfilled' && written.value !== undefined) await journal.cancel(written.value).catch(() => undefined)
      throw wrote.reason
    }
    if (written.status === 'rejected') throw written.reason
    // Larger than half the journal: made durable by a checkpoint (a LevelDB flush) instead.
    if (written.value === undefined) await journal.checkpointAll()
  }

  /** Every journaled batch LevelDB has taken, in synced table files: the checkpoint's flush. */
  async flush (): Promise<void> {
    await Promise.allSettled([...this.inflight])
    await (this as unknown as LevelInternals).compactRange(FLUSH_START, FLUSH_END)
    // LevelDB's CompactRange drops the flush's status; a write answers the background error it left, if any.
    await levelBatch.call(this, [{ type: 'put', key: '\uffff journal checkpoint', value: String(Date.now()), keyEncoding: 'utf8', valueEncoding: 'utf8' }], NO_SYNC)
  }
}

/** Adds `p` to `set` until it settles. */
function track (set: Set<Promise<void>>, p: Promise<void>): Promise<void> {
  set.add(p)
  const drop = (): void => { set.delete(p) }
  p.then(drop, drop)
  return p
}

export class Store implements AtomicBatch {
  readonly dir: string
  readonly db: Level<string, unknown>
  private readonly journaled: JournaledLevel
  private readonly subs = new Map<string, Sub<any>>()
  private journalStarting: Promise<void> | undefined
  /** Below which rate a group of readings is a sync batch while the journal is on (startJournal sets it). */
  syncPolicy: Readonly<SyncPolicy> = DEFAULT_SYNC_POLICY
  /** The readings of journaled groups, per SyncPolicy window. */
  private readonly rate = new WindowCount()
  /** The journal record that the last marked sync batch covered, as read at open (0: none). */
  private syncedAtOpen = 0

  private constructor (dir: string, db: JournaledLevel) {
    this.dir = dir
    this.db = db
    this.journaled = db
  }

  static async open (dataDir: string): Promise<Store> {
    try {
      await mkdir(dataDir, { recursive: true, mode: 0o700 })
    } catch (err) {
      throw dataDirError(dataDir, err)
    }
    const location = join(dataDir, 'db')
    const db = new JournaledLevel(location, { valueEncoding: 'json' })
    try {
      await db.open()
    } catch (err) {
      const cause = (err as { cause?: { code?: string, message?: string } }).cause
      if (cause?.code === 'LEVEL_LOCKED') throw new StoreLockedError(dataDir, { cause: err })
      // classic-level creates the location itself: its mkdir error (EACCES, ENOTDIR…) is the cause.
      if (cause?.code !== undefined && FS_PROBLEMS[cause.code] !== undefined) throw dataDirError(dataDir, cause)
      // LevelDB names the OS error only in its status text ("IO error: <file>: Permission denied").
      if (cause?.code === 'LEVEL_IO_ERROR' && /permission denied/i.test(cause.message ?? '')) {
        throw new DataDirError(dataDir, FS_PROBLEMS.EACCES!, location, { cause: err })
      }
      throw new StoreOpenError(dataDir, { cause: err })
    }
    const store = new Store(dataDir, db)
    try {
      await store.replay()
      await store.migrate()
    } catch (err) {
      await store.close().catch(() => undefined)
      throw err
    }
    return store
  }

  /**
   * Applies the journal's records after its checkpoint (the readings acknowledged since the last one, which a power
   * cut may have taken from LevelDB's unsynced log), then checkpoints them all.
   */
  private async replay (): Promise<void> {
    const path = journalPath(this.dir)
    let found: Recovered | undefined
    try {
      found = await readJournal(path)
    } catch (err) {
      if (err instanceof JournalDamagedError) throw new StoreOpenError(this.dir, { cause: err })
      throw dataDirError(this.dir, err)
    }
    const synced = Number(await this.db.get(SYNCED_KEY, UTF8 as never) ?? 0)
    this.syncedAtOpen = Number.isFinite(synced) ? synced : 0
    if (found === undefined) return
    // Records at or below the last marked sync batch's key are in LevelDB's synced log already, and batches after
    // them may have changed the same keys: applying them again would put older values back.
    const batches = found.batches.filter(b => b.seq > this.syncedAtOpen)
    for (const b of batches) await this.db.batch(b.ops as never, NO_SYNC)
    this.replayedBatches = batches.length
    const journal = await Journal.open(path, found, this.journaled)
    this.journaled.journal = journal
    await journal.checkpointAll()
  }

  /**
   * Turns the journal on for batches written with `journal: true`: it is made (or remade at a new size) in the
   * background, and until it is ready those batches are sync batches. `bytes` is its size; `timing` says which
   * records are written on the event loop's thread, `policy` below which rate a group is a sync batch instead
   * (tests and benchmarks set them). The first call starts the journal; later ones return its start and change nothing.
   */
  startJournal (bytes: number, timing: Readonly<JournalTiming> = DEFAULT_TIMING, policy: Readonly<SyncPolicy> = DEFAULT_SYNC_POLICY): Promise<void> {
    this.journalStarting ??= (async () => {
      this.syncPolicy = policy
      if (!JOURNAL_SUPPORTED) throw new Error('this platform cannot open a file with O_DSYNC')
      if (!(bytes >= MIN_JOURNAL_BYTES)) throw new RangeError(`a journal needs at least ${MIN_JOURNAL_BYTES} bytes (asked: ${bytes})`)
      const path = journalPath(this.dir)
      let journal = this.journaled.journal
      // Never at or below a marked sync batch's key: replay would skip the new journal's records.
      let lastSeq = Math.max(journal?.lastSeq ?? 0, this.syncedAtOpen)
      if (journal !== undefined && journal.size !== bytes) {
        this.journaled.journal = undefined
        await journal.close()
        lastSeq = Math.max(journal.lastSeq, lastSeq)
        journal = undefined
      }
      if (journal === undefined) {
        // Sequence numbers go on after the old journal's (none when there was no journal at open).
        await createJournal(path, bytes, lastSeq)
        journal = await Journal.open(path, { checkpoint: lastSeq, counter: 1, lastSeq }, this.journaled)
      }
      journal.timing = timing
      this.journaled.journal = journal
      this.journalReady = true
    })()
    return this.journalStarting
  }

  /** How many journal records were written on the event loop's thread and on the thread pool (none: no journal yet). */
  get journalWrites (): Readonly<{ onThread: number, pool: number }> | undefined {
    return this.journaled.journal?.writes
  }

  /** How many groups were written as sync batches while the journal was on, the rate being low (SyncPolicy). */
  get syncBatches (): number {
    return this.journaled.syncBatches
  }

  /** Whether batches written with `journal: true` go through the journal now (false: they are sync batches). */
  journalReady = false
  /** How many batches the open replayed from the journal (more than 0 only after an unclean stop). */
  replayedBatches = 0

  /** The sublevel of one aggregate (JSON values unless an encoding is given). */
  sub<V> (name: string, valueEncoding: 'json' | 'view' | 'buffer' | 'utf8' = 'json'): Sub<V> {
    let s = this.subs.get(name)
    if (s === undefined) {
      s = this.db.sublevel<string, V>(name, { valueEncoding }) as unknown as Sub<V>
      this.subs.set(name, s)
    }
    return s as Sub<V>
  }

  /**
   * Several sublevels written in one atomic batch with abstract-level's public
   * API (each op names its sublevel; abstract-level adds the prefix and the
   * sublevel's encoding). `sync` (one fsync for the whole batch) for OAuth
   * state changes; `journal` for a group of acknowledged readings (`readings` of them, for the SyncPolicy's rate):
   * through the journal, or a sync batch that says which journal records it covers.
   */
  batch (ops: BatchOp[], options: { sync?: boolean, journal?: boolean, readings?: number } = {}): Promise<void> {
    if (ops.length === 0) return Promise.resolve()
    let how = options.sync === true ? SYNC : NO_SYNC
    if (options.journal === true) how = !this.journalReady ? SYNC : this.belowSyncRate(options.readings ?? 1) ? MARKED : JOURNALED
    // abstract-level's array batch is an async function (a throw in it rejects): its promise is returned as it is.
    return this.db.batch(ops as Array<BatchOperation<Level<string, unknown>, string, unknown>>, how)
  }

  /** Counts `n` readings; true while the rate (of the last full window, or of this one so far) is below the SyncPolicy's bound. */
  private belowSyncRate (n: number): boolean {
    const policy = this.syncPolicy
    if (policy.belowPerSecond <= 0) return false
    const r = this.rate.add(n, policy.windowMs)
    const bound = policy.belowPerSecond * policy.windowMs / 1000
    return r.last < bound && r.count < bound
  }

  async get<V> (sub: Sub<V>, key: string): Promise<V | undefined> {
    const v = await sub.get(key)
    return v === undefined ? undefined : v
  }

  private async migrate (): Promise<void> {
    const meta = this.sub<number>('meta')
    const current = (await meta.get('schema_version')) ?? 0
    if (current > SCHEMA_VERSION) {
      throw new StoreOpenError(this.dir, { cause: new Error(`schema version ${current} is newer than this hr-relay (${SCHEMA_VERSION}); upgrade hr-relay`) })
    }
    for (const m of MIGRATIONS) {
      if (m.to > current && m.to <= SCHEMA_VERSION) {
        await m.run(this)
        await meta.put('schema_version', m.to, { sync: true } as any)
      }
    }
    if (current < SCHEMA_VERSION) await meta.put('schema_version', SCHEMA_VERSION, { sync: true } as any)
  }

  /** Checkpoints and closes the journal (nothing is left to replay after a clean stop), then closes LevelDB. */
  async close (): Promise<void> {
    try {
      await this.journalStarting?.catch(() => undefined)
      const journal = this.journaled.journal
      this.journalReady = false
      this.journaled.journal = undefined
      if (journal !== undefined) await (this.db.status === 'open' ? journal.close() : journal.abandon())
    } finally {
      if (this.db.status === 'open' || this.db.status === 'opening') await this.db.close()
    }
  }
}
