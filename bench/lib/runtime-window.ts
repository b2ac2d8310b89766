// A server's own stalls during one measured window: the main thread's pauses
// for garbage collection (V8's `gc` performance entries: how many, and their
// total) and the event loop's delay (how late a 10 ms timer fired: p99 and max,
// from Node's monitorEventLoopDelay). hr-relay exports both at /metrics
// (prom-client's default metrics read the same two sources at the same 10 ms
// resolution); the bare reference broker records them in its own worker. A
// latency tail is thus split into what the server's main thread spent stalled
// and what the generator, the receivers and the scheduler added.
import { PerformanceObserver, monitorEventLoopDelay } from 'node:perf_hooks'
import { metricSum } from './metrics.ts'

export interface RuntimeWindow {
  seconds: number
  /** Garbage-collection pauses on the main thread in the window (every kind). */
  gcPauses: number
  /** Their total wall time (ms). */
  gcMs: number
  /** How late a 10 ms timer fired (ms): the 99th percentile and the worst, in the window. */
  loopLateP99Ms: number
  loopLateMaxMs: number
}

/** The timer period of both event-loop monitors (prom-client's default precision). */
export const LOOP_RESOLUTION_MS = 10

const late = (intervalNs: number): number => Math.max(0, intervalNs / 1e6 - LOOP_RESOLUTION_MS)

/** Records a window in this process (the reference broker's worker). */
export function runtimeRecorder (): { start: () => void, end: () => RuntimeWindow } {
  const loop = monitorEventLoopDelay({ resolution: LOOP_RESOLUTION_MS })
  let pauses = 0
  let ms = 0
  let startedAt = 0
  const gc = new PerformanceObserver(list => {
    for (const e of list.getEntries()) { pauses++; ms += e.duration }
  })
  return {
    start () {
      pauses = 0; ms = 0; startedAt = performance.now()
      loop.reset(); loop.enable()
      gc.observe({ entryTypes: ['gc'] })
    },
    end () {
      loop.disable(); gc.disconnect()
      return { seconds: (performance.now() - startedAt) / 1000, gcPauses: pauses, gcMs: ms, loopLateP99Ms: late(loop.percentile(99)), loopLateMaxMs: late(loop.max) }
    }
  }
}

export interface RuntimeScrape { at: number, gcPauses: number, gcMs: number, loopP99Ms: number, loopMaxMs: number }

/**
 * hr-relay's runtime figures from its /metrics text; undefined when it does not
 * export them. The event-loop figures cover the time since the previous scrape
 * (prom-client resets its histogram at every collection). The GC histogram has
 * a sample only per kind of collection seen since the metrics started, so a
 * text with the event-loop gauges and no GC sample means no pause yet.
 */
export function parseRuntime (text: string, at: number): RuntimeScrape | undefined {
  const p99 = metricSum(text, 'hr_relay_nodejs_eventloop_lag_p99_seconds')
  const max = metricSum(text, 'hr_relay_nodejs_eventloop_lag_max_seconds')
  if (p99 === undefined || max === undefined) return undefined
  const count = metricSum(text, 'hr_relay_nodejs_gc_duration_seconds_count') ?? 0
  const seconds = metricSum(text, 'hr_relay_nodejs_gc_duration_seconds_sum') ?? 0
  return { at, gcPauses: count, gcMs: seconds * 1000, loopP99Ms: p99 * 1000, loopMaxMs: max * 1000 }
}

/** The window between two scrapes of the same server. */
export function runtimeBetween (before: RuntimeScrape, after: RuntimeScrape): RuntimeWindow {
  return {
    seconds: (after.at - before.at) / 1000,
    gcPauses: after.gcPauses - before.gcPauses,
    gcMs: after.gcMs - before.gcMs,
    loopLateP99Ms: late(after.loopP99Ms * 1e6),
    loopLateMaxMs: late(after.loopMaxMs * 1e6)
  }
}
