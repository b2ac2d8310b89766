// The PostgreSQL store's write op: a WriteOp (api/store/types.ts) that carries its statement. A store makes its
// ops (a token pair's rows, a plan's readings); callers pass them along to the bundle's `batch`, which runs them
// in order in one transaction, or to the reading log. Nobody else builds one.
import type pg from 'pg'
import type { WriteOp } from '../../api/store/types.ts'

export interface PgOp extends WriteOp {
  readonly sql: string
  readonly params: readonly unknown[]
}

export function pgOp (type: 'put' | 'del', key: string, sql: string, params: readonly unknown[]): PgOp {
  return { type, key, sql, params }
}

export function isPgOp (op: WriteOp): op is PgOp {
  return typeof (op as Partial<PgOp>).sql === 'string' && Array.isArray((op as Partial<PgOp>).params)
}

/**
 * Runs `fn` with a client of the pool. Its 'error' event is handled (unhandled, a PostgreSQL restart would end the
 * process), and a client whose work failed is not given back for reuse (often its connection dropped).
 */
export async function withClient<T> (pool: pg.Pool, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect()
  let broken = false
  const dropped = (): void => { broken = true }
  client.on('error', dropped)
  try {
    return await fn(client)
  } catch (err) {
    broken = true
    throw err
  } finally {
    client.off('error', dropped)
    client.release(broken)
  }
}

/** Runs `fn` with a client in one transaction (BEGIN … COMMIT, ROLLBACK on a throw), as withClient. */
export async function inTransaction<T> (pool: pg.Pool, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  return await withClient(pool, async client => {
    await client.query('BEGIN')
    try {
      const out = await fn(client)
      await client.query('COMMIT')
      return out
    } catch (err) {
      await client.query('ROLLBACK').catch(() => {})
      throw err
    }
  })
}

/** Runs ops in order in one transaction; refuses an op that another backend made. */
export async function runOps (pool: pg.Pool, ops: readonly WriteOp[]): Promise<void> {
  const own = ops.map(op => {
    if (!isPgOp(op)) throw new TypeError('the PostgreSQL store takes only ops made by its own stores')
    return op
  })
  if (own.length === 0) return
  await inTransaction(pool, async client => {
    for (const op of own) await client.query(op.sql, op.params as unknown[])
  })
}

/** SQLSTATEs of a server that cannot serve now: connection exceptions (class 08), shutting down or starting, full. */
const UNAVAILABLE_STATES = new Set(['57P01', '57P02', '57P03', '53300'])
/** Socket errors of a connection to PostgreSQL that failed or dropped. */
const SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN'])
/**
 * pg's and pg-pool's own errors for a connection that ended or could not be made carry no code: they are told by
 * their messages, here and nowhere else.
 */
const CONNECTION_MESSAGES = ['Connection terminated', 'timeout exceeded when trying to connect', 'Client has encountered a connection error']

/**
 * Whether a failure (or one of its causes) is PostgreSQL being out of reach rather than a refused statement: the
 * hub answers it 503 with Retry-After (buildServer's storeUnavailable), as a restart of PostgreSQL is a moment.
 */
export function pgUnavailable (err: unknown): boolean {
  let e = err as { code?: unknown, message?: unknown, cause?: unknown } | undefined
  for (let depth = 0; depth < 8 && e !== undefined && e !== null && typeof e === 'object'; depth++) {
    const code = typeof e.code === 'string' ? e.code : ''
    if (code.startsWith('08') || UNAVAILABLE_STATES.has(code) || SOCKET_CODES.has(code)) return true
    if (code === '' && typeof e.message === 'string' && CONNECTION_MESSAGES.some(m => (e as { message: string }).message.startsWith(m))) return true
    e = e.cause as typeof e
  }
  return false
}
