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
