// Schema migrations: hub/migrations/NNN-name.sql, applied at start in order, each once, each in its own
// transaction with its row in hub_schema_migrations. The whole run holds a PostgreSQL advisory lock, so two
// instances that start together apply each migration once: the second waits, then finds nothing to do.
import { readdir, readFile } from 'node:fs/promises'
import type pg from 'pg'

const DIR = new URL('./migrations/', import.meta.url)
/** The advisory lock's key: any constant the hub's database uses for nothing else ("hrhubmig" as a number). */
const LOCK_KEY = 0x68726875626d6967n.toString()

export interface Migration { version: number, name: string, sql: string }

export class MigrationError extends Error {
  readonly code = 'HR_HUB_SCHEMA'
  constructor (message: string, options?: ErrorOptions) { super(message, options); this.name = 'MigrationError' }
}

/** The migrations shipped with this hub, in order. */
export async function shippedMigrations (): Promise<Migration[]> {
  const files = (await readdir(DIR)).filter(f => /^\d{3}-[a-z0-9-]+\.sql$/.test(f)).sort()
  return await Promise.all(files.map(async f => ({ version: Number(f.slice(0, 3)), name: f.slice(4, -4), sql: await readFile(new URL(f, DIR), 'utf8') })))
}

/** Applies what is missing; returns the versions applied by this call. */
export async function migrate (pool: pg.Pool, migrations?: Migration[]): Promise<number[]> {
  const all = migrations ?? await shippedMigrations()
  const client = await pool.connect()
  // A dropped connection rejects the query in progress; unhandled, its 'error' event would end the process.
  const dropped = (): void => {}
  client.on('error', dropped)
  try {
    await client.query('SELECT pg_advisory_lock($1::bigint)', [LOCK_KEY])
    try {
      await client.query('CREATE TABLE IF NOT EXISTS hub_schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())')
      const done = new Set((await client.query<{ version: number }>('SELECT version FROM hub_schema_migrations')).rows.map(r => r.version))
      const newest = Math.max(0, ...done)
      const known = Math.max(0, ...all.map(m => m.version))
      if (newest > known) throw new MigrationError(`the database's schema is version ${newest}, newer than this hub knows (${known}): upgrade this hub instance`)
      const applied: number[] = []
      for (const m of all) {
        if (done.has(m.version)) continue
        await client.query('BEGIN')
        try {
          await client.query(m.sql)
          await client.query('INSERT INTO hub_schema_migrations (version, name) VALUES ($1, $2)', [m.version, m.name])
          await client.query('COMMIT')
        } catch (err) {
          await client.query('ROLLBACK').catch(() => {})
          throw new MigrationError(`migration ${m.version}-${m.name} failed: ${(err as Error).message}`, { cause: err })
        }
        applied.push(m.version)
      }
      return applied
    } finally {
      await client.query('SELECT pg_advisory_unlock($1::bigint)', [LOCK_KEY]).catch(() => {})
    }
  } finally {
    client.off('error', dropped)
    client.release()
  }
}
