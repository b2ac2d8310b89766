// A recorded session replayed by the simulator (hr-relay sim mqtt --replay)
// into a running service over MQTT comes back out of the FIT export as the
// same readings: heart rates, timestamps and RR intervals.
import t from 'tap'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { Decoder, Stream } from '@garmin/fitsdk'
import { formatCsv, parseRecording, type RecordedReading } from '../../device-sim/replay.ts'
import { Simulation } from '../../device-sim/runner.ts'
import { loadScenario } from '../../device-sim/scenario.ts'
import { MqttTransport } from '../../device-sim/transports/mqtt.ts'
import { startTestService } from '../helpers/service.ts'

t.test('a replayed recording exports to FIT with the same readings', async t => {
  const svc = await startTestService(t)
  const info = JSON.parse(await readFile(join(svc.dataDir, 'server.json'), 'utf8')) as { mqtt_port: number }
  await svc.user('ana')
  const cred = await svc.admin('POST', '/admin/devices', { device_id: 'wifi-1', username: 'ana', kind: 'mqtt' })
  const start = Math.floor((Date.now() - 3_600_000) / 1000) * 1000
  const recorded: RecordedReading[] = []
  for (let i = 0; i < 30; i++) {
    const bpm = 90 + Math.round(30 * Math.sin(i / 5))
    recorded.push({ measured_at: start + i * 1000, heart_rate: bpm, ...(i % 3 === 0 ? {} : { rr_intervals_ms: [Math.round(60000 / bpm), Math.round(60000 / bpm) + 4] }) })
  }
  const rec = parseRecording(formatCsv(recorded))
  t.same(rec, recorded, 'the recording as the simulator reads it')

  const transport = new MqttTransport({ url: `mqtt://127.0.0.1:${info.mqtt_port}`, credentials: [cred], qos: 1 })
  t.teardown(() => transport.close())
  const devices = [{ index: 0, device_id: 'wifi-1', label: 'Ana' }]
  await transport.open(devices)
  const sim = new Simulation({ transport, devices, rateHz: 1, seed: 1, scenario: await loadScenario('rest'), replay: rec, realtime: false, faults: [] })
  const stats = await sim.run()
  t.equal(stats[0]!.delivered, 30, 'every reading PUBACKed, so stored')

  const token = await svc.token('ana', 'data:heart_rate:read')
  const auth = { authorization: `Bearer ${token}` }
  const listed = await (await fetch(`${svc.url}/api/v1/data/sessions?from=${start}&to=${start + 60_000}`, { headers: auth })).json() as { sessions: Array<{ id: string, readings: number }> }
  t.same(listed.sessions.map(s => [s.id, s.readings]), [[String(start), 30]])
  const res = await fetch(`${svc.url}/api/v1/data/sessions/${start}/export?format=fit`, { headers: auth })
  t.equal(res.status, 200)
  const decoder = new Decoder(Stream.fromBuffer(Buffer.from(await res.arrayBuffer())))
  t.equal(decoder.checkIntegrity(), true)
  const { messages, errors } = decoder.read()
  t.same(errors, [])
  t.same(messages.recordMesgs?.map(r => ({ measured_at: (r.timestamp as Date).getTime(), heart_rate: r.heartRate })), recorded.map(r => ({ measured_at: r.measured_at, heart_rate: r.heart_rate })))
  t.same(messages.hrvMesgs?.flatMap(m => m.time ?? []), recorded.flatMap(r => (r.rr_intervals_ms ?? []).map(v => v / 1000)), 'RR intervals in order, in seconds')
})
