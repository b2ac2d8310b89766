// The targets of the rows that have one, as pure functions of a run's figures, so that test/bench/targets.test.ts
// checks each line exactly. Each is an absolute floor a gym or a chain needs, or a ratio against a reference measured
// in the same run.
import type { Target } from './results.ts'

/** latest-http: hr-relay's requests/s (through Fastify) at least this share of bare Fastify's. */
export const LATEST_HTTP_SHARE = 0.8
/** ws-fanout: hr-relay's p99 delivery at most this many times bare ws's. */
export const FANOUT_P99_RATIO = 1.2
/** ingest-capacity on 2 cores, and pi-profile on one: QoS 1 readings/s stored and acknowledged. */
export const INGEST_PER_SECOND = 10_000
export const PI_INGEST_PER_SECOND = 3_000
/** e2e-latency at 200 devices (a big gym): p99 publish→WebSocket quiet, and beside a CPU hog (the median of the rounds). */
export const GYM_QUIET_P99_MS = 10
export const GYM_HOG_P99_MS = 50
/** class: 40 straps on one core, every one on its display within this long of pairing, and p99 strap → display per radio. */
export const CLASS_STREAMING_S = 30
export const CLASS_P99_MS = 50

const thousands = (n: number): string => n.toLocaleString('en-US')

/** Requests/s against bare Fastify's in the same round; any non-2xx, error or timeout misses it too. */
export function latestHttpTarget (rps: number, refRps: number, bad: number): Target {
  return { text: `>= ${LATEST_HTTP_SHARE}x bare Fastify`, met: rps >= LATEST_HTTP_SHARE * refRps && bad === 0 }
}

export function fanoutTarget (p99: number, refP99: number): Target {
  return { text: `p99 <= ${FANOUT_P99_RATIO}x bare ws`, met: p99 <= FANOUT_P99_RATIO * refP99 }
}

/** A capacity at or above the floor, with every acknowledged reading in the store. */
export function ingestTarget (perSecond: number, lost: number, floor: number): Target {
  return { text: `>= ${thousands(floor)} readings/s, every one stored`, met: perSecond >= floor && lost === 0 }
}

export function p99Target (p99: number, limitMs: number): Target {
  return { text: `p99 <= ${limitMs} ms`, met: p99 <= limitMs }
}

/** class: every strap streaming, the last of them within CLASS_STREAMING_S of pairing. */
export function classStreamingTarget (seconds: number, streaming: number, straps: number): Target {
  return { text: `all ${straps} within ${CLASS_STREAMING_S} s`, met: streaming === straps && seconds <= CLASS_STREAMING_S }
}

/** hub: readings/s a chain's hub stores sustained (100 gyms of 100 straps at 1 Hz), and none lost. */
export const HUB_PER_SECOND = 10_000
/** Issue 42 §4: a box's acknowledgement to a hub WebSocket, at HUB_PER_SECOND. */
export const HUB_P99_MS = 100

export function hubTarget (perSecond: number, lost: number): Target {
  return { text: `>= ${thousands(HUB_PER_SECOND)} readings/s, none lost`, met: perSecond >= HUB_PER_SECOND && lost === 0 }
}

export function noneLostTarget (lost: number): Target {
  return { text: 'none lost', met: lost === 0 }
}
