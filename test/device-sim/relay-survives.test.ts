// End to end: the whole service (startTestService) fed by the simulator with
// every fault its transport can carry; the service keeps answering and stores
// exactly the good readings.
import t from 'tap'
import WebSocket from 'ws'
import { parseFaultFlag } from '../../device-sim/faults.ts'
import { Simulation, type SimEvent } from '../../device-sim/runner.ts'
import { loadScenario } from '../../device-sim/scenario.ts'
import { HttpTransport } from '../../device-sim/transports/http.ts'
import { startTestService } from '../helpers/service.ts'

interface Msg { measured_at: number, data: { heart_rate: number } }

async function stream (url: string, token: string): Promise<{ messages: Msg[], waitFor (n: number): Promise<void>, close (): void }> {
  const ws = new WebSocket(`${url.replace('http', 'ws')}/api/v1/data/real_time?access_token=${token}`)
  const messages: Msg[] = []
  let waiter: { n: number, resolve: () => void } | null = null
  ws.on('message', data => {
    messages.push(JSON.parse(data.toString()) as Msg)
    if (waiter !== null && messages.length >= waiter.n) { waiter.resolve(); waiter = null }
  })
  await new Promise<void>((resolve, reject) => { ws.once('open', () => resolve()); ws.once('error', reject) })
  return {
    messages,
    close: () => ws.close(),
    waitFor: n => new Promise((resolve, reject) => {
      if (messages.length >= n) { resolve(); return }
      const timer = setTimeout(() => reject(new Error(`only ${messages.length} of ${n} readings streamed`)), 30_000)
      waiter = { n, resolve: () => { clearTimeout(timer); resolve() } }
    })
  }
}

t.test('HTTP writers with garbage, oversized bodies, skew, contact loss, bursts and drops', async t => {
  const svc = await startTestService(t)
  await svc.user('ana')
  await svc.user('ben')
  const writers = [
    { username: 'ana', token: await svc.token('ana', 'data:heart_rate:write') },
    { username: 'ben', token: await svc.token('ben', 'data:heart_rate:write') }
  ]
  const watchAna = await stream(svc.url, await svc.token('ana', 'data:heart_rate:read'))
  const watchBen = await stream(svc.url, await svc.token('ben', 'data:heart_rate:read'))
  t.teardown(() => { watchAna.close(); watchBen.close() })

  const transport = new HttpTransport({ url: svc.url, writers })
  const devices = [{ index: 0, device_id: 'ana', label: 'Ana' }, { index: 1, device_id: 'ben', label: 'Ben' }]
  await transport.open(devices)
  const startAt = Date.now() - 120_000
  const sim = new Simulation({
    transport, devices, rateHz: 1, durationS: 20, seed: 9, scenario: await loadScenario('spinning-class'), realtime: false, startAt,
    faults: [
      parseFaultFlag('garbage', '5'), parseFaultFlag('oversized', '7'), parseFaultFlag('skew', '4000', [1]),
      parseFaultFlag('contact_lost', '100/3@4'), parseFaultFlag('burst', '100/5@10'), parseFaultFlag('drop', '100/2@15')
    ]
  })
  const sent: Array<Extract<SimEvent, { type: 'reading' }>> = []
  sim.on('event', ev => { if (ev.type === 'reading') sent.push(ev) })
  const stats = await sim.run()
  t.same(stats[0]!.faults, { garbage: 2, oversized: 2, contact_lost: 1, burst: 1, drop: 1 }, 'garbage at 5 and 10 s (15 s falls in the drop), oversized at 7 and 14 s')
  t.same(transport.faultStatuses.get('garbage'), [400, 400, 400, 400], 'a malformed body is a 400 (both devices)')
  t.same(transport.faultStatuses.get('oversized'), [413, 413, 413, 413], 'an oversized body is a 413')
  t.equal(stats[0]!.sent, 18 + 5, '20 ticks - 2 dropped + a burst of 5')
  t.equal(stats[0]!.delivered, stats[0]!.sent, 'every good reading answered 200 (0 bpm too: ignored, not refused)')
  t.same([...transport.statuses.entries()], [], 'no other status for good readings')

  const health = await fetch(`${svc.url}/health`)
  t.equal(health.status, 200, 'the service still answers')

  for (const [i, watch] of [[0, watchAna], [1, watchBen]] as const) {
    const good = sent.filter(e => e.device === i && e.reading.heart_rate > 0)
    await watch.waitFor(good.length)
    const stored = [...watch.messages].sort((a, b) => a.measured_at - b.measured_at)
    t.same(stored.map(m => [m.measured_at, m.data.heart_rate]), good.map(e => [e.reading.measured_at, e.reading.heart_rate]).sort((a, b) => a[0]! - b[0]!), `device ${i}: exactly the good readings are stored`)
    t.equal(sent.filter(e => e.device === i && e.reading.heart_rate === 0).length, 3, 'three 0 bpm readings were sent and not stored')
  }
  const lastBen = sent.filter(e => e.device === 1).at(-1)!.reading
  t.equal(lastBen.measured_at, startAt + 20_000 + 4000, 'skewed by 4000 ms')
  const latest = await fetch(`${svc.url}/api/v1/data/heart_rate/latest`, { headers: { authorization: `Bearer ${await svc.token('ben', 'data:heart_rate:read')}` } })
  t.equal(latest.status, 200)
  t.same(await latest.json(), { measured_at: lastBen.measured_at, data: { heart_rate: lastBen.heart_rate } })
})
