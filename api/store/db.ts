// The LevelDB store: one database per data directory, one sublevel per
// aggregate, a schema-version key and an ordered list of migrations.
// LevelDB locks its directory, so a second process on the same directory
// fails with StoreLockedError (a clear message, not a stack trace).
import { mkdir } from 'node:fs/promises'
import { join } from 'node:path'
import { Level, type BatchOperation, type BatchOptions } from 'level'
import type { AbstractSublevel } from 'abstract-level'
import { buildHourRollups } from './readings.ts'

export type Sub<V> = AbstractSublevel<Level<string, unknown>, string | Buffer | Uint8Array, string, V>

export class StoreLockedError extends Error {
  readonly code = 'HR_STORE_LOCKED'
  constructor (dir: string, options?: { cause?: unknown }) {
    super(`the data directory ${dir} is in use by another hr-relay process (LevelDB holds a lock on it); stop that process or pass another --data-dir`, options)
    this.name = 'StoreLockedError'
  }
}

export class StoreOpenError extends Error {
  readonly code = 'HR_STORE_OPEN'
  constructor (dir: string, options?: { cause?: unknown }) {
    const why = (options?.cause as Error | undefined)?.message ?? 'unknown error'
    super(`cannot open the data store in ${dir}: ${why}`, options)
    this.name = 'StoreOpenError'
  }
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

export type BatchOp =
  | { type: 'put', sublevel: Sub<any>, key: string, value: unknown }
  | { type: 'del', sublevel: Sub<any>, key: string }

export class Store {
  readonly dir: string
  readonly db: Level<string, unknown>
  private readonly subs = new Map<string, Sub<any>>()

  private constructor (dir: string, db: Level<string, unknown>) {
    this.dir = dir
    this.db = db
  }

  static async open (dataDir: string): Promise<Store> {
    await mkdir(dataDir, { recursive: true, mode: 0o700 })
    const location = join(dataDir, 'db')
    const db = new Level<string, unknown>(location, { valueEncoding: 'json' })
    try {
      await db.open()
    } catch (err) {
      const cause = (err as { cause?: { code?: string } }).cause
      if (cause?.code === 'LEVEL_LOCKED') throw new StoreLockedError(dataDir, { cause: err })
      throw new StoreOpenError(dataDir, { cause: err })
    }
    const store = new Store(dataDir, db)
    await store.migrate()
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
   * sublevel's encoding). `sync` (one fsync for the whole batch) for OAuth
   * state changes and acknowledged readings.
   */
  async batch (ops: BatchOp[], options: { sync?: boolean } = {}): Promise<void> {
    if (ops.length === 0) return
    const batchOptions: BatchOptions<string, unknown> = { sync: options.sync ?? false }
    await this.db.batch(ops as Array<BatchOperation<Level<string, unknown>, string, unknown>>, batchOptions)
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

  async close (): Promise<void> {
    if (this.db.status === 'open' || this.db.status === 'opening') await this.db.close()
  }
}
