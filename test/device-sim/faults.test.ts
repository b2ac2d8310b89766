import t from 'tap'
import { faultsAt, parseFaultFlag } from '../../device-sim/faults.ts'

t.test('fault flags parse into schedules', async t => {
  t.same(parseFaultFlag('drop', '30/5'), { kind: 'drop', every_s: 30, duration_s: 5 })
  t.same(parseFaultFlag('burst', '60/20'), { kind: 'burst', every_s: 60, count: 20 })
  t.same(parseFaultFlag('garbage', '10@3', [1]), { kind: 'garbage', every_s: 10, at_s: 3, devices: [1] })
  t.same(parseFaultFlag('skew', '-3000@30/10'), { kind: 'skew', skew_ms: -3000, at_s: 30, duration_s: 10 })
  t.throws(() => parseFaultFlag('drop', 'often'), { code: 'bad_option' })
  t.throws(() => parseFaultFlag('drop', '5/10'), { code: 'bad_option' }, 'duration longer than the period')
  t.throws(() => parseFaultFlag('burst', '10/2.5'), { code: 'bad_option' })
})

t.test('the schedule is a function of time', async t => {
  const specs = [parseFaultFlag('drop', '10/3'), parseFaultFlag('garbage', '4'), parseFaultFlag('skew', '2500'), { kind: 'contact_lost' as const, at_s: 5, duration_s: 2, devices: [1] }]
  const down = Array.from({ length: 25 }, (_v, s) => faultsAt(specs, 0, s, s + 1).down)
  t.same(down.map(d => d === null ? '.' : 'D').join(''), '..........DDD.......DDD..')
  const garbage = Array.from({ length: 13 }, (_v, s) => faultsAt(specs, 0, s, s + 1).events.length).join('')
  t.equal(garbage, '0000100010001', 'every 4 s from 4 s')
  t.equal(faultsAt(specs, 0, 0, 1).skewMs, 2500)
  t.equal(faultsAt(specs, 0, 5, 6).contactLost, false, 'device 0 is not affected')
  t.equal(faultsAt(specs, 1, 5, 6).contactLost, true)
  t.equal(faultsAt(specs, 1, 7, 8).contactLost, false, 'over after 2 s')
  const half = Array.from({ length: 16 }, (_v, k) => faultsAt([parseFaultFlag('burst', '2/4')], 0, k / 2, k / 2 + 0.5).events)
  t.same(half.map(e => e.length).join(''), '0000100010001000', 'at 2 Hz: one burst every 4 ticks, first at 2 s')
  t.same(half.find(e => e.length > 0), [{ kind: 'burst', count: 4 }])
})
