// /metrics in the Prometheus text format after readings from several sources,
// served by the whole service over a listening socket.
import t from 'tap'
import WebSocket from 'ws'
import { startTestService } from '../helpers/service.ts'
import { Metrics, instrumentIngest, instrumentReadingLog } from '../../relay/metrics.ts'

t.test('/metrics after some readings: by source, drops by reason, latency histogram, gauges', async t => {
  const svc = await startTestService(t)
  const profile = await svc.user('erin')
  const { pipeline, metrics } = svc.service.services
  const now = Date.now()
  for (let i = 0; i < 3; i++) await pipeline.submit({ profile_id: profile, measured_at: now - 10_000 + i * 1000, heart_rate: 80 + i, source: 'ble' })
  await pipeline.submit({ profile_id: profile, measured_at: now - 2000, heart_rate: 90, source: 'serial' })
  await pipeline.submit({ profile_id: profile, measured_at: now - 1000, heart_rate: 0, source: 'serial' })
  await pipeline.submit({ device_id: 'unknown-dev', measured_at: now - 500, heart_rate: 70, source: 'mqtt' })
  // What the sources report through their sinks.
  metrics.dropped('bad_checksum')
  metrics.dropped('bad_checksum')
  metrics.setConnected('ble', 3)
  // One real-time API stream open while /metrics is scraped.
  const token = await svc.token('erin', 'data:heart_rate:read')
  const ws = new WebSocket(`${svc.url.replace(/^http/, 'ws')}/api/v1/data/real_time?access_token=${token}`)
  t.teardown(() => { ws.terminate() })
  await new Promise<void>((resolve, reject) => { ws.once('open', () => { resolve() }); ws.once('error', reject) })
  const res = await fetch(`${svc.url}/metrics`)
  t.equal(res.status, 200)
  t.equal(res.headers.get('content-type'), 'text/plain; version=0.0.4; charset=utf-8')
  const text = await res.text()
  t.match(text, /^# HELP hr_relay_readings_stored_total Readings stored, by source\n# TYPE hr_relay_readings_stored_total counter\n/m)
  t.match(text, /^hr_relay_readings_stored_total\{source="ble"\} 3$/m)
  t.match(text, /^hr_relay_readings_stored_total\{source="serial"\} 1$/m)
  t.notMatch(text, /hr_relay_readings_stored_total\{source="mqtt"\}/)
  t.match(text, /^hr_relay_dropped_total\{reason="bad_checksum"\} 2$/m)
  t.match(text, /^hr_relay_ingest_dropped_total\{reason="non_positive"\} 1$/m)
  t.match(text, /^hr_relay_ingest_dropped_total\{reason="unpaired"\} 1$/m)
  t.match(text, /^hr_relay_connected_devices\{source="ble"\} 3$/m)
  t.match(text, /^hr_relay_websocket_clients 1$/m)
  t.match(text, /^hr_relay_mqtt_clients\{kind="device"\} 0$/m)
  t.match(text, /^# TYPE hr_relay_ingest_latency_seconds histogram$/m)
  t.match(text, /^hr_relay_process_resident_memory_bytes \d+$/m, 'process metrics')
})

t.test('/metrics counts the groups of readings written, their writes and how long each took', async t => {
  const svc = await startTestService(t)
  const profile = await svc.user('erin')
  const { pipeline } = svc.service.services
  const now = Date.now()
  // One reading at a time: each its own group (a reading, its minute and hour rollups and latest: 4 writes).
  for (let i = 0; i < 3; i++) await pipeline.submit({ profile_id: profile, measured_at: now - 10_000 + i * 1000, heart_rate: 80 + i, source: 'ble' })
  const text = await (await fetch(`${svc.url}/metrics`)).text()
  t.match(text, /^hr_relay_reading_groups_total 3$/m)
  t.match(text, /^hr_relay_reading_groups_failed_total 0$/m)
  t.match(text, /^hr_relay_reading_log_append_seconds_count 3$/m)
  t.match(text, /^hr_relay_reading_group_writes_count 3$/m)
  t.match(text, /^hr_relay_reading_group_writes_sum 12$/m)
  t.notMatch(text, /hr_relay_journal_writes_total|hr_relay_sync_batches_total/, 'the journal\'s gauges are gone')
})

t.test('instrumentReadingLog times every append, including failures', async t => {
  const metrics = new Metrics()
  const ok = instrumentReadingLog({ append: async () => {} }, metrics)
  const failing = instrumentReadingLog({ append: async () => { throw new Error('disk full') } }, metrics)
  await ok.append([{ type: 'put', key: 'a' }, { type: 'put', key: 'b' }])
  await t.rejects(failing.append([{ type: 'del', key: 'a' }]), /disk full/)
  const text = (await metrics.text()).body
  t.match(text, /^hr_relay_reading_log_append_seconds_count 2$/m)
  t.match(text, /^hr_relay_reading_group_writes_sum 3$/m)
})

t.test('instrumentIngest times every submit, including failures', async t => {
  const metrics = new Metrics()
  const ok = instrumentIngest({ submit: async () => ({ status: 'stored', profile_id: 'p' }) }, metrics)
  const failing = instrumentIngest({ submit: async () => { throw new Error('disk full') } }, metrics)
  t.same(await ok.submit({ measured_at: 1, heart_rate: 60, source: 'sim' }), { status: 'stored', profile_id: 'p' })
  await t.rejects(failing.submit({ measured_at: 1, heart_rate: 60, source: 'sim' }), /disk full/)
  const text = (await metrics.text()).body
  t.match(text, /^hr_relay_ingest_latency_seconds_count 2$/m)
  t.match(text, /^hr_relay_ingest_latency_seconds_bucket\{le="\+Inf"\} 2$/m)
})

t.test('two services in one process keep separate registries', async t => {
  const a = new Metrics()
  const b = new Metrics()
  a.readingStored('ble')
  t.match((await a.text()).body, /^hr_relay_readings_stored_total\{source="ble"\} 1$/m)
  t.notMatch((await b.text()).body, /source="ble"/)
})
