// Group commit of the chain's messages into PostgreSQL. Messages that arrive while a transaction runs form the
// next group; each group's readings are stored by one call of the readings store's write path (hr_store_readings,
// hub/store/pg-readings-write.ts: arrays through unnest, one round trip whatever the group's size), so that what
// boxes forward gets its rollups and latest records and is notified to every hub instance, as readings posted to
// the hub do. A message's `done` (its PUBACK to the broker) is called only after that call has committed, so what
// the broker considers delivered is in PostgreSQL.
//
// - Deduplication: a member's readings are unique per millisecond, and a reading held already is not stored
//   again, so a redelivery (after a lost PUBACK, a killed instance, a broker restart) is a no-op.
// - Another instance writing the same member: the write path stores a member's readings under a lock on that
//   member. A group does not wait for members another transaction holds: their readings stay first in the queue,
//   unacknowledged, for the next group, so that the instances' transactions run side by side (a shared
//   subscription spreads every member over all of them). A reading deferred twice waits, the third time.
// - PostgreSQL down or restarting: the group is retried with a growing delay until it commits; nothing is
//   acknowledged meanwhile, so the broker keeps the messages.
// - Erasure: the member's readings from that box are deleted, their rollups and latest record are made again
//   from what is left, and a tombstone (a digest of the profile id) stops a later redelivery of one of their
//   readings from being stored again. A group with erasures is one transaction that locks all its members first,
//   in one order, as the write path does.
import type pg from 'pg'
import type { Logger } from 'pino'
import type { ChainMessage } from '../../firmware-protocol/upstream.ts'
import { ERASE_BOX_MEMBER_SQL, LOCK_PROFILES_SQL, sqlGap, STORE_READINGS_SQL, storeReadingsParams, type ReadingRow, type StoreReadingsRow } from '../store/pg-readings-write.ts'
import { inTransaction, withClient } from '../store/pg-op.ts'

export interface Pending { message: ChainMessage, done: () => void }

export interface WriterCounts {
  /** Readings inserted. */
  stored: number
  /** Readings already present (a redelivery). */
  duplicates: number
  /** Erasures applied. */
  erasures: number
  /** Readings left for a later group because another instance's transaction held their member. */
  deferred: number
  /** Transactions committed. */
  commits: number
  /** Failed attempts (PostgreSQL unreachable, a failed transaction); each was retried. */
  failures: number
}

/** The largest group: bounded anyway by the broker's Receive Maximum across the instance's connection. */
const MAX_GROUP = 5000
const MAX_RETRY_MS = 5000

export interface ChainWriterOptions {
  /** The stream gap (ms) rollups credit streamed time with (config data.stream_gap_seconds × 1000; default 5 s). */
  gapMs?: number
}

/** A message in the queue, and how many times its member was held by another instance's transaction. */
interface Queued { pending: Pending, deferrals: number }

/** After this many deferrals, a group waits for the members other transactions hold (no message waits forever). */
const MAX_DEFERRALS = 2

export class ChainWriter {
  readonly counts: WriterCounts = { stored: 0, duplicates: 0, erasures: 0, deferred: 0, commits: 0, failures: 0 }
  private queue: Queued[] = []
  private running: Promise<void> | null = null
  private stopped = false
  private wake: (() => void) | null = null
  /** The last failure's message while failing; null once a transaction commits. */
  lastError: string | null = null

  private readonly gapMs: number

  constructor (private readonly pool: pg.Pool, private readonly log: Logger, options: ChainWriterOptions = {}) {
    this.gapMs = options.gapMs ?? 5000
  }

  submit (p: Pending): void {
    if (this.stopped) return
    this.queue.push({ pending: p, deferrals: 0 })
    this.running ??= this.drain().finally(() => { this.running = null })
  }

  /** Lets the group being written finish (or stops retrying it) and takes nothing more; unacknowledged messages stay with the broker. */
  async stop (): Promise<void> {
    this.stopped = true
    this.wake?.()
    await this.running
  }

  private async drain (): Promise<void> {
    let delay = 100
    while (this.queue.length > 0 && !this.stopped) {
      const group = this.queue.slice(0, MAX_GROUP)
      let deferred: Queued[]
      try {
        deferred = await this.write(group)
      } catch (err) {
        this.counts.failures++
        const message = (err as Error).message
        if (this.lastError !== message) this.log.warn({ err: message, group: group.length, retry_ms: delay }, 'PostgreSQL write failed; retrying, nothing acknowledged')
        this.lastError = message
        await new Promise<void>(resolve => { const t = setTimeout(resolve, delay); this.wake = () => { clearTimeout(t); resolve() } })
        this.wake = null
        delay = Math.min(MAX_RETRY_MS, delay * 2)
        continue
      }
      if (this.lastError !== null) this.log.info('PostgreSQL writes succeed again')
      this.lastError = null
      delay = 100
      // What was deferred stays first in the queue, unacknowledged, for the next group.
      for (const q of deferred) q.deferrals++
      this.queue.splice(0, group.length, ...deferred)
      const later = new Set(deferred)
      for (const q of group) if (!later.has(q)) q.pending.done()
    }
  }

  /** Writes a group; answers the messages deferred because another transaction held their member. */
  private async write (group: Queued[]): Promise<Queued[]> {
    const rows: ReadingRow[] = []
    const readings: Queued[] = []
    const erasures: Array<Extract<ChainMessage, { kind: 'erasure' }>> = []
    let wait = false
    for (const q of group) {
      const message = q.pending.message
      if (message.kind === 'erasure') { erasures.push(message); continue }
      rows.push({ ...message.reading, profile_id: message.profile_id, box_id: message.box_id })
      readings.push(q)
      if (q.deferrals >= MAX_DEFERRALS) wait = true
    }
    // Readings alone are one statement, atomic by itself; erasures join them in one transaction, which waits for
    // the members it needs (all locked first, in one order) so that the erasure is applied whole. A dropped
    // connection (PostgreSQL restarting) rejects the query in progress, and the group is retried.
    const transaction = erasures.length > 0
    if (transaction) wait = true
    const { stored, deferred } = await (transaction ? inTransaction : withClient)(this.pool, async client => {
      if (transaction) await client.query(LOCK_PROFILES_SQL, [[...rows.map(r => r.profile_id), ...erasures.map(e => e.profile_id)]])
      let stored = 0
      let deferred: Queued[] = []
      if (rows.length > 0) {
        const answer = (await client.query<StoreReadingsRow>(STORE_READINGS_SQL, storeReadingsParams(rows, this.gapMs, wait))).rows[0]
        stored = answer?.stored ?? 0
        deferred = (answer?.deferred ?? []).flatMap(i => readings[i - 1] ?? [])
      }
      for (const e of erasures) await client.query(ERASE_BOX_MEMBER_SQL, [e.box_id, e.profile_id, e.erased_at, sqlGap(this.gapMs)])
      return { stored, deferred }
    })
    this.counts.commits++
    this.counts.stored += stored
    this.counts.duplicates += rows.length - deferred.length - stored
    this.counts.erasures += erasures.length
    this.counts.deferred += deferred.length
    return deferred
  }
}
