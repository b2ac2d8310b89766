import t from 'tap'
import { reopenDelay } from '../../relay/reopen-backoff.ts'

t.test('delays double from initialMs, are capped at maxMs, with jitter in [ceiling/2, ceiling]', async t => {
  const opts = { initialMs: 100, maxMs: 1000 }
  t.same([0, 1, 2, 3, 4, 10, 1000].map(a => reopenDelay(a, opts, () => 1)), [100, 200, 400, 800, 1000, 1000, 1000])
  t.same([0, 1, 2, 3, 4].map(a => reopenDelay(a, opts, () => 0)), [50, 100, 200, 400, 500])
  t.equal(reopenDelay(2, opts, () => 0.5), 300)
  t.equal(reopenDelay(-3, opts, () => 1), 100, 'a negative attempt counts as the first')
  t.equal(reopenDelay(0, { initialMs: 0, maxMs: 0 }, () => 1), 1, 'never a zero-delay spin')
})
