// The store conformance suite (test/conformance/store.ts) against the LevelDB
// backend: each subtest opens its own store in a temporary directory.
import t from 'tap'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { openLevelStores } from '../../../api/store/level-stores.ts'
import { storeConformance } from '../../conformance/store.ts'

storeConformance(t, async ({ gapMs }) => {
  const dir = await mkdtemp(join(tmpdir(), 'hr-store-conformance-'))
  let stores = await openLevelStores(dir, { gapMs })
  return {
    get stores () { return stores },
    async reopen () {
      await stores.close()
      stores = await openLevelStores(dir, { gapMs })
      return stores
    },
    async destroy () {
      await stores.close()
      await rm(dir, { recursive: true, force: true })
    }
  }
})
