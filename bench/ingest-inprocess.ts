// In-process ingest measurement: readings from many profiles through
// Pipeline.submit on a fresh store (real LevelDB, sync writes), no broker and
// no HTTP. Prints readings/s and submit latency percentiles for:
//   closed: every device submits its next reading once the previous one is acknowledged
//   paced:  a fixed total rate spread over the devices (open loop)
// Usage: node --import ./scripts/ts-loader.mjs bench/ingest-inprocess.ts [devices=2000] [readings=50000] [rates=2000,20000]
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { Store } from '../api/store/db.ts'
import { Readings } from '../api/store/readings.ts'
import { Hub } from '../api/hub.ts'
import { Pipeline } from '../api/pipeline/ingest.ts'

const devices = Number(process.argv[2] ?? 2000)
const total = Number(process.argv[3] ?? 50_000)
const rates = (process.argv[4] ?? '2000,20000').split(',').map(Number)

function pct (xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.floor(p * s.length))] ?? 0
}

async function fresh (): Promise<{ pipeline: Pipeline, close (): Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), 'hr-ingest-bench-'))
  const store = await Store.open(dir)
  const readings = new Readings(store, { gapMs: 5000 })
  const pipeline = new Pipeline({ store, readings, hub: new Hub(), users: { get: async () => ({}) }, retention: { rawDays: 35, rollupDays: 400 }, pruneIntervalMs: 0 })
  return { pipeline, close: async () => { await pipeline.stop(); await store.close(); await rm(dir, { recursive: true, force: true }) } }
}

async function closed (): Promise<void> {
  const { pipeline, close } = await fresh()
  const per = Math.ceil(total / devices)
  const start = Date.now() - per * 1000 - 60_000
  const lat: number[] = []
  const t0 = performance.now()
  await Promise.all(Array.from({ length: devices }, async (_, d) => {
    for (let i = 0; i < per; i++) {
      const a = performance.now()
      const r = await pipeline.submit({ profile_id: `p${d}`, measured_at: start + i * 1000 + d % 1000, heart_rate: 60 + (i % 90), source: 'mqtt' })
      lat.push(performance.now() - a)
      if (r.status !== 'stored') throw new Error(`not stored: ${JSON.stringify(r)}`)
    }
  }))
  const s = (performance.now() - t0) / 1000
  console.log(`closed loop, ${devices} devices: ${Math.round(lat.length / s)} readings/s, p50 ${pct(lat, 0.5).toFixed(2)} ms, p99 ${pct(lat, 0.99).toFixed(2)} ms, batches ${pipeline.counters.batches}`)
  await close()
}

async function paced (rate: number): Promise<void> {
  const { pipeline, close } = await fresh()
  const n = Math.min(total, rate * 10)
  const start = Date.now() - Math.ceil(n / devices) * 1000 - 60_000
  const lat: number[] = []
  const jobs: Array<Promise<void>> = []
  const t0 = performance.now()
  let sent = 0
  await new Promise<void>(resolve => {
    const tick = (): void => {
      const due = Math.min(n, Math.floor((performance.now() - t0) * rate / 1000))
      for (; sent < due; sent++) {
        const d = sent % devices
        const i = Math.floor(sent / devices)
        const a = performance.now()
        jobs.push(pipeline.submit({ profile_id: `p${d}`, measured_at: start + i * 1000 + d % 1000, heart_rate: 60 + (i % 90), source: 'mqtt' }).then(r => {
          lat.push(performance.now() - a)
          if (r.status !== 'stored') throw new Error(`not stored: ${JSON.stringify(r)}`)
        }))
      }
      if (sent >= n) resolve()
      else setTimeout(tick, 1)
    }
    tick()
  })
  await Promise.all(jobs)
  const s = (performance.now() - t0) / 1000
  console.log(`paced ${rate}/s, ${devices} devices: ${Math.round(n / s)} readings/s achieved, p50 ${pct(lat, 0.5).toFixed(2)} ms, p99 ${pct(lat, 0.99).toFixed(2)} ms, max ${pct(lat, 1).toFixed(2)} ms, batches ${pipeline.counters.batches}`)
  await close()
}

await closed()
for (const r of rates) await paced(r)
