// The load generator's counts are exact against a real aedes broker.
import t from 'tap'
import { decodeDevicePayload } from '../../firmware-protocol/mqtt.ts'
import { runLoad } from '../../device-sim/load.ts'
import { startBroker } from './aedes-harness.ts'

t.test('300 devices at 1 Hz for 3 s: sent = acked = what the broker received', async t => {
  const broker = await startBroker(t)
  const credentials = Array.from({ length: 300 }, (_v, i) => ({ device_id: `load-${i}`, mqtt_username: `load-${i}`, mqtt_password: 'pw' }))
  const stats = await runLoad({ url: broker.url, credentials, durationS: 3, qos: 1, seed: 5 })
  t.equal(stats.devices, 300)
  t.equal(stats.connected, 300)
  t.equal(stats.connect_failed, 0)
  t.equal(stats.sent, 900, 'three readings per device')
  t.equal(stats.acked, 900, 'every PUBACK counted')
  t.equal(stats.failed, 0)
  t.equal(stats.in_flight, 0)
  t.equal(broker.received.length, 900, 'the broker received exactly what was sent')
  const perDevice = new Map<string, number>()
  for (const r of broker.received) {
    decodeDevicePayload(r.payload)
    perDevice.set(r.device_id, (perDevice.get(r.device_id) ?? 0) + 1)
  }
  t.equal(perDevice.size, 300)
  t.ok([...perDevice.values()].every(n => n === 3), 'three from each device')
})

t.test('devices that cannot connect are counted, not hidden', async t => {
  const credentials = [{ device_id: 'nobody', mqtt_username: 'x', mqtt_password: 'y' }]
  const stats = await runLoad({ url: 'mqtt://127.0.0.1:1', credentials, durationS: 1, qos: 1 })
  t.same({ connected: stats.connected, connect_failed: stats.connect_failed, sent: stats.sent, skipped: stats.skipped }, { connected: 0, connect_failed: 1, sent: 0, skipped: 1 })
})
