// The simulator's --skew fault against the whole service (issue 14 item 5):
// a device clock 10 s ahead is within data.max_clock_skew_ms (30 s): its
// readings are PUBACKed, stored at the relay's receive time and counted; one
// 120 s ahead gets no PUBACK (the sim reports every publish unacknowledged)
// and nothing of it is stored.
import t from 'tap'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { parseFaultFlag } from '../../device-sim/faults.ts'
import { Simulation, type SimEvent } from '../../device-sim/runner.ts'
import { loadScenario } from '../../device-sim/scenario.ts'
import { MqttTransport } from '../../device-sim/transports/mqtt.ts'
import { startTestService } from '../helpers/service.ts'

const metric = (text: string, line: string): number => {
  const m = text.split('\n').find(l => l.startsWith(line + ' '))
  return m === undefined ? Number.NaN : Number(m.slice(line.length + 1))
}

t.test('+10 s skew: stored at receive time and counted; +120 s skew: no PUBACK, nothing stored', async t => {
  const svc = await startTestService(t)
  const info = JSON.parse(await readFile(join(svc.dataDir, 'server.json'), 'utf8')) as { mqtt_port: number }
  const url = `mqtt://127.0.0.1:${info.mqtt_port}`
  await svc.user('ana')
  await svc.user('ben')
  const credA = await svc.admin('POST', '/admin/devices', { device_id: 'skew-10', username: 'ana', kind: 'mqtt' })
  const credB = await svc.admin('POST', '/admin/devices', { device_id: 'skew-120', username: 'ben', kind: 'mqtt' })
  const scenario = await loadScenario('rest')

  const run = async (cred: { device_id: string }, skew: string, ackTimeoutMs?: number) => {
    const transport = new MqttTransport({ url, credentials: [cred as never], qos: 1, ...(ackTimeoutMs === undefined ? {} : { ackTimeoutMs }) })
    t.teardown(() => transport.close())
    const devices = [{ index: 0, device_id: cred.device_id, label: cred.device_id }]
    await transport.open(devices)
    const sim = new Simulation({ transport, devices, rateHz: 1, durationS: 3, seed: 5, scenario, realtime: false, faults: [parseFaultFlag('skew', skew)] })
    const sent: Array<Extract<SimEvent, { type: 'reading' }>> = []
    sim.on('event', ev => { if (ev.type === 'reading') sent.push(ev) })
    const stats = await sim.run()
    return { stats: stats[0]!, sent }
  }

  const before = Date.now()
  const a = await run(credA, '10000')
  const after = Date.now()
  t.same(a.stats.faults, { skew: 1 })
  t.equal(a.stats.sent, 3)
  t.equal(a.stats.delivered, 3, 'every +10 s reading PUBACKed')
  for (const e of a.sent) t.ok(e.reading.measured_at > after, 'the device stamped it ahead of the relay clock')

  const tokenA = await svc.token('ana', 'data:heart_rate:read')
  const hist = await fetch(`${svc.url}/api/v1/data/heart_rate/history?from=${before - 1}&to=${after + 60_000}`, { headers: { authorization: `Bearer ${tokenA}` } })
  t.equal(hist.status, 200)
  const stored = (await hist.json() as { data: Array<{ measured_at: number, heart_rate: number }> }).data
  t.ok(stored.length >= 1, `${stored.length} stored`)
  for (const r of stored) t.ok(r.measured_at >= before && r.measured_at <= after, `stored at receive time ${r.measured_at} (sent ${a.sent.map(e => e.reading.measured_at).join(', ')})`)

  // +120 s: beyond data.max_clock_skew_ms; the broker closes without PUBACK. A short ack timeout only
  // shortens the wait for PUBACKs that never come (a late one would still fail the "nothing stored" check).
  const b = await run(credB, '120000', 1000)
  t.equal(b.stats.sent, 3)
  t.equal(b.stats.delivered, 0, 'no PUBACK')
  t.equal(b.stats.failed, 3, 'the sim reports every publish unacknowledged')
  const tokenB = await svc.token('ben', 'data:heart_rate:read')
  const latestB = await fetch(`${svc.url}/api/v1/data/heart_rate/latest`, { headers: { authorization: `Bearer ${tokenB}` } })
  t.equal(latestB.status, 412, 'nothing stored for the +120 s device')
  t.same(await latestB.json(), { error_code: 9412, error_message: 'no_heart_rate_data' })

  const text = await (await fetch(`${svc.url}/metrics`)).text()
  t.equal(metric(text, 'hr_relay_clock_skew_corrected_total{source="mqtt"}'), 3, 'each +10 s reading counted')
  // Corrected readings never share a millisecond, so none is lost as a duplicate.
  t.equal(stored.length, 3, 'every acknowledged reading stored')
  t.equal(metric(text, 'hr_relay_ingest_dropped_total{reason="duplicate"}'), 0)
  t.ok(metric(text, 'hr_relay_ingest_dropped_total{reason="out_of_range"}') >= 1, 'the +120 s reading counted as out_of_range')
  t.equal(metric(text, 'hr_relay_readings_stored_total{source="mqtt"}'), stored.length)
})
