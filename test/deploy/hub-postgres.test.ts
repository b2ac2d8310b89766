// deploy/hub/postgres-setup.sql on a real PostgreSQL, run with psql as docs/hub.md says: the hub's role can log
// in with its password, migrate its database at start and write readings; other roles cannot connect to it.
import t from 'tap'
import pg from 'pg'
import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { migrate } from '../../hub/migrate.ts'
import { Postgres } from '../helpers/postgres.ts'

const SETUP = fileURLToPath(new URL('../../deploy/hub/postgres-setup.sql', import.meta.url))

t.test('the shipped role and database setup', async t => {
  const server = await Postgres.create(t)
  await server.start()
  const psql = spawnSync('psql', ['-X', '-q', '-v', 'ON_ERROR_STOP=1', '-v', "password='hub-secret'", '-f', SETUP, server.url()], { encoding: 'utf8' })
  t.equal(psql.status, 0, psql.stderr)
  const pool = new pg.Pool({ connectionString: `postgres://hub:hub-secret@127.0.0.1:${server.port}/hub`, max: 2 })
  pool.on('error', () => {})
  t.same(await migrate(pool), [1, 2, 3, 4, 5, 6, 7], 'the hub\'s role migrates its own database')
  const r = await pool.query("INSERT INTO readings (profile_id, measured_at, box_id, heart_rate, source) VALUES ('p', 1800000000000, 'gym-a', 70, 'ble')")
  t.equal(r.rowCount, 1)
  const other = new pg.Client({ connectionString: server.url() })
  await other.connect()
  await other.query("CREATE ROLE someone LOGIN PASSWORD 'x'")
  await other.end()
  const someone = new pg.Client({ connectionString: `postgres://someone:x@127.0.0.1:${server.port}/hub` })
  await t.rejects(someone.connect(), { code: '42501' }, 'another role may not connect to the hub\'s database')
  await pool.end()
})
