// Group commit of the chain's messages into PostgreSQL. Messages that arrive while a transaction runs form the
// next group; each group is one transaction of one INSERT for its readings (arrays through unnest: one round
// trip whatever the group's size) and the erasures it carries. A message's `done` (its PUBACK to the broker) is
// called only after that transaction has committed, so what the broker considers delivered is in PostgreSQL.
//
// - Deduplication: the readings' primary key is the relay's documented key (box, profile, measured_at), and
//   ON CONFLICT DO NOTHING makes a redelivery (after a lost PUBACK, a killed instance, a broker restart) a no-op.
// - PostgreSQL down or restarting: the group is retried with a growing delay until it commits; nothing is
//   acknowledged meanwhile, so the broker keeps the messages.
// - Erasure: the member's readings from that box are deleted and a tombstone (a digest of the profile id) stops
//   a later redelivery of one of their readings from being stored again.
import type pg from 'pg'
import type { Logger } from 'pino'
import type { ChainMessage } from '../../firmware-protocol/upstream.ts'

export interface Pending { message: ChainMessage, done: () => void }

export interface WriterCounts {
  /** Readings inserted. */
  stored: number
  /** Readings already present (a redelivery). */
  duplicates: number
  /** Erasures applied. */
  erasures: number
  /** Transactions committed. */
  commits: number
  /** Failed attempts (PostgreSQL unreachable, a failed transaction); each was retried. */
  failures: number
}

/** The largest group: bounded anyway by the broker's Receive Maximum across the instance's connection. */
const MAX_GROUP = 5000
const MAX_RETRY_MS = 5000

const INSERT = `INSERT INTO readings (profile_id, measured_at, box_id, heart_rate, source, device_id)
SELECT r.p, r.m, r.b, r.h, r.s, r.d
  FROM unnest($1::text[], $2::bigint[], $3::text[], $4::smallint[], $5::text[], $6::text[]) AS r(p, m, b, h, s, d)
 WHERE NOT EXISTS (SELECT 1 FROM erasures e WHERE e.box_id = r.b AND e.profile_digest = sha256(convert_to(r.p, 'UTF8')))
ON CONFLICT DO NOTHING`
const ERASE = 'DELETE FROM readings WHERE box_id = $1 AND profile_id = $2'
const TOMBSTONE = `INSERT INTO erasures (box_id, profile_digest, erased_at) VALUES ($1, sha256(convert_to($2, 'UTF8')), $3)
ON CONFLICT (box_id, profile_digest) DO UPDATE SET erased_at = GREATEST(erasures.erased_at, EXCLUDED.erased_at)`

export class ChainWriter {
  readonly counts: WriterCounts = { stored: 0, duplicates: 0, erasures: 0, commits: 0, failures: 0 }
  private queue: Pending[] = []
  private running: Promise<void> | null = null
  private stopped = false
  private wake: (() => void) | null = null
  /** The last failure's message while failing; null once a transaction commits. */
  lastError: string | null = null

  constructor (private readonly pool: pg.Pool, private readonly log: Logger) {}

  submit (p: Pending): void {
    if (this.stopped) return
    this.queue.push(p)
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
      try {
        await this.write(group)
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
      this.queue.splice(0, group.length)
      for (const p of group) p.done()
    }
  }

  private async write (group: Pending[]): Promise<void> {
    const p: string[] = []; const m: string[] = []; const b: string[] = []; const h: number[] = []; const s: string[] = []; const d: Array<string | null> = []
    const erasures: Array<Extract<ChainMessage, { kind: 'erasure' }>> = []
    for (const { message } of group) {
      if (message.kind === 'erasure') { erasures.push(message); continue }
      p.push(message.profile_id); m.push(String(message.reading.measured_at)); b.push(message.box_id)
      h.push(message.reading.heart_rate); s.push(message.reading.source); d.push(message.reading.device_id ?? null)
    }
    const client = await this.pool.connect()
    let broken = false
    // A checked-out client reports a dropped connection (PostgreSQL restarting) as an 'error' event, which
    // unhandled would end the process; the query in progress rejects as well, and the group is retried.
    const dropped = (): void => { broken = true }
    client.on('error', dropped)
    try {
      // Readings alone are one statement, atomic by itself; erasures join them in one transaction.
      const transaction = erasures.length > 0
      if (transaction) await client.query('BEGIN')
      const inserted = p.length === 0 ? 0 : (await client.query(INSERT, [p, m, b, h, s, d])).rowCount ?? 0
      for (const e of erasures) {
        await client.query(ERASE, [e.box_id, e.profile_id])
        await client.query(TOMBSTONE, [e.box_id, e.profile_id, e.erased_at])
      }
      if (transaction) await client.query('COMMIT')
      this.counts.commits++
      this.counts.stored += inserted
      this.counts.duplicates += p.length - inserted
      this.counts.erasures += erasures.length
    } catch (err) {
      broken = true
      await client.query('ROLLBACK').catch(() => {})
      throw err
    } finally {
      // A client whose transaction failed (often a dropped connection) is not given back for reuse.
      client.off('error', dropped)
      client.release(broken)
    }
  }
}
