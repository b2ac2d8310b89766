// End to end over the embedded broker: Wi-Fi devices with operator-issued
// credentials and every MQTT fault; the service keeps serving and stores the
// good readings (QoS 1: PUBACK only after storage).
import t from 'tap'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { parseFaultFlag } from '../../device-sim/faults.ts'
import { Simulation, type SimEvent } from '../../device-sim/runner.ts'
import { loadScenario } from '../../device-sim/scenario.ts'
import { MqttTransport } from '../../device-sim/transports/mqtt.ts'
import { startTestService } from '../helpers/service.ts'

t.test('MQTT devices with garbage, oversized packets, skew, contact loss, bursts, drops and unplugs', async t => {
  const svc = await startTestService(t)
  const info = JSON.parse(await readFile(join(svc.dataDir, 'server.json'), 'utf8')) as { mqtt_port: number }
  t.type(info.mqtt_port, 'number')
  await svc.user('ana')
  const cred = await svc.admin('POST', '/admin/devices', { device_id: 'wifi-1', username: 'ana', kind: 'mqtt' })
  const transport = new MqttTransport({ url: `mqtt://127.0.0.1:${info.mqtt_port}`, credentials: [cred], qos: 1 })
  t.teardown(() => transport.close())
  const devices = [{ index: 0, device_id: 'wifi-1', label: 'Ana' }]
  await transport.open(devices)
  const startAt = Date.now() - 60_000
  const sim = new Simulation({
    transport, devices, rateHz: 1, durationS: 16, seed: 2, scenario: await loadScenario('hiit'), realtime: false, startAt,
    faults: [parseFaultFlag('garbage', '100@2'), parseFaultFlag('contact_lost', '100/2@4'), parseFaultFlag('skew', '3000'), parseFaultFlag('burst', '100/3@7'), parseFaultFlag('drop', '100/2@9'), parseFaultFlag('unplug', '100/2@12')]
  })
  const sent: Array<Extract<SimEvent, { type: 'reading' }>> = []
  sim.on('event', ev => { if (ev.type === 'reading') sent.push(ev) })
  const stats = await sim.run()
  t.same(stats[0]!.faults, { skew: 1, garbage: 1, contact_lost: 1, burst: 1, drop: 1, unplug: 1 })
  t.equal(stats[0]!.sent, 16 - 4 + 3)
  // The broker closes a connection that publishes garbage at QoS 1; ticks run back to back here, so
  // readings sent before mqtt.js reconnects are not delivered (and counted as such).
  t.equal(stats[0]!.delivered + stats[0]!.failed, stats[0]!.sent)
  t.ok(stats[0]!.delivered >= 5, `${stats[0]!.delivered} delivered`)
  // An oversized packet makes the broker close the connection; the device reconnects.
  t.equal(await transport.inject(0, 'oversized'), 'injected')

  const health = await fetch(`${svc.url}/health`)
  t.equal(health.status, 200)
  const good = sent.filter(e => e.delivered && e.reading.heart_rate > 0).map(e => e.reading).sort((a, b) => a.measured_at - b.measured_at)
  const last = good.at(-1)!
  const res = await fetch(`${svc.url}/api/v1/data/heart_rate/latest`, { headers: { authorization: `Bearer ${await svc.token('ana', 'data:heart_rate:read')}` } })
  t.equal(res.status, 200)
  t.same(await res.json(), { measured_at: last.measured_at, data: { heart_rate: last.heart_rate } }, 'the latest good reading, skewed by 3000 ms')
  t.same(sent.filter(e => !e.burst).map(e => e.reading.measured_at - startAt), [1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 15, 16].map(s => s * 1000 + 3000), 'every timestamp carries the 3000 ms skew (drop 10-11 s, unplug 13-14 s)')
})
