// The reading log conformance suite (test/conformance/reading-log.ts) against
// the LevelDB backend: the store's own reading log, on a real LevelDB in a
// temporary directory for each subtest.
import t from 'tap'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Store } from '../../../api/store/db.ts'
import type { BatchOp } from '../../../api/store/sublevel.ts'
import { readingLogConformance } from '../../conformance/reading-log.ts'

readingLogConformance(t, async () => {
  const dir = await mkdtemp(join(tmpdir(), 'hr-reading-log-'))
  let store: Store | undefined = await Store.open(dir)
  const open = (): Store => {
    if (store === undefined) throw new Error('the store is closed')
    return store
  }
  const sub = () => open().sub<string>('conformance')
  return {
    get log () { return open().readingLog },
    put: (key, value) => ({ type: 'put', sublevel: sub(), key, value }) satisfies BatchOp,
    del: key => ({ type: 'del', sublevel: sub(), key }) satisfies BatchOp,
    // JSON cannot encode a BigInt: abstract-level refuses the whole batch before LevelDB sees any of it.
    refused: key => ({ type: 'put', sublevel: sub(), key, value: 1n }) satisfies BatchOp,
    get: async key => await sub().get(key),
    async getConsistent (keys) {
      const db = open().sub<string>('conformance')
      const snapshot = open().db.snapshot()
      try { return await db.getMany(keys, { snapshot }) } finally { await snapshot.close() }
    },
    async close () { await store?.close(); store = undefined },
    async reopen () { await store?.close(); store = await Store.open(dir) },
    async destroy () { await store?.close(); store = undefined; await rm(dir, { recursive: true, force: true }) }
  }
})
