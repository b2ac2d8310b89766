// Runs autocannon in its own process (bench/workers/http-load.ts, autocannon's
// programmatic API: the same engine as its CLI) against a URL.
import { BenchFailure } from './errors.ts'
import { Worker } from './proc.ts'
import type { LoadPlan } from '../workers/http-load.ts'

export interface CannonResult {
  requestsPerSecond: number
  latencyP50: number
  latencyP99: number
  total: number
  non2xx: number
  errors: number
  timeouts: number
}

/** The load generator's process: start it once per scenario, stop it at the end. */
export async function startCannon (): Promise<Worker> {
  return await Worker.start('workers/http-load.ts')
}

/** `amount`: stop after that many requests instead of after `durationS` (warm-ups). */
export async function autocannon (cannon: Worker, url: string, o: Omit<LoadPlan, 'url'>): Promise<CannonResult> {
  let r: any
  try {
    r = await cannon.call('run', { url, ...o } satisfies LoadPlan)
  } catch (err) {
    throw new BenchFailure(`autocannon against ${url}: ${(err as Error).message}`)
  }
  // Requests over the run's measured duration: autocannon's requests.average is a mean of whole-second
  // samples, which a run of a few seconds makes coarse.
  const seconds = typeof r.duration === 'number' && r.duration > 0 ? r.duration : undefined
  return {
    requestsPerSecond: seconds === undefined ? r.requests.average : r.requests.total / seconds,
    latencyP50: r.latency.p50,
    latencyP99: r.latency.p99,
    total: r.requests.total,
    non2xx: r.non2xx,
    errors: r.errors,
    timeouts: r.timeouts
  }
}
