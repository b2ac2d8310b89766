// Pure arithmetic over samples: percentiles (nearest rank), summaries and
// ratios. No I/O, so the harness test can check it exactly.

export interface Summary {
  count: number
  min: number
  p50: number
  p90: number
  p99: number
  max: number
  mean: number
}

/** Nearest-rank percentile of an ascending array; NaN when empty. p in [0, 100]. */
export function percentile (sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN
  if (!(p >= 0 && p <= 100)) throw new RangeError(`percentile ${p} is outside 0..100`)
  const rank = Math.max(1, Math.ceil((p / 100) * sorted.length))
  return sorted[rank - 1] as number
}

export function summarize (values: readonly number[]): Summary {
  const sorted = Float64Array.from(values).sort()
  const arr = Array.from(sorted)
  let sum = 0
  for (const v of arr) sum += v
  return {
    count: arr.length,
    min: arr.length === 0 ? Number.NaN : arr[0] as number,
    p50: percentile(arr, 50),
    p90: percentile(arr, 90),
    p99: percentile(arr, 99),
    max: arr.length === 0 ? Number.NaN : arr[arr.length - 1] as number,
    mean: arr.length === 0 ? Number.NaN : sum / arr.length
  }
}

/** value / reference, or NaN when the reference is zero or missing. */
export function ratio (value: number, reference: number): number {
  if (!Number.isFinite(value) || !Number.isFinite(reference) || reference === 0) return Number.NaN
  return value / reference
}

/** Rounds for display: 3 significant digits below 100, integers above. */
export function fmt (n: number): string {
  if (!Number.isFinite(n)) return String(n)
  const a = Math.abs(n)
  if (a >= 100) return Math.round(n).toLocaleString('en-US')
  if (a >= 10) return n.toFixed(1)
  if (a >= 1) return n.toFixed(2)
  if (a === 0) return '0'
  return n.toPrecision(3)
}

/**
 * Joins what a load generator sent with what a receiver got, by key. Returns
 * the latencies (receive - send, ms) and the keys that never arrived. A key
 * received twice counts once (the first receipt).
 */
export function joinLatencies (sent: ReadonlyMap<string, number>, received: ReadonlyMap<string, number>): { latencies: number[], lost: string[] } {
  const latencies: number[] = []
  const lost: string[] = []
  for (const [key, t0] of sent) {
    const t1 = received.get(key)
    if (t1 === undefined) lost.push(key)
    else latencies.push(t1 - t0)
  }
  return { latencies, lost }
}
