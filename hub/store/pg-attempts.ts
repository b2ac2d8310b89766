// The OAuth pages' counters of wrong attempts, shared by the hub's instances (hub/migrations/006-attempts.sql): a
// sign-in limit of 10 wrong passwords a minute is 10 for the whole hub, not 10 per instance behind the load
// balancer. Keys are sent and kept as SHA-256 digests. An instance that cannot reach PostgreSQL refuses the
// attempt with the error (the page answers 503 as for any store failure) rather than letting it through uncounted.
import { createHash } from 'node:crypto'
import type pg from 'pg'
import type { Logger } from 'pino'
import type { Attempt, AttemptCounter } from '../../api/oauth/rate-limit.ts'
import { ATTEMPT_LIMITS, type OAuthAttempts } from '../../api/oauth/context.ts'

/** Rows of keys not tried again are deleted at most once a minute per counter and instance. */
const PRUNE_EVERY_MS = 60_000

const keyDigest = (key: string): Buffer => createHash('sha256').update(key, 'utf8').digest()

interface ReserveRow { attempt_id: string | null, retry_after_ms: string | null }

export class PgAttempts implements AttemptCounter {
  private lastPrune = 0

  constructor (
    private readonly pool: pg.Pool,
    /** The counter's name in the table: counters with different limits never count each other's attempts. */
    private readonly limiter: string,
    private readonly limit: number,
    private readonly windowMs: number,
    private readonly o: { log?: Logger, now?: () => number } = {}
  ) {}

  private now (): number { return (this.o.now ?? Date.now)() }

  async reserve (keys: string[]): Promise<Attempt | null> {
    const now = this.now()
    this.maybePrune(now)
    const row = (await this.pool.query<ReserveRow>('SELECT attempt_id, retry_after_ms FROM hr_reserve_attempt($1, $2, $3, $4, $5)',
      [this.limiter, keys.map(keyDigest), this.limit, this.windowMs, now])).rows[0]
    if (row?.attempt_id == null) return null
    const id = row.attempt_id
    let given = false
    return {
      succeeded: () => {
        if (given) return
        given = true
        this.pool.query('DELETE FROM auth_attempts WHERE attempt = $1', [id]).catch((err: unknown) => {
          this.o.log?.warn({ err }, 'giving back a successful attempt failed; it leaves the count at the end of its window')
        })
      }
    }
  }

  async retryAfter (keys: string[]): Promise<number> {
    const now = this.now()
    const row = (await this.pool.query<{ freeing: string | null }>('SELECT hr_attempt_freeing($1, $2, $3, $4, $5) AS freeing',
      [this.limiter, keys.map(keyDigest), this.limit, this.windowMs, now])).rows[0]
    const freeing = row?.freeing == null ? now : Number(row.freeing)
    return Math.max(1, Math.ceil((freeing - now) / 1000))
  }

  private maybePrune (now: number): void {
    if (now - this.lastPrune < PRUNE_EVERY_MS) return
    this.lastPrune = now
    this.pool.query('DELETE FROM auth_attempts WHERE limiter = $1 AND at <= $2', [this.limiter, now - this.windowMs]).catch((err: unknown) => {
      this.o.log?.warn({ err }, 'pruning old wrong attempts failed; retried in a minute')
    })
  }
}

/** The OAuth pages' counters, with the box's limits, shared through PostgreSQL. */
export function pgOAuthAttempts (pool: pg.Pool, o: { log?: Logger, now?: () => number } = {}): OAuthAttempts {
  return {
    device: new PgAttempts(pool, 'device', ...ATTEMPT_LIMITS.device, o),
    signIn: new PgAttempts(pool, 'sign_in', ...ATTEMPT_LIMITS.signIn, o)
  }
}
