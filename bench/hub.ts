// hub: two hub instances (`hr-relay hub start`) on one Mosquitto and one PostgreSQL, fed by simulated boxes that
// forward as a box's upstream does (bench/workers/box-publisher.ts). Figures: readings/s stored in PostgreSQL at
// an offered 12,000/s (counted until PostgreSQL holds every reading the broker acknowledged), next to a bare COPY of the same rows into the same table shape measured in the same run;
// the CPU per reading of a hub instance; and the readings lost when one instance is killed with SIGKILL during a
// stream and started again. The p99 from a box's acknowledgement to a hub WebSocket needs the hub's API (not yet
// built, docs/hub.md) and is not measured.
import pg from 'pg'
import { from as copyFrom } from 'pg-copy-streams'
import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { startHubChain } from '../test/helpers/hub-process.ts'
import { cpuOf, ticksPerSecond } from './lib/cpu.ts'
import { BenchFailure } from './lib/errors.ts'
import { Worker } from './lib/proc.ts'
import { figure } from './lib/results.ts'
import type { Context, Outcome, Scenario } from './lib/scenario.ts'
import { HUB_PER_SECOND, hubTarget, noneLostTarget } from './lib/targets.ts'

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
          figure('hub CPU per stored reading (both instances)', usPerReading, 'µs'),
          figure('readings lost, one instance killed and restarted', Math.max(0, lost), 'readings', undefined, noneLostTarget(lost))
        ],
        lost: Math.max(0, lost) + Math.max(0, lostSteady),
        notes: [
          `${sent.acked} readings acknowledged by the broker in ${(sent.publishMs / 1000).toFixed(1)} s of publishing; all stored ${(doneMs / 1000).toFixed(2)} s after the first`,
          `kill round: ${killed.acked} acknowledged, ${killed.acked - Math.max(0, lost)} stored`,
          'p99 box acknowledgement → hub WebSocket: not measured; the hub has no WebSocket API yet (docs/hub.md)'
        ]
      }
    } finally {
      for (const fn of teardowns) await fn()
    }
  }
}
