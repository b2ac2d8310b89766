// hub: two hub instances (`hr-relay hub start`) on one Mosquitto and one PostgreSQL, fed by simulated boxes that
// forward as a box's upstream does (bench/workers/box-publisher.ts). Figures: readings/s stored in PostgreSQL at
// an offered 12,000/s (counted until PostgreSQL holds every reading the broker acknowledged), next to a bare COPY of the same rows into the same table shape measured in the same run;
// the p99 from a box's acknowledgement to a hub WebSocket, at that rate, over streams of 20 members opened on
// both instances; the CPU per reading of a hub instance; and the readings lost when one instance is killed with
// SIGKILL during a stream and started again.
import pg from 'pg'
import WebSocket from 'ws'
import { from as copyFrom } from 'pg-copy-streams'
import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { startHubChain } from '../test/helpers/hub-process.ts'
import { cpuOf, ticksPerSecond } from './lib/cpu.ts'
import { BenchFailure } from './lib/errors.ts'
import { Worker } from './lib/proc.ts'
import { figure } from './lib/results.ts'
import type { Context, Outcome, Scenario } from './lib/scenario.ts'
import { HUB_P99_MS, HUB_PER_SECOND, hubTarget, noneLostTarget, p99Target } from './lib/targets.ts'
import { openPgStores } from '../hub/store/pg-stores.ts'

/** Streams of watched members on the hub's instances, each reading's arrival time kept (`profile|measured_at` → ms). */
async function openStreams (dbUrl: string, urls: string[], profiles: string[], t: { teardown: (fn: () => unknown) => void }): Promise<Map<string, number>> {
  const stores = await openPgStores({ url: dbUrl, gapMs: 5000, migrate: false, poolSize: 2 })
  t.teardown(async () => { await stores.close() })
  const app = await stores.clients.create({ name: 'bench viewer', redirect_uris: ['https://bench.example/cb'] })
  const arrived = new Map<string, number>()
  await Promise.all(profiles.map(async (profile, i) => {
    const token = (await stores.tokens.issue({ client_id: app.client.client_id, profile_id: profile, scopes: ['data:heart_rate:read'], flow: 'manual', expires_in: 3600 })).access_token
    const url = urls[i % urls.length]!.replace(/^http/, 'ws') + `/api/v1/data/real_time?access_token=${token}`
    const ws = new WebSocket(url)
    ws.on('message', data => {
      const at = performance.timeOrigin + performance.now()
      const m = JSON.parse(data.toString()) as { measured_at: number }
      arrived.set(`${profile}|${m.measured_at}`, at)
    })
    await new Promise<void>((resolve, reject) => { ws.once('open', () => { resolve() }); ws.once('error', reject) })
    t.teardown(() => { ws.terminate() })
  }))
  return arrived
}

function percentile (sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN
  return sorted[Math.min(sorted.length - 1, Math.ceil(p / 100 * sorted.length) - 1)]!
}

const ROOT = 'bench-chain/v1'

async function rows (db: pg.Pool): Promise<number> {
  return Number((await db.query<{ n: string }>('SELECT count(*) AS n FROM readings')).rows[0]?.n ?? 0)
}

/** Waits until the table holds `n` rows (or `ms` pass); returns when it did, in ms since `t0`. */
async function until (db: pg.Pool, n: number, t0: number, ms: number): Promise<number> {
  const end = Date.now() + ms
  for (;;) {
    if (await rows(db) >= n) return Date.now() - t0
    if (Date.now() > end) return Number.NaN
    await new Promise(resolve => setTimeout(resolve, 20))
  }
}

/** Rows per second of a bare COPY of `n` readings of the same shape into a table like the hub's. */
async function bareCopy (db: pg.Pool, n: number): Promise<number> {
  await db.query('CREATE TABLE copy_ref (LIKE readings INCLUDING ALL)')
  const client = await db.connect()
  try {
    const base = Date.now() - 7_200_000
    const lines = function * (): Generator<string> {
      for (let i = 0; i < n; i += 1000) {
        let chunk = ''
        for (let k = i; k < Math.min(n, i + 1000); k++) chunk += `p-${k % 100}-${k % 97}\t${base + k}\tbench-box-${k % 100}\t${60 + (k % 120)}\tble\t\\N\n`
        yield chunk
      }
    }
    const t0 = process.hrtime.bigint()
    await pipeline(Readable.from(lines()), client.query(copyFrom('COPY copy_ref (profile_id, measured_at, box_id, heart_rate, source, device_id) FROM STDIN')))
    const s = Number(process.hrtime.bigint() - t0) / 1e9
    return n / s
  } finally {
    client.release()
    await db.query('DROP TABLE copy_ref')
  }
}

export const hubScenario: Scenario = {
  name: 'hub',
  reference: 'a bare COPY of the same rows into the same table shape, same PostgreSQL, same run',
  async run (ctx: Context): Promise<Outcome> {
    const teardowns: Array<() => unknown> = []
    const t = { teardown: (fn: () => unknown) => { teardowns.unshift(fn) } }
    // Offered a fifth above the target: the figure (stored until the last is in PostgreSQL) cannot exceed what is offered.
    const rate = ctx.quick ? 2000 : HUB_PER_SECOND * 1.2
    const seconds = ctx.quick ? 2 : 15
    const boxes = ctx.quick ? 10 : 100
    try {
      // The instances run through bin/hr-relay.cjs as installed: the compiled dist/ when it is current.
      const { dbUrl: url, broker, hubs } = await startHubChain(t, { instances: 2, clientIdPrefix: 'bench-hub', topicRoot: ROOT, env: {} })
      const db = new pg.Pool({ connectionString: url, max: 2 })
      db.on('error', () => {})
      t.teardown(async () => { await db.end() })
      const copyRate = await bareCopy(db, ctx.quick ? 20_000 : 200_000)

      const pub = await Worker.start('workers/box-publisher.ts')
      t.teardown(async () => { await pub.call('stop').catch(() => {}); await pub.stop() })
      await pub.call('connect', { url: broker.url, root: ROOT, boxes, profilesPerBox: 100 })
      // 20 members' streams, spread over the boxes and alternating between the two instances.
      const all = await pub.call<string[]>('profiles')
      const watched = Array.from({ length: 20 }, (_, i) => all[Math.floor(i * all.length / 20)]!)
      const arrived = await openStreams(url, hubs.map(h => h.url), watched, t)
      // Warm-up: connections, JIT, the first groups.
      const warm = await pub.call<{ acked: number }>('run', { ratePerSecond: rate / 4, durationS: 1 })
      if (Number.isNaN(await until(db, warm.acked, Date.now(), 30_000))) throw new BenchFailure('the hub did not store the warm-up readings')

      ctx.log(`hub: ${rate}/s for ${seconds} s from ${boxes} boxes`)
      const cpu0 = await Promise.all(hubs.map(async h => await cpuOf(h.pid)))
      const before = await rows(db)
      const t0 = Date.now()
      const sent = await pub.call<{ acked: number, publishMs: number }>('run', { ratePerSecond: rate, durationS: seconds })
      const doneMs = await until(db, before + sent.acked, t0, 60_000)
      const cpu1 = await Promise.all(hubs.map(async h => await cpuOf(h.pid)))
      const stored = await rows(db) - before
      const sustained = stored / (doneMs / 1000)
      const ticks = cpu1.reduce((s, c, i) => s + c.user + c.system - cpu0[i]!.user - cpu0[i]!.system, 0)
      const usPerReading = ticks / ticksPerSecond() * 1e6 / stored

      // Latency at the target rate itself (issue 42 §4: p99 at 10,000/s), the watched members' readings timed
      // from the box's acknowledgement to their arrival on a hub WebSocket.
      const latencyRate = ctx.quick ? 2000 : HUB_PER_SECOND
      ctx.log(`hub: ${latencyRate}/s for ${seconds} s, 20 members watched on the hub's WebSockets`)
      await pub.call('watch', { profiles: watched })
      arrived.clear()
      const before3 = await rows(db)
      const timed = await pub.call<{ acked: number }>('run', { ratePerSecond: latencyRate, durationS: seconds })
      await until(db, before3 + timed.acked, Date.now(), 60_000)
      const acknowledged = await pub.call<Array<[string, number]>>('acknowledgedAt')
      // Every watched reading stored has been notified by now or within moments: wait for the stragglers.
      const deadline = Date.now() + 10_000
      while (acknowledged.some(([k]) => !arrived.has(k)) && Date.now() < deadline) await new Promise(resolve => setTimeout(resolve, 50))
      const delays = acknowledged.flatMap(([k, at]) => { const got = arrived.get(k); return got === undefined ? [] : [got - at] }).sort((a, b) => a - b)
      const missed = acknowledged.length - delays.length
      const p99 = percentile(delays, 99)

      ctx.log('hub: one instance killed with SIGKILL during a stream, then started again')
      const before2 = await rows(db)
      const killRun = pub.call<{ acked: number }>('run', { ratePerSecond: rate / 2, durationS: ctx.quick ? 2 : 6 })
      await new Promise(resolve => setTimeout(resolve, ctx.quick ? 700 : 2000))
      hubs[0]!.kill()
      await new Promise(resolve => setTimeout(resolve, ctx.quick ? 500 : 2000))
      await hubs[0]!.start()
      const killed = await killRun
      await until(db, before2 + killed.acked, Date.now(), 60_000)
      const lost = killed.acked - (await rows(db) - before2)
      const lostSteady = sent.acked - stored
      return {
        figures: [
          figure(`readings/s stored, ${rate.toLocaleString('en-US')}/s offered for ${seconds} s`, sustained, 'readings/s', { name: 'bare COPY', value: copyRate }, hubTarget(sustained, Math.max(0, lostSteady))),
          figure(`p99 box acknowledgement → hub WebSocket at ${latencyRate.toLocaleString('en-US')}/s (${delays.length} readings of 20 members, both instances)`, p99, 'ms', undefined, p99Target(missed > 0 ? Number.POSITIVE_INFINITY : p99, HUB_P99_MS)),
          figure('hub CPU per stored reading (both instances)', usPerReading, 'µs'),
          figure('readings lost, one instance killed and restarted', Math.max(0, lost), 'readings', undefined, noneLostTarget(lost))
        ],
        lost: Math.max(0, lost) + Math.max(0, lostSteady),
        notes: [
          `${sent.acked} readings acknowledged by the broker in ${(sent.publishMs / 1000).toFixed(1)} s of publishing; all stored ${(doneMs / 1000).toFixed(2)} s after the first`,
          `kill round: ${killed.acked} acknowledged, ${killed.acked - Math.max(0, lost)} stored`,
          `box acknowledgement → hub WebSocket: p50 ${percentile(delays, 50).toFixed(1)} ms, max ${(delays[delays.length - 1] ?? Number.NaN).toFixed(1)} ms; ${missed} of ${acknowledged.length} watched readings never arrived`
        ]
      }
    } finally {
      for (const fn of teardowns) await fn()
    }
  }
}
