// The class store (api/store/classes.ts) over a real LevelDB: summaries by
// member in [from, to) of their start whatever the digits of the times, the
// classes of a room newest first, the running mark, and what an erasure deletes.
import t from 'tap'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Store } from '../../../api/store/db.ts'
import { ClassStore } from '../../../api/store/classes.ts'
import type { ClassRecord, ClassSummary } from '../../../api/classes/types.ts'

const rec = (id: string, roomId: string, startedAt: number, hidden: string[] = []): ClassRecord => ({ class_id: id, room_id: roomId, name: id, started_at: startedAt, planned_end: startedAt + 60_000, ended_at: null, hidden })
const summary = (r: ClassRecord): ClassSummary => ({ class_id: r.class_id, room_id: r.room_id, name: r.name, started_at: r.started_at, ended_at: r.planned_end, duration_s: 60, avg_bpm: 100, max_bpm: 110, zones_s: [60, 0, 0, 0, 0], calories_kcal: 5, effort_points: 1, rank: 1, ranked: 1, max_heart_rate: 190 })

t.test('summaries in [from, to), rooms newest first, running marks, erasure', async t => {
  const dir = await mkdtemp(join(tmpdir(), 'hr-class-store-'))
  const store = await Store.open(dir)
  t.teardown(async () => { await store.close(); await rm(dir, { recursive: true, force: true }) })
  const classes = new ClassStore(store)
  // 999 and 1000 have different numbers of digits: fixed-width keys keep them in time order.
  const a = rec('a', 'r1', 999, ['p1'])
  const b = rec('b', 'r1', 1000)
  const c = rec('c', 'r2', 2_000_000_000_000)
  for (const r of [a, b, c]) await classes.create(r)
  t.same((await classes.runningClasses()).map(r => r.class_id).sort(), ['b', 'c'], 'one running class per room: the newest of r1')
  for (const r of [a, b]) await classes.finish({ ...r, ended_at: r.planned_end }, [{ profile_id: 'p1', summary: summary(r) }, { profile_id: 'p10', summary: summary(r), learned: { at: r.planned_end, class_id: r.class_id, old_bpm: 180, new_bpm: 185 } }])
  t.same((await classes.runningClasses()).map(r => r.class_id), ['c'])
  await classes.finish({ ...c, ended_at: c.planned_end }, [{ profile_id: 'p1', summary: summary(c) }])
  t.same((await classes.runningClasses()), [])

  t.same((await classes.summariesOf('p1')).map(s => s.class_id), ['a', 'b', 'c'])
  t.same((await classes.summariesOf('p1', 999, 1000)).map(s => s.class_id), ['a'], 'to is exclusive')
  t.same((await classes.summariesOf('p1', 1000, 2_000_000_000_001)).map(s => s.class_id), ['b', 'c'])
  t.same((await classes.summariesOf('p1', 1001, 2_000_000_000_000)).map(s => s.class_id), [])
  t.same((await classes.summariesOf('p10')).map(s => s.class_id), ['a', 'b'], 'p1 is not a prefix match for p10')
  t.equal((await classes.summaryOf('p10', 'b'))?.class_id, 'b')
  t.equal(await classes.summaryOf('p10', 'c'), undefined)
  t.same((await classes.learnedOf('p10')).map(l => [l.class_id, l.new_bpm]), [['a', 185], ['b', 185]])
  t.same((await classes.ofRoom('r1')).map(r => [r.class_id, r.ended_at]), [['b', 61_000], ['a', 60_999]], 'newest first')
  t.same((await classes.ofRoom('r1', 1)).map(r => r.class_id), ['b'])

  const erase = await classes.erasureOps('p1')
  t.same([erase.summaries, erase.learned, erase.ops.length], [3, 0, 4], 'three summaries and the hidden list of class a')
  await store.batch(erase.ops)
  t.same(await classes.summariesOf('p1'), [])
  t.same((await classes.summariesOf('p10')).length, 2, 'the other member keeps theirs')
  t.same((await classes.get('a'))?.hidden, [])
})
