// Joins a generator's send times with receivers' receipts (both keyed by
// `${label}:${measured_at}`, label = device/user index) into latencies and
// lost readings.
import type { Receipts } from '../workers/ws-viewers.ts'
import { joinLatencies, summarize, type Summary } from './stats.ts'
import type { Worker } from './proc.ts'

/**
 * The first receipt of each (viewer label, bpm): for senders that carry no timestamp (a BLE notification, an
 * ANT+ page) and key each send `${strap}:${bpm}`.
 */
export function byRate (r: Receipts): Map<string, number> {
  const m = new Map<string, number>()
  for (let k = 0; k < r.times.length; k++) {
    const key = `${r.labels[k] as number}:${r.heartRates[k] as number}`
    if (!m.has(key)) m.set(key, r.times[k] as number)
  }
  return m
}

export interface Delivery {
  summary: Summary
  /** Readings sent (and expected by at least one receiver) that never arrived. */
  lost: number
  /** Receipts expected in total (sent × receivers of that label). */
  expected: number
  received: number
}

/** One receiver per label: the first receipt of each key counts. */
export function deliveryOne (sends: ReadonlyMap<string, number>, receipts: Receipts): Delivery {
  const got = new Map<string, number>()
  for (let k = 0; k < receipts.times.length; k++) {
    const key = `${receipts.labels[k] as number}:${receipts.measuredAt[k] as number}`
    if (!got.has(key)) got.set(key, receipts.times[k] as number)
  }
  const { latencies, lost } = joinLatencies(sends, got)
  return { summary: summarize(latencies), lost: lost.length, expected: sends.size, received: latencies.length }
}

/**
 * Many receivers per label (fan-out): `viewersPerLabel[label]` connections
 * each expect every send of that label. Every receipt is one latency; a send
 * is counted lost once per viewer that missed it.
 */
export function deliveryMany (sends: ReadonlyMap<string, number>, receiptSets: Receipts[], viewersPerLabel: ReadonlyMap<number, number>): Delivery {
  const latencies: number[] = []
  const count = new Map<string, number>()
  for (const r of receiptSets) {
    for (let k = 0; k < r.times.length; k++) {
      const key = `${r.labels[k] as number}:${r.measuredAt[k] as number}`
      const t0 = sends.get(key)
      if (t0 === undefined) continue
      latencies.push((r.times[k] as number) - t0)
      count.set(key, (count.get(key) ?? 0) + 1)
    }
  }
  let expected = 0
  let lost = 0
  for (const key of sends.keys()) {
    const label = Number(key.slice(0, key.indexOf(':')))
    const want = viewersPerLabel.get(label) ?? 0
    expected += want
    lost += Math.max(0, want - (count.get(key) ?? 0))
  }
  return { summary: summarize(latencies), lost, expected, received: latencies.length }
}

/**
 * Ends a window's straggler wait: polls the receivers' counts until at least
 * `expected` receipts are in and `missing(receipts)` is 0, or `maxMs` passed
 * (the limit), then stops recording and returns
 * every receiver's receipts. Finishing early changes no figure: a reading
 * still missing at the limit is lost either way.
 */
export async function receiptsWhenComplete (receivers: readonly Worker[], expected: number, missing: (r: Receipts[]) => number, maxMs: number): Promise<Receipts[]> {
  const deadline = Date.now() + maxMs
  while (Date.now() < deadline) {
    const counts = await Promise.all(receivers.map(async w => await w.call<number>('count')))
    if (counts.reduce((a, b) => a + b, 0) >= expected && missing(await Promise.all(receivers.map(async w => await w.call<Receipts>('peek')))) === 0) break
    await new Promise(resolve => setTimeout(resolve, 50))
  }
  return await Promise.all(receivers.map(async w => await w.call<Receipts>('collect')))
}
