// The accounting of ingest-capacity (acknowledged against stored, warm-up
// included) and footprint (steady, peak and idle RSS, each with its target).
import t from 'tap'
import { ingestAccounting, rssFigures } from '../../bench/lib/accounting.ts'

const MB = 1024 * 1024

t.test('ingest-capacity counts the warm-up on both sides: a lost warm-up reading shows', async t => {
  // 200 warm-up readings acknowledged, steps 500 + 2000; the store holds the warm-up's readings too.
  t.same(ingestAccounting(200, [500, 2000], 2700), { acked: 2700, lost: 0 })
  // 150 warm-up readings acknowledged but missing from the store: 150 lost (was invisible: 2500 - 2550 < 0).
  t.same(ingestAccounting(200, [500, 2000], 2550), { acked: 2700, lost: 150 })
  // More stored than acknowledged (readings without PUBACK that were stored anyway) is not a loss.
  t.same(ingestAccounting(0, [10], 12), { acked: 10, lost: 0 })
})

t.test('footprint reports steady, peak and idle RSS, each against its own target', async t => {
  const figs = rssFigures({ idle: 70 * MB, steady: 149 * MB, peak: 181 * MB }, 2000, 500)
  t.equal(figs.length, 3)
  const [steady, peak, idle] = figs
  t.match(steady?.name, /steady/)
  t.equal(steady?.value, 149)
  t.same(steady?.target, { text: 'steady RSS <= 150 MB', met: true })
  t.same(steady?.reference, { name: 'idle', value: 70 })
  t.match(peak?.name, /peak/)
  t.equal(peak?.value, 181)
  t.same(peak?.target, { text: 'peak RSS <= 180 MB', met: false })
  t.match(idle?.name, /idle/)
  t.equal(idle?.value, 70)
  t.same(idle?.target, { text: 'idle RSS <= 80 MB', met: true })
  const over = rssFigures({ idle: 81 * MB, steady: 151 * MB, peak: 180 * MB }, 25, 25)
  t.same(over.map(f => f.target?.met), [false, true, false])
  t.equal(over[2]?.name, 'RSS idle (started, nothing connected)', 'one start: the plain label')
  t.equal(rssFigures({ idle: 70 * MB, steady: 140 * MB, peak: 150 * MB }, 2000, 500, 3)[2]?.name, 'RSS idle (started, nothing connected; the median of 3 starts)')
})
