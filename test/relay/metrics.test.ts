// /metrics in the Prometheus text format after readings from several sources,
// served by the whole service over a listening socket.
import t from 'tap'
import WebSocket from 'ws'
import { startTestService } from '../helpers/service.ts'
import { Metrics, instrumentIngest } from '../../relay/metrics.ts'
import { DEFAULT_SYNC_POLICY } from '../../api/store/db.ts'
import { DEFAULT_TIMING } from '../../api/store/journal.ts'

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

t.test('/metrics counts the groups stored as sync batches beside the journal, and the journal\'s records', async t => {
  const svc = await startTestService(t)
  const profile = await svc.user('erin')
  const { pipeline, store } = svc.service.services
  // The journal the service started in the background (1 MiB in tests): this waits for that same start.
  await store.startJournal(1024 * 1024, DEFAULT_TIMING, DEFAULT_SYNC_POLICY)
  const now = Date.now()
  // One reading at a time, far below data.sync_below_per_s (500): each group a sync batch.
  for (let i = 0; i < 3; i++) await pipeline.submit({ profile_id: profile, measured_at: now - 10_000 + i * 1000, heart_rate: 80 + i, source: 'ble' })
  let text = await (await fetch(`${svc.url}/metrics`)).text()
  t.match(text, /^hr_relay_sync_batches_total 3$/m)
  t.match(text, /^hr_relay_journal_writes_total\{thread="event_loop"\} 0$/m)
  t.match(text, /^hr_relay_journal_writes_total\{thread="pool"\} 0$/m)
  // As if the rate were over the bound: through the journal.
  store.syncPolicy = { ...DEFAULT_SYNC_POLICY, belowPerSecond: 0 }
  for (let i = 3; i < 5; i++) await pipeline.submit({ profile_id: profile, measured_at: now - 10_000 + i * 1000, heart_rate: 80 + i, source: 'ble' })
  text = await (await fetch(`${svc.url}/metrics`)).text()
  t.match(text, /^hr_relay_sync_batches_total 3$/m)
  const records = [...text.matchAll(/^hr_relay_journal_writes_total\{thread="[a-z_]+"\} (\d+)$/gm)].map(m => Number(m[1]))
  t.equal(records.reduce((a, b) => a + b, 0), 2, 'two journal records, on whichever thread')
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
