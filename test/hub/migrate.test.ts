// Schema migrations against a real PostgreSQL: applied in order and once, also by instances starting together;
// a database newer than the hub is refused; a failing migration leaves nothing half applied.
import t from 'tap'
import pg from 'pg'
import { migrate, MigrationError, shippedMigrations } from '../../hub/migrate.ts'
import { Postgres } from '../helpers/postgres.ts'

t.test('migrations', async t => {
  const server = await Postgres.create(t)
  await server.start()

  await t.test('four instances starting together apply each migration once', async t => {
    const url = await server.createDatabase('together')
    const pools = [0, 1, 2, 3].map(() => new pg.Pool({ connectionString: url, max: 2 }))
    t.teardown(async () => { await Promise.all(pools.map(async p => { await p.end() })) })
    const shipped = (await shippedMigrations()).map(m => m.version)
    t.same(shipped, [1, 2, 3, 4, 5, 6, 7])
    const applied = await Promise.all(pools.map(async p => await migrate(p)))
    t.same(applied.flat().sort(), shipped, 'every version applied by exactly one instance')
    t.same((await pools[0]!.query('SELECT version, name FROM hub_schema_migrations ORDER BY version')).rows, [{ version: 1, name: 'readings' }, { version: 2, name: 'store-readings' }, { version: 3, name: 'store-accounts' }, { version: 4, name: 'chain' }, { version: 5, name: 'oauth' }, { version: 6, name: 'attempts' }, { version: 7, name: 'store-readings-plan' }])
    t.same(await migrate(pools[1]!), [], 'a later start has nothing to do')
  })

  await t.test('a failing migration is rolled back whole and named', async t => {
    const url = await server.createDatabase('failing')
    const pool = new pg.Pool({ connectionString: url, max: 2 })
    t.teardown(async () => { await pool.end() })
    const bad = [{ version: 1, name: 'one', sql: 'CREATE TABLE a (x int)' }, { version: 2, name: 'two', sql: 'CREATE TABLE b (x int); SELECT nonsense_column FROM a' }]
    const err = await migrate(pool, bad).catch((e: unknown) => e) as MigrationError
    t.type(err, MigrationError)
    t.match(err.message, /^migration 2-two failed: column "nonsense_column" does not exist/)
    t.same((await pool.query('SELECT version FROM hub_schema_migrations')).rows, [{ version: 1 }])
    t.equal((await pool.query("SELECT count(*)::int AS n FROM pg_tables WHERE tablename = 'b'")).rows[0].n, 0, 'table b of the failed migration does not exist')
  })

  await t.test('a database migrated by a newer hub is refused', async t => {
    const url = await server.createDatabase('newer')
    const pool = new pg.Pool({ connectionString: url, max: 2 })
    t.teardown(async () => { await pool.end() })
    await migrate(pool)
    await pool.query("INSERT INTO hub_schema_migrations (version, name) VALUES (99, 'future')")
    await t.rejects(migrate(pool), { name: 'MigrationError', message: "the database's schema is version 99, newer than this hub knows (7): upgrade this hub instance" })
  })
})
