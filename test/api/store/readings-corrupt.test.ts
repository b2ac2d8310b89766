// A raw reading that does not decode (a damaged record in LevelDB) is skipped
// by every read, and the readings store warns once, naming the key.
import t from 'tap'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pino from 'pino'
import { Store } from '../../../api/store/db.ts'
import { Readings } from '../../../api/store/readings.ts'
import { readingKey } from '../../../api/pipeline/codec.ts'

const T0 = Date.UTC(2026, 0, 5, 10, 0, 0)
const P = 'profile-p'

t.test('a corrupt raw reading is skipped with one warning naming its key', async t => {
  const dir = await mkdtemp(join(tmpdir(), 'hr-readings-corrupt-'))
  const store = await Store.open(dir)
  t.teardown(async () => { await store.close(); await rm(dir, { recursive: true, force: true }) })
  const lines: Array<Record<string, unknown>> = []
  const log = pino({ level: 'info' }, { write (line: string) { lines.push(JSON.parse(line) as Record<string, unknown>) } })
  const readings = new Readings(store, { gapMs: 5000, log })

  const plan = await readings.plan([0, 1000, 2000].map(dt => ({ profile_id: P, measured_at: T0 + dt, heart_rate: 70 + dt / 1000, source: 'sim' as const })))
  await store.batch(plan.ops, { sync: true })
  plan.commit()
  // Overwrite the middle reading with bytes that do not decode (source code 7 does not exist).
  await readings.raw.put(readingKey(P, T0 + 1000), Uint8Array.of(0x07, 71, 0))
  t.same(lines, [], 'nothing logged before the corrupt record is read')

  const range = []
  for await (const r of readings.range(P, T0, T0 + 2000)) range.push([r.measured_at - T0, r.heart_rate])
  t.same(range, [[0, 70], [2000, 72]], 'range skips the corrupt reading')
  t.same((await readings.page(P, T0, T0 + 3000, 10)).map(r => r.measured_at - T0), [0, 2000], 'page skips it too')

  const warnings = lines.filter(l => l.msg === 'corrupt raw reading skipped')
  t.equal(warnings.length, 1, 'warned once for the key, however often it is read')
  t.match(warnings[0], { level: 40, key: readingKey(P, T0 + 1000), err: 'unknown source code 7' })
  t.equal(lines.length, 1, 'and nothing else logged')
})
