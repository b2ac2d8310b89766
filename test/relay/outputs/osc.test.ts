import t from 'tap'
import { OscOutput } from '../../../relay/outputs/osc.ts'
import { FakeTimers, oscReceiver } from './osc-receiver.ts'

const NAMES = ['HR', 'onesHR', 'tensHR', 'hundredsHR', 'HRPercent', 'FullHRPercent', 'isHRConnected', 'isHRActive', 'isHRBeat']
const int = (value: number): { type: string, value: number } => ({ type: 'integer', value })
const float = (value: number): { type: string, value: number } => ({ type: 'float', value: Math.fround(value) })
const T = { type: 'true', value: true }
const F = { type: 'false', value: false }

t.test('a reading series over real UDP: exact HR, digits, clamped HRPercent, FullHRPercent, bools, types', async t => {
  const rx = await oscReceiver()
  t.teardown(() => rx.close())
  const timers = new FakeTimers()
  const out = new OscOutput({ host: '127.0.0.1', port: rx.port, minBpm: 60, maxBpm: 200, timers })
  t.teardown(() => out.stop())
  await out.start()
  for (const bpm of [59, 60, 128, 255, 300]) out.write(bpm)
  const got = await rx.waitFor(45)
  const expected = [
    [int(59), int(9), int(5), int(0), float(0), float(-1)],
    [int(60), int(0), int(6), int(0), float(0), float(-1)],
    [int(128), int(8), int(2), int(1), float(68 / 140), float(2 * (68 / 140) - 1)],
    [int(255), int(5), int(5), int(2), float(1), float(1)],
    [int(300), int(0), int(0), int(3), float(1), float(1)]
  ].flatMap(values => [...values, T, T, F].map((arg, i) => ({ address: `/avatar/parameters/${NAMES[i] ?? ''}`, args: [arg] })))
  t.same(got, expected)
  t.match(out.status(), { state: 'running', sent: 45, send_errors: 0, skipped: 0 })
})

t.test('isHRBeat toggles once per beat at the current bpm; after 10 s without a reading isHRConnected and isHRActive turn false', async t => {
  const rx = await oscReceiver()
  t.teardown(() => rx.close())
  const timers = new FakeTimers()
  const out = new OscOutput({ host: '127.0.0.1', port: rx.port, parameterPrefix: '/p/', timers })
  t.teardown(() => out.stop())
  await out.start()
  out.write(60)
  await rx.waitFor(9)
  t.same(rx.messages.slice(4, 9).map(m => m.address), ['/p/HRPercent', '/p/FullHRPercent', '/p/isHRConnected', '/p/isHRActive', '/p/isHRBeat'])
  t.same(rx.messages[4]?.args, [float(60 / 255)], 'defaults: min 0, max 255')
  timers.advance(999)
  t.equal(rx.messages.length, 9, 'no beat before 1000 ms at 60 bpm')
  timers.advance(1)
  t.same((await rx.waitFor(10))[9], { address: '/p/isHRBeat', args: [T] }, 'one beat at 60 bpm is 1000 ms')
  timers.advance(100)
  out.write(120) // fake time 1100
  await rx.waitFor(19)
  t.same(rx.messages[18], { address: '/p/isHRBeat', args: [T] }, 'a reading carries the current beat state')
  timers.advance(900)
  t.same((await rx.waitFor(20))[19], { address: '/p/isHRBeat', args: [F] }, 'the beat already scheduled keeps its time (2000)')
  timers.advance(500)
  t.same((await rx.waitFor(21))[20], { address: '/p/isHRBeat', args: [T] }, 'then at 120 bpm a beat is 500 ms')
  timers.advance(8599) // fake time 11099: beats at 3000, 3500, ..., 11000
  await rx.waitFor(38)
  t.same(rx.messages.slice(21, 38).map(m => m.args[0]?.type), Array.from({ length: 17 }, (_, i) => i % 2 === 0 ? 'false' : 'true'))
  t.equal(rx.messages.filter(m => m.address === '/p/isHRConnected').length, 2, 'still connected 9.999 s after the last reading')
  timers.advance(1)
  const last = (await rx.waitFor(40)).slice(38)
  t.same(last, [{ address: '/p/isHRConnected', args: [F] }, { address: '/p/isHRActive', args: [F] }], '10 s after the last reading')
  t.equal(timers.size, 0, 'beats stop with the connection')
  out.write(70)
  t.same((await rx.waitFor(49)).slice(46, 48), [{ address: '/p/isHRConnected', args: [T] }, { address: '/p/isHRActive', args: [T] }], 'the next reading connects again')
  t.equal(timers.size, 2)
  await out.stop()
  t.equal(timers.size, 0, 'stop clears both timers')
})

t.test('send errors are counted, never thrown; the output reports degraded', async t => {
  // Linux refuses a broadcast destination on a socket without SO_BROADCAST (EACCES) in send()'s callback.
  const out = new OscOutput({ host: '255.255.255.255', port: 9000, timers: new FakeTimers() })
  t.teardown(() => out.stop())
  await out.start()
  const degraded = new Promise<void>(resolve => { out.on('status', s => { if (s.state === 'degraded') resolve() }) })
  t.doesNotThrow(() => { out.write(72) })
  await degraded
  t.match(out.status(), { state: 'degraded', detail: /send failed/, sent: 0 })
  t.ok(out.status().send_errors >= 1)
  t.equal(out.id, 'osc:255.255.255.255:9000')
})

t.test('values that are not heart rates are skipped; stop is idempotent and later writes are ignored', async t => {
  const rx = await oscReceiver()
  t.teardown(() => rx.close())
  const timers = new FakeTimers()
  const out = new OscOutput({ host: '127.0.0.1', port: rx.port, timers })
  await out.start()
  out.write(Number.NaN)
  out.write(-3)
  t.match(out.status(), { skipped: 2, sent: 0 })
  t.equal(timers.size, 0)
  await out.stop()
  await out.stop()
  out.write(80)
  t.match(out.status(), { state: 'stopped', sent: 0 })
  await t.rejects(out.start(), /already started/)
})
