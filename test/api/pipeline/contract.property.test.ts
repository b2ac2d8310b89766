// Property tests (fast-check) for the reading contract: every reading a codec
// accepts (MQTT payload, serial line, BLE notification, HTTP write) is stored
// by the real pipeline (or dropped as the specification allows: 0 bpm or
// below, a duplicate), and every reading the pipeline will not store is
// refused before it is acknowledged.
import t from 'tap'
import fc from 'fast-check'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Store } from '../../../api/store/db.ts'
import { Readings } from '../../../api/store/readings.ts'
import { Hub } from '../../../api/hub.ts'
import { Pipeline } from '../../../api/pipeline/ingest.ts'
import { ACKNOWLEDGED_DROPS, isRefused, type IngestResult, type Reading } from '../../../api/pipeline/reading.ts'
import { decodeDevicePayload } from '../../../firmware-protocol/mqtt.ts'
import { encodeFramedReading, parseLine } from '../../../firmware-protocol/serial.ts'
import { decodeHeartRateMeasurement, measurementReading } from '../../../firmware-protocol/ble.ts'
import { measuredAtWindow } from '../../../firmware-protocol/reading-contract.ts'
import { isProtocolError } from '../../../firmware-protocol/errors.ts'
import { startTestService } from '../../helpers/service.ts'

const DAY = 86_400_000
const NOW = Date.UTC(2026, 5, 1, 10, 0, 0)
const RETENTION = { rawDays: 35, rollupDays: 400 }
const RUNS = 150

async function pipelineFor (t: { teardown (fn: () => unknown): void }): Promise<Pipeline> {
  const dir = await mkdtemp(join(tmpdir(), 'hr-contract-'))
  const store = await Store.open(dir)
  const pipeline = new Pipeline({
    readingLog: store.readingLog, readings: new Readings(store, { gapMs: 5000 }), hub: new Hub(),
    users: { get: async () => ({}) }, resolveOwner: async () => 'alice',
    retention: RETENTION, now: () => NOW, pruneIntervalMs: 0
  })
  t.teardown(async () => { await pipeline.stop(); await store.close(); await rm(dir, { recursive: true, force: true }) })
  return pipeline
}

/** Stored, or dropped for a reason the specification lets a source acknowledge. */
function acknowledgedAndKept (r: Reading, result: IngestResult): boolean {
  if (result.status === 'stored') return true
  if (result.reason === 'non_positive') return r.heart_rate <= 0
  return ACKNOWLEDGED_DROPS.includes(result.reason)
}

const window = measuredAtWindow({ now: NOW, rawRetentionDays: RETENTION.rawDays })
// Values around every limit, in and out of the contract.
const measuredAt = fc.oneof(fc.integer({ min: window.min, max: window.max }), fc.integer({ min: NOW - 40 * DAY, max: NOW + 20 * 60_000 }), fc.constantFrom(946_684_799_999, 946_684_800_000, 9_999_999_999_999))
const bpm = fc.oneof(fc.integer({ min: -3, max: 305 }), fc.constantFrom(0, 300, 301, 1000))
const rr = fc.array(fc.oneof({ arbitrary: fc.integer({ min: 1, max: 2000 }), weight: 60 }, { arbitrary: fc.constantFrom(0, 1, 65535, 65536), weight: 1 }), { maxLength: 70, size: 'max' })
const payload = fc.record({
  measured_at: measuredAt,
  heart_rate: bpm,
  rr_intervals_ms: rr,
  energy_expended_kj: fc.integer({ min: -1, max: 65536 }),
  sensor_contact: fc.boolean(),
  battery_percent: fc.integer({ min: -1, max: 101 })
}, { requiredKeys: ['measured_at', 'heart_rate'] })

t.test('MQTT: a payload the codec accepts is stored, or refused (no PUBACK) only for its measured_at window', async t => {
  const pipeline = await pipelineFor(t)
  let accepted = 0
  await fc.assert(fc.asyncProperty(payload, async p => {
    let decoded
    try { decoded = decodeDevicePayload(JSON.stringify(p)) } catch (err) { if (isProtocolError(err)) return; throw err }
    accepted++
    const reading: Reading = { device_id: 'esp32-01', source: 'mqtt', ...decoded }
    const result = await pipeline.submit(reading)
    const inWindow = decoded.measured_at >= window.min && decoded.measured_at <= window.max
    if (inWindow || decoded.heart_rate <= 0) {
      if (!acknowledgedAndKept(reading, result)) throw new Error(`accepted by the codec, dropped by the pipeline: ${JSON.stringify(result)}`)
    } else if (!(result.status === 'dropped' && result.reason === 'out_of_range' && isRefused(result))) {
      throw new Error(`outside the window but ${JSON.stringify(result)}`)
    }
  }), { numRuns: RUNS })
  t.ok(accepted > RUNS / 10, `the codec accepted ${accepted} of ${RUNS}`)
  t.equal(pipeline.counters.dropped.invalid, 0, 'nothing the codec accepted was invalid for the pipeline')
})

t.test('serial and BLE: a reading the codec accepts is stored by the pipeline', async t => {
  const pipeline = await pipelineFor(t)
  let at = NOW - DAY
  await fc.assert(fc.asyncProperty(fc.integer({ min: 0, max: 400 }), fc.array(fc.integer({ min: 0, max: 70000 }), { maxLength: 80 }), async (hr, rrMs) => {
    const line = `$HR,${[hr, ...rrMs].join(',')}*`
    const body = line.slice(1, -1)
    let x = 0
    for (let i = 0; i < body.length; i++) x ^= body.charCodeAt(i)
    const event = parseLine('framed', `${line}${x.toString(16).toUpperCase().padStart(2, '0')}`)
    if (event.kind !== 'reading') return
    t.doesNotThrow(() => encodeFramedReading(event.heart_rate, event.rr_intervals_ms))
    const reading: Reading = { device_id: 'sim-serial-1', source: 'serial', measured_at: at++, heart_rate: event.heart_rate, ...(event.rr_intervals_ms === undefined ? {} : { rr_intervals_ms: event.rr_intervals_ms }) }
    const result = await pipeline.submit(reading)
    if (!acknowledgedAndKept(reading, result)) throw new Error(`serial: ${JSON.stringify(result)}`)
  }), { numRuns: RUNS })
  await fc.assert(fc.asyncProperty(fc.uint8Array({ minLength: 1, maxLength: 160 }), async bytes => {
    let fields
    try { fields = measurementReading(decodeHeartRateMeasurement(bytes), at) } catch (err) { if (isProtocolError(err)) return; throw err }
    const reading: Reading = { device_id: 'C0:07:5E:ED:00:00', source: 'ble', measured_at: at++, ...fields }
    const result = await pipeline.submit(reading)
    if (!acknowledgedAndKept(reading, result)) throw new Error(`ble: ${JSON.stringify(result)}`)
  }), { numRuns: RUNS })
  t.equal(pipeline.counters.dropped.invalid, 0)
})

t.test('HTTP write: 200 means stored (or 0 bpm or below); whatever is not stored is 400 7013', async t => {
  const svc = await startTestService(t)
  await svc.user('alice')
  const token = await svc.token('alice', 'data:heart_rate:write')
  const now = Date.now()
  const httpAt = fc.oneof(fc.integer({ min: now - 34 * DAY, max: now + 5 * 60_000 }), fc.integer({ min: now - 40 * DAY, max: now + 20 * 60_000 }), fc.constantFrom(0, 946_684_799_999, 10_000_000_000_000))
  const seen = new Set<number>()
  await fc.assert(fc.asyncProperty(httpAt, bpm, async (measured, hr) => {
    if (seen.has(measured)) return
    seen.add(measured)
    const res = await fetch(`${svc.url}/api/v1/data`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify({ measured_at: measured, data: { heart_rate: hr } }) })
    const body = await res.json() as Record<string, unknown>
    const stored = measured > 9_999_999_999_999 ? [] : (await svc.admin('GET', `/admin/readings/alice?from=${measured}&to=${measured}`)).readings as unknown[]
    if (res.status === 200) {
      if (hr > 0 && stored.length !== 1) throw new Error(`200 but not stored: ${measured} ${hr}`)
    } else if (res.status !== 400 || body.error_code !== 7013 || stored.length !== 0) {
      throw new Error(`${res.status} ${JSON.stringify(body)} for ${measured} ${hr}`)
    }
  }), { numRuns: 40 })
  t.pass('every write was either stored or refused with 400 7013')
})
