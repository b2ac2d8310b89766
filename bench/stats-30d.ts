// stats-30d: /api/v1/statistics?time_range=30d for a user with 30 days of
// 1 Hz readings (loaded through the store's batch path before the server
// starts). Reference: statistics computed by a full scan of the same raw
// readings; the numbers must be identical.
import { fleet, freshCopy } from './lib/fleet.ts'
import { BenchFailure } from './lib/errors.ts'
import { now, Worker } from './lib/proc.ts'
import { figure } from './lib/results.ts'
import type { Context, Outcome, Scenario } from './lib/scenario.ts'
import { requireRoute, startServer } from './lib/server.ts'
import { summarize } from './lib/stats.ts'
import { rm } from 'node:fs/promises'
import type { Statistics } from '../api/stats.ts'

const DAY = 86_400_000

export const stats30d: Scenario = {
  name: 'stats-30d',
  reference: 'statistics from a full scan of the same raw readings (no rollups)',
  fleetSize: () => 1,
  async run (ctx: Context): Promise<Outcome> {
    const days = ctx.quick ? 1 : 30
    const queries = ctx.quick ? 20 : 200
    // 1. The user and its token: the first of the provisioned fleet (made through the admin API), on a fresh copy.
    const f = await fleet(1, ctx.log)
    const user = f.users[0]
    if (user === undefined) throw new BenchFailure('no user')
    const dir = await freshCopy(f)
    const loader = await Worker.start('workers/store-loader.ts')
    try {
      // 2. Readings through the store's batch path (the server is stopped: LevelDB allows one process).
      const start = Date.now() - days * DAY + 15 * 60_000
      const count = days * 86_400 - 900
      ctx.log(`stats-30d: loading ${count} readings (${days} days at 1 Hz) through Readings.plan + Store.batch`)
      const loaded = await loader.call<{ stored: number, ms: number }>('load', dir, { profileId: user.profile_id, start, count, group: 5000 })
      // 3. The API, queried sequentially from this process.
      const server = await startServer({ dataDir: dir, config: { http: { rate_limit_per_second: 1_000_000 } }, ...(ctx.cpuProfileDir === undefined ? {} : { cpuProfileDir: ctx.cpuProfileDir }) })
      const times: number[] = []
      let answer: Statistics | undefined
      try {
        const headers = { authorization: `Bearer ${user.token}` }
        await requireRoute(server, '/api/v1/statistics?time_range=30d', headers)
        for (let q = 0; q < queries; q++) {
          const t0 = now()
          const res = await fetch(`${server.url}/api/v1/statistics?time_range=30d`, { headers })
          const body = await res.json() as Statistics
          times.push(now() - t0)
          if (res.status !== 200) throw new BenchFailure(`GET /api/v1/statistics answered ${res.status} ${JSON.stringify(body)}`)
          answer = body
        }
      } finally {
        await server.stop()
      }
      // 4. The reference scan over every raw reading of the user.
      const scan = await loader.call<{ stats: Statistics, count: number, ms: number }>('scan', dir, user.profile_id, 0, Date.now())
      const api = summarize(times)
      const same = JSON.stringify(answer) === JSON.stringify(scan.stats)
      const notes = [
        `${loaded.stored} readings stored (${days} days at 1 Hz, a 10 s gap each hour) in ${(loaded.ms / 1000).toFixed(1)} s = ${Math.round(loaded.stored / (loaded.ms / 1000))} readings/s through the batch path (sync only at the end)`,
        `API: ${JSON.stringify(answer)}`,
        `scan: ${JSON.stringify(scan.stats)} over ${scan.count} readings`
      ]
      if (ctx.quick) notes.push(`--quick loads ${days} days instead of 30; the query is still time_range=30d`)
      return {
        figures: [
          figure('p50 GET statistics 30d', api.p50, 'ms', { name: 'full scan', value: scan.ms }, { text: 'p50 <= 10 ms', met: api.p50 <= 10 }),
          figure('speed-up: scan time / p50', scan.ms / api.p50, 'x', undefined, { text: '>= 100x faster than the scan', met: scan.ms / api.p50 >= 100 }),
          figure('p99 GET statistics 30d', api.p99, 'ms', { name: 'full scan', value: scan.ms }),
          figure('numbers identical to the scan', same ? 1 : 0, 'bool', undefined, { text: 'identical', met: same }),
          figure('readings in range', scan.count, 'readings')
        ],
        lost: scan.count === loaded.stored ? 0 : Math.abs(loaded.stored - scan.count),
        notes
      }
    } finally {
      await loader.stop()
      await rm(dir, { recursive: true, force: true })
    }
  }
}
