// The OAuth pages' counters of wrong attempts shared by the hub's instances (hub/store/pg-attempts.ts,
// 006-attempts.sql) on a real PostgreSQL: the limit, the window and Retry-After on an injected clock, an attempt
// given back, a burst spread over two pools (two instances) of which exactly the limit is counted, keys kept only
// as digests; and PostgreSQL out of reach classified as such (pgUnavailable), so the hub answers 503, not 500.
import t from 'tap'
import pg from 'pg'
import { createHash } from 'node:crypto'
import { migrate } from '../../hub/migrate.ts'
import { PgAttempts } from '../../hub/store/pg-attempts.ts'
import { pgUnavailable } from '../../hub/store/pg-op.ts'
import { Postgres } from '../helpers/postgres.ts'
import { until } from '../helpers/wait.ts'

const server = await Postgres.create(t)
await server.start()
const url = await server.createDatabase('attempts')
const pools = [0, 1].map(() => { const p = new pg.Pool({ connectionString: url, max: 10 }); p.on('error', () => {}); return p })
t.teardown(async () => { for (const p of pools) await p.end() })
const [one, two] = pools as [pg.Pool, pg.Pool]
await migrate(one)

let clock = Date.UTC(2026, 0, 5, 10, 0, 0)
const now = (): number => clock

t.test('the limit, the window and Retry-After', async t => {
  const a = new PgAttempts(one, 'window-test', 3, 60_000, { now })
  const keys = ['ip:10.0.0.1', 'user:alice']
  const granted = [await a.reserve(keys), await a.reserve(keys)]
  clock += 10_000
  granted.push(await a.reserve(keys))
  t.equal(granted.filter(x => x !== null).length, 3, 'three attempts in the window are counted')
  t.equal(await a.reserve(keys), null, 'the fourth is refused')
  t.equal(await a.reserve(['ip:10.0.0.1']), null, 'one key at its limit refuses an attempt with it alone')
  t.not(await a.reserve(['ip:10.0.0.2', 'user:bob']), null, 'other keys are not limited')
  t.equal(await a.retryAfter(keys), 50, 'free again when the first attempt leaves the window (50 s from now)')
  clock += 50_000
  t.not(await a.reserve(keys), null, 'the two attempts made first left the window together')
  t.not(await a.reserve(keys), null)
  t.equal(await a.reserve(keys), null, 'the one made 10 s later still counts')
})

t.test('a successful attempt is given back', async t => {
  const a = new PgAttempts(one, 'given-back', 2, 60_000, { now })
  const keys = ['ip:10.0.0.3']
  const first = await a.reserve(keys)
  t.not(first, null)
  first?.succeeded()
  first?.succeeded()
  // succeeded() deletes in the background: the count is back to 0 once that query ran.
  await until('the attempt given back', async () => (await one.query<{ n: string }>('SELECT count(*) AS n FROM auth_attempts WHERE limiter = $1', ['given-back'])).rows[0]?.n === '0')
  t.equal((await one.query<{ n: string }>('SELECT count(*) AS n FROM auth_attempts WHERE limiter = $1', ['given-back'])).rows[0]?.n, '0', 'the attempt rows are gone')
  t.not(await a.reserve(keys), null)
  t.not(await a.reserve(keys), null, 'two failures still fit after the success')
  t.equal(await a.reserve(keys), null)
})

t.test('a burst over two instances counts exactly the limit', async t => {
  const on1 = new PgAttempts(one, 'burst', 10, 60_000, { now })
  const on2 = new PgAttempts(two, 'burst', 10, 60_000, { now })
  const results = await Promise.all(Array.from({ length: 30 }, async (_, i) => await (i % 2 === 0 ? on1 : on2).reserve(['ip:10.9.9.9', `user:u${i % 3}`])))
  t.equal(results.filter(x => x !== null).length, 10, '10 of 30 parallel attempts on two instances are counted')
  const rows = (await one.query<{ n: string }>("SELECT count(DISTINCT attempt) AS n FROM auth_attempts WHERE limiter = 'burst'")).rows[0]
  t.equal(rows?.n, '10', 'and 10 are stored')
})

t.test('keys are kept as digests only', async t => {
  const a = new PgAttempts(one, 'digests', 5, 60_000, { now })
  await a.reserve(['user:carol@example.com'])
  const rows = (await one.query<{ key_digest: Buffer }>("SELECT key_digest FROM auth_attempts WHERE limiter = 'digests'")).rows
  t.equal(rows.length, 1)
  t.same(rows[0]?.key_digest, createHash('sha256').update('user:carol@example.com').digest(), 'the SHA-256 of the key')
  const text = (await one.query<{ t: string }>("SELECT string_agg(encode(key_digest, 'escape'), '') AS t FROM auth_attempts")).rows[0]?.t ?? ''
  t.notOk(text.includes('carol'), 'no username in the table')
})

t.test('PostgreSQL out of reach is told from a refused statement', async t => {
  const refused = await one.query('SELECT * FROM no_such_table').catch((err: unknown) => err)
  t.equal(pgUnavailable(refused), false, 'a SQL error (42P01) is not')
  const closed = new pg.Pool({ connectionString: url.replace(/:(\d+)\//, ':1/'), max: 1 })
  closed.on('error', () => {})
  t.teardown(async () => { await closed.end() })
  const down = await closed.query('SELECT 1').catch((err: unknown) => err)
  t.equal(pgUnavailable(down), true, `a refused connection is (${String((down as Error).message)})`)
  t.equal(pgUnavailable(new Error('wrapped', { cause: down })), true, 'also as the cause of another error')
  t.equal(pgUnavailable(Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' })), true, '57P01 is')
  t.equal(pgUnavailable(new TypeError('x is undefined')), false, 'a programming error is not')
})
