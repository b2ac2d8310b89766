// The PostgreSQL backend as one Stores bundle (api/store/types.ts), the hub's counterpart of
// api/store/level-stores.ts: readings with their rollups and latest records, users, devices, clients and tokens
// in one database, an atomic batch over their ops, and the reading log. It passes the store conformance suite
// (test/conformance/store.ts), run from test/hub/store-conformance.test.ts.
//
// Several hub instances share the database. What a store keeps in memory (member switches, pairings) is
// refreshed through PostgreSQL notifications (pg-events.ts) sent in the same transaction as the change.
import pg from 'pg'
import type { Logger } from 'pino'
import type { Stores, WriteOp } from '../../api/store/types.ts'
import { migrate } from '../migrate.ts'
import { PgEvents } from './pg-events.ts'
import { runOps } from './pg-op.ts'
import { PgReadings } from './pg-readings.ts'
import { PgUsers } from './pg-users.ts'
import { PgDevices } from './pg-devices.ts'
import { PgClients } from './pg-clients.ts'
import { PgTokens } from './pg-tokens.ts'

export interface PgStoresOptions {
  /** postgres.url */
  url: string
  /** postgres.pool_size (default 10). */
  poolSize?: number
  /** The stream gap (ms) rollups credit streamed time with (data.stream_gap_seconds × 1000). */
  gapMs: number
  log?: Logger
  /** Apply the shipped migrations first (default true). */
  migrate?: boolean
}

export interface PgStores extends Stores {
  readonly pool: pg.Pool
  readonly events: PgEvents
  readonly readings: PgReadings
  readonly users: PgUsers
  readonly devices: PgDevices
  readonly clients: PgClients
  readonly tokens: PgTokens
}

export async function openPgStores (o: PgStoresOptions): Promise<PgStores> {
  const pool = new pg.Pool({ connectionString: o.url, max: o.poolSize ?? 10, connectionTimeoutMillis: 5000 })
  // An idle connection that PostgreSQL closes (a restart) is reported here; the next query opens a new one.
  pool.on('error', err => { o.log?.warn({ err: err.message }, 'PostgreSQL closed an idle connection') })
  const events = new PgEvents(o.url, o.log)
  try {
    if (o.migrate !== false) await migrate(pool)
    await events.start()
    const readings = new PgReadings(pool, { gapMs: o.gapMs, events })
    const users = new PgUsers(pool, { events })
    const devices = new PgDevices(pool, { events })
    const clients = new PgClients(pool)
    const tokens = new PgTokens(pool, { events })
    await users.load()
    await devices.load()
    await tokens.load()
    return {
      pool,
      events,
      readings,
      users,
      devices,
      clients,
      tokens,
      batch: async (ops: WriteOp[]) => { await runOps(pool, ops) },
      readingLog: readings.readingLog,
      close: async () => {
        await events.stop()
        await pool.end()
      }
    }
  } catch (err) {
    await events.stop()
    await pool.end().catch(() => {})
    throw err
  }
}
