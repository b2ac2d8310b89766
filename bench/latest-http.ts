// latest-http: GET /api/v1/data/heart_rate/latest with a valid token, 50
// connections, no pipelining (autocannon in its own process, bench/workers/http-load.ts). Reference: a
// bare Fastify route at the same path returning a constant, same settings.
// Both saturate the two cores together with autocannon, so a burst of other
// work on the machine moves a run by tens of percent: the scenario runs seven
// short rounds, each a pair (reference, hr-relay) back to back in alternating
// order, and reports the round whose ratio is the median, with every round's
// ratio in the notes.
import { createUsers } from './lib/admin.ts'
import { autocannon, startCannon, type CannonResult } from './lib/autocannon.ts'
import { BenchFailure } from './lib/errors.ts'
import { bothOrNeither, Worker } from './lib/proc.ts'
import { figure } from './lib/results.ts'
import { latestHttpTarget } from './lib/targets.ts'
import { percentile } from './lib/stats.ts'
import { cpuOf, ticksPerSecond } from './lib/cpu.ts'
import type { Context, Outcome, Scenario } from './lib/scenario.ts'
import { requireRoute, startServer } from './lib/server.ts'

const PATH = '/api/v1/data/heart_rate/latest'

export const latestHttp: Scenario = {
  name: 'latest-http',
  reference: 'a bare Fastify route returning a constant reading, same autocannon settings',
  async run (ctx: Context): Promise<Outcome> {
    const durationS = ctx.quick ? 1 : 3
    const rounds = ctx.quick ? 1 : 7
    // The per-token rate limit (default 20/s) would answer 429; it stays on with a limit no run reaches.
    const cannonStarting = startCannon()
    cannonStarting.catch(() => {}) // awaited below
    const stopCannon = async (): Promise<void> => { await cannonStarting.then(async w => { await w.stop() }, () => {}) }
    const [server, ref] = await bothOrNeither(
      startServer({ config: { http: { rate_limit_per_second: 1_000_000 } }, ...(ctx.cpuProfileDir === undefined ? {} : { cpuProfileDir: ctx.cpuProfileDir }) }),
      Worker.start('workers/fastify-ref.ts')).catch(async (err: unknown) => { await stopCannon(); throw err })
    try {
      const c = await cannonStarting
      const [user] = await createUsers(server, 1, 'latest')
      if (user === undefined) throw new BenchFailure('no user')
      const auth = { authorization: `Bearer ${user.token}` }
      const measuredAt = Date.now() - 1000
      const post = await fetch(`${server.url}/api/v1/data`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ measured_at: measuredAt, data: { heart_rate: 77 } }) })
      if (post.status === 404) await requireRoute(server, '/api/v1/data')
      if (post.status !== 200) throw new BenchFailure(`POST /api/v1/data answered ${post.status} ${await post.text()}`)
      const check = await requireRoute(server, PATH, auth)
      const body = await check.json() as { measured_at?: number, data?: { heart_rate?: number } }
      if (check.status !== 200 || body.measured_at !== measuredAt || body.data?.heart_rate !== 77) throw new BenchFailure(`GET ${PATH} answered ${check.status} ${JSON.stringify(body)}, not the reading just written`)
      const refUrl = await ref.call<string>('start')
      const mine: CannonResult[] = []; const theirs: CannonResult[] = []
      // Each server's CPU (every thread) over its measured runs: tells a costlier answer from a server that got less of the machine.
      const cpu = { mine: { ticks: 0, requests: 0 }, theirs: { ticks: 0, requests: 0 } }
      const measure = async (pid: number, into: CannonResult[], acc: { ticks: number, requests: number }, url: string, headers?: Record<string, string>): Promise<void> => {
        const before = await cpuOf(pid)
        const result = await autocannon(c, url, { connections: 50, durationS, ...(headers === undefined ? {} : { headers }) })
        const after = await cpuOf(pid)
        acc.ticks += after.user - before.user + after.system - before.system
        acc.requests += result.total
        into.push(result)
      }
      const runRef = async (): Promise<void> => { await measure(ref.pid, theirs, cpu.theirs, refUrl + PATH) }
      const runOwn = async (): Promise<void> => { await measure(server.pid, mine, cpu.mine, server.url + PATH, auth) }
      // One second of each first (--quick: 1500 requests), not recorded (JIT, connection setup).
      const warm = ctx.quick ? { amount: 1500 } : {}
      await autocannon(c, refUrl + PATH, { connections: 50, durationS: 1, ...warm })
      await autocannon(c, server.url + PATH, { connections: 50, durationS: 1, headers: auth, ...warm })
      for (let r = 0; r < rounds; r++) {
        ctx.log(`latest-http: round ${r + 1}/${rounds}`)
        // ABBA: neither side always runs first, after the other has warmed the caches or heated the machine.
        if (r % 2 === 0) { await runRef(); await runOwn() } else { await runOwn(); await runRef() }
      }
      const ratios = mine.map((m, i) => m.requestsPerSecond / (theirs[i]?.requestsPerSecond ?? NaN))
      const byRatio = ratios.map((x, i) => ({ x, i })).sort((a, b) => a.x - b.x)
      const middle = byRatio[Math.floor(byRatio.length / 2)]?.i ?? 0
      const rps = mine[middle]?.requestsPerSecond ?? 0; const refRps = theirs[middle]?.requestsPerSecond ?? 0
      const hz = ticksPerSecond()
      const perAnswer = (acc: { ticks: number, requests: number }): number => acc.requests > 0 ? acc.ticks * 1e6 / hz / acc.requests : Number.NaN
      const median = (xs: CannonResult[], k: 'latencyP50' | 'latencyP99'): number => percentile(xs.map(x => x[k]).sort((a, b) => a - b), 50)
      const bad = mine.reduce((s, x) => s + x.non2xx + x.errors + x.timeouts, 0)
      return {
        figures: [
          figure('requests/s, 50 connections (median round)', rps, 'req/s', { name: 'bare Fastify', value: refRps }, latestHttpTarget(rps, refRps, bad)),
          figure('p50 latency (median of rounds)', median(mine, 'latencyP50'), 'ms', { name: 'bare Fastify', value: median(theirs, 'latencyP50') }),
          figure('p99 latency (median of rounds)', median(mine, 'latencyP99'), 'ms', { name: 'bare Fastify', value: median(theirs, 'latencyP99') }),
          figure('server CPU per answer (all rounds)', perAnswer(cpu.mine), 'µs', { name: 'bare Fastify', value: perAnswer(cpu.theirs) }),
          figure('non-2xx, errors, timeouts', bad, 'responses', undefined, { text: 'none', met: bad === 0 })
        ],
        lost: 0,
        notes: [
          `${rounds} round(s) of ${durationS} s for each side, reference and hr-relay back to back in alternating order; ${mine.reduce((s, x) => s + x.total, 0)} requests to hr-relay`,
          `ratio of each round, in order: ${ratios.map(x => x.toFixed(3)).join(', ')}`
        ]
      }
    } finally {
      await stopCannon(); await ref.stop(); await server.stop()
    }
  }
}
