// The LevelDB store: one database per data directory, one sublevel per
// aggregate, a schema-version key and an ordered list of migrations.
// LevelDB locks its directory, so a second process on the same directory
// fails with StoreLockedError (a clear message, not a stack trace).
import { mkdir } from 'node:fs/promises'
import { join } from 'node:path'
import { Level, type BatchOperation } from 'level'
import type { BatchOp, Sub } from './sublevel.ts'
import { buildHourRollups } from './hour-rollups.ts'
import { apiErrorMessage } from '../error-codes.ts'
import type { AtomicBatch } from './types.ts'
import { LevelReadingLog } from './reading-log.ts'
import { recoverRewrite, rewriteStore } from './rewrite.ts'

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
 * 'io' (another LevelDB I/O error), 'busy' (the database was closed for a
 * moment by a rewrite) or undefined (not a storage failure).
 * LevelDB reports the OS error only in its status text (LEVEL_IO_ERROR
 * "IO error: <file>: No space left on device"), so that text is read here.
 */
export function storageFailure (err: unknown): 'full' | 'io' | 'busy' | undefined {
  let e = err as { code?: unknown, message?: unknown, cause?: unknown } | undefined
  for (let depth = 0; depth < 8 && e !== undefined && e !== null && typeof e === 'object'; depth++) {
    if (e.code === 'ENOSPC') return 'full'
    // The database closed for a moment while a rewrite (rewrite.ts) swapped it.
    if (e.code === 'LEVEL_DATABASE_NOT_OPEN' || e.code === 'LEVEL_ITERATOR_NOT_OPEN') return 'busy'
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

export class Store implements AtomicBatch {
  readonly dir: string
  readonly db: Level<string, unknown>
  /** Where the ingest pipeline writes each group of readings, durably (reading-log.ts). */
  readonly readingLog: LevelReadingLog
  private readonly subs = new Map<string, Sub<any>>()
  /** While a rewrite swaps the database (rewrite.ts), batches wait for this promise. */
  private gate: Promise<void> | null = null
  /** Batches being written now; a rewrite waits for none before it swaps. */
  private writing = 0
  private readonly idleWaiters: Array<() => void> = []
  /** While a rewrite copies the database: the full (prefixed) keys that batches touched meanwhile. */
  private touched: Set<string> | null = null
  /** The rewrite running (rewrite.ts), which close() waits for; none starts once closing. */
  private rewrite: Promise<unknown> | null = null
  private closing = false

  private constructor (dir: string, db: Level<string, unknown>) {
    this.dir = dir
    this.db = db
    this.readingLog = new LevelReadingLog(this)
  }

  /**
   * Opens (and migrates) the store in dataDir. `writeBufferSize` is classic-level's option of that name (the size of
   * LevelDB's log and memtable before it switches to a new log file; default 4 MiB): tests make it small.
   */
  static async open (dataDir: string, options: { writeBufferSize?: number } = {}): Promise<Store> {
    try {
      await mkdir(dataDir, { recursive: true, mode: 0o700 })
    } catch (err) {
      throw dataDirError(dataDir, err)
    }
    const location = join(dataDir, 'db')
    let rewriteDue: boolean
    try {
      rewriteDue = await recoverRewrite(location)
    } catch (err) {
      throw dataDirError(dataDir, err)
    }
    const db = new Level<string, unknown>(location, { valueEncoding: 'json', ...(options.writeBufferSize === undefined ? {} : { writeBufferSize: options.writeBufferSize }) })
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
      await store.migrate()
      // A rewrite that an erasure needed and that a stop or crash cut off (rewrite.ts) runs before anything else.
      if (rewriteDue) await rewriteStore(store)
    } catch (err) {
      await store.close().catch(() => undefined)
      throw err
    }
    return store
  }

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
   * sublevel's encoding). `sync` (one fsync for the whole batch) for state
   * changes that must survive a power cut once answered. Groups of readings go
   * through `readingLog` instead.
   */
  async batch (ops: BatchOp[], options: { sync?: boolean } = {}): Promise<void> {
    if (ops.length === 0) return
    while (this.gate !== null) await this.gate
    this.writing++
    try {
      await this.db.batch(ops as Array<BatchOperation<Level<string, unknown>, string, unknown>>, { sync: options.sync === true })
    } finally {
      // Recorded once written: a batch that ends after the rewrite's copy began may be missing from its snapshot.
      if (this.touched !== null) for (const op of ops) this.touched.add(op.sublevel.prefixKey(op.key, 'utf8'))
      this.writing--
      if (this.writing === 0) for (const fn of this.idleWaiters.splice(0)) fn()
    }
  }

  /** Every sublevel opened through sub(), to be reopened after the database was (rewrite.ts). */
  get sublevels (): ReadonlyArray<Sub<any>> { return [...this.subs.values()] }

  /** Runs a rewrite (rewrite.ts) unless the store is closing; close() waits for it. */
  async rewriting<T> (fn: () => Promise<T>): Promise<T> {
    if (this.closing) throw new StoreOpenError(this.dir, { cause: new Error('the store is closing') })
    const run = fn()
    this.rewrite = run
    try { return await run } finally { if (this.rewrite === run) this.rewrite = null }
  }

  /** Starts (or, with false, stops) recording the keys that batches touch (rewrite.ts copies the database meanwhile). */
  recordTouched (on = true): void { this.touched = on ? new Set() : null }

  /**
   * Holds every new batch until `release` is called, once the batches being written have finished; answers the
   * keys recorded since recordTouched and stops recording.
   */
  async holdWrites (): Promise<{ touched: Set<string>, release: () => void }> {
    while (this.gate !== null) await this.gate
    let release!: () => void
    this.gate = new Promise<void>(resolve => { release = () => { this.gate = null; resolve() } })
    if (this.writing > 0) await new Promise<void>(resolve => { this.idleWaiters.push(resolve) })
    const touched = this.touched ?? new Set<string>()
    this.touched = null
    return { touched, release }
  }

  /**
   * Resolves once no rewrite holds the store (at once when none does): while a rewrite swaps the database it is
   * closed, and a read fails with LEVEL_DATABASE_NOT_OPEN; what can wait (the ingest pipeline) waits here.
   */
  async settled (): Promise<void> {
    while (this.gate !== null) await this.gate
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

  /** Waits for the groups of readings being written, then closes LevelDB. */
  async close (): Promise<void> {
    this.closing = true
    try {
      await this.rewrite?.catch(() => undefined)
      await this.readingLog.drain()
    } finally {
      if (this.db.status === 'open' || this.db.status === 'opening') await this.db.close()
    }
  }
}
