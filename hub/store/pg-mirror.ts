// An instance's memory of a PostgreSQL table that other instances write too (the users' switches in pg-users.ts,
// the pairings in pg-devices.ts): reloaded from the rows a trigger's notification names.
import type { Logger } from 'pino'
import type { PgEvents } from './pg-events.ts'

/** What an instance keeps in memory of a table, and how it reads it back. */
export interface MirrorSource<R> {
  /** The current rows of these keys; a key missing from the answer has no row. */
  some (keys: string[]): Promise<Map<string, R>>
  /** Every row memory holds something of; a key held in memory and missing from the answer has none. */
  all (): Promise<Map<string, R>>
  /** The keys memory holds something of. */
  held (): Iterable<string>
  /** Makes memory hold the row of `key` (undefined: none). */
  apply (key: string, row: R | undefined): void
  /** True once the store is closed (its pool ended): a failed reload is not retried. */
  closed (): boolean
}

/**
 * Keeps an instance's memory of a table right while other instances write it. A notification on `channel` names a
 * changed key ('' for all); keys heard while a reload runs are reloaded together by the next one, and reloads run
 * one at a time. A reload that failed is retried; a reconnection of the notification connection reloads all.
 *
 * A reload may read a row before a write of this instance commits and answer after it: each application carries
 * a ticket, taken when its read starts (a reload) or once its write committed (`local`), and a row never replaces
 * the one applied with a later ticket.
 */
export class RowMirror<R> {
  private tickets = 0
  /** The ticket of what was last applied per key; cleared when no reload is in flight (then nothing can be stale). */
  private readonly appliedAt = new Map<string, number>()
  private queued = new Set<string>()
  private queuedAll = false
  private work: Promise<void> = Promise.resolve()
  private retry: NodeJS.Timeout | null = null
  private readonly cleanups: Array<() => void> = []
  private started = false

  constructor (private readonly source: MirrorSource<R>, private readonly events: PgEvents, private readonly channel: string, private readonly log?: Logger) {}

  /** Listens for changes, then reads every row (rejects when the read fails). */
  async start (): Promise<void> {
    if (!this.started) {
      this.started = true
      this.cleanups.push(await this.events.listen(this.channel, key => { this.changed(key) }))
      this.cleanups.push(this.events.onReconnect(() => { this.changed('') }))
    }
    // In the queue, as every reload: two reloads at once could apply each other's stale rows.
    const run = this.work.then(async () => { await this.reload(true, []) })
    this.work = run.catch(() => {})
    await run
  }

  stop (): void {
    this.started = false
    for (const off of this.cleanups.splice(0)) off()
    if (this.retry !== null) clearTimeout(this.retry)
    this.retry = null
  }

  /** A write of this instance committed: memory holds its row from now on. */
  local (key: string, row: R | undefined): void {
    this.put(key, row, ++this.tickets)
  }

  /** Resolves once every change heard so far is in memory. */
  async settled (): Promise<void> {
    let current: Promise<void>
    do { current = this.work; await current } while (current !== this.work)
  }

  private changed (key: string): void {
    if (key === '') this.queuedAll = true
    else this.queued.add(key)
    this.schedule()
  }

  private schedule (): void {
    if (!this.started) return
    this.work = this.work.then(async () => { await this.drain() })
  }

  private async drain (): Promise<void> {
    const all = this.queuedAll
    const keys = [...this.queued]
    if (!this.started || (!all && keys.length === 0)) return
    this.queuedAll = false
    this.queued = new Set()
    try {
      await this.reload(all, keys)
    } catch (err) {
      if (this.source.closed()) { this.stop(); return }
      this.log?.warn({ err: (err as Error).message, channel: this.channel }, 'reloading changed rows failed; retrying')
      this.queuedAll ||= all
      for (const k of keys) this.queued.add(k)
      this.retry ??= setTimeout(() => { this.retry = null; this.schedule() }, 1000)
      this.retry.unref()
    }
  }

  private async reload (all: boolean, keys: string[]): Promise<void> {
    const ticket = ++this.tickets
    this.appliedAt.clear()
    try {
      const rows = all ? await this.source.all() : await this.source.some(keys)
      const gone = new Set(all ? this.source.held() : keys)
      for (const [key, row] of rows) { gone.delete(key); this.put(key, row, ticket) }
      for (const key of gone) this.put(key, undefined, ticket)
    } finally {
      this.appliedAt.clear()
    }
  }

  private put (key: string, row: R | undefined, ticket: number): void {
    if ((this.appliedAt.get(key) ?? 0) > ticket) return
    this.appliedAt.set(key, ticket)
    this.source.apply(key, row)
  }
}
