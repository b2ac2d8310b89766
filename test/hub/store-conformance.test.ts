// The store conformance suite (test/conformance/store.ts) against the PostgreSQL backend (hub/store/), on a real
// PostgreSQL in a temporary cluster: each subtest opens its stores on a database of its own.
import t from 'tap'
import pg from 'pg'
import { openPgStores, type PgStores } from '../../hub/store/pg-stores.ts'
import { storeConformance } from '../conformance/store.ts'
import { Postgres } from '../helpers/postgres.ts'

const server = await Postgres.create(t)
await server.start()
let n = 0

storeConformance(t, async ({ gapMs }) => {
  const name = `conformance_${++n}`
  const url = await server.createDatabase(name)
  let stores: PgStores | null = await openPgStores({ url, gapMs, poolSize: 4 })
  return {
    get stores () {
      if (stores === null) throw new Error('closed')
      return stores
    },
    async reopen () {
      await stores?.close()
      stores = await openPgStores({ url, gapMs, poolSize: 4 })
      return stores
    },
    async destroy () {
      await stores?.close()
      stores = null
      const admin = new pg.Client({ connectionString: server.url() })
      await admin.connect()
      try { await admin.query(`DROP DATABASE ${name} WITH (FORCE)`) } finally { await admin.end() }
    }
  }
})
