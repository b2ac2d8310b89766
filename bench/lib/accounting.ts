// Pure accounting of the ingest and footprint scenarios, apart from their
// I/O so that the harness test can check every count and target exactly.
import { figure, type Figure } from './results.ts'

const MB = 1024 * 1024

/**
 * Readings acknowledged and lost in ingest-capacity. The warm-up's readings
 * are stored like any other, so they count on both sides: acknowledged by
 * hr-relay (warm-up + every step) against the raw readings in the store.
 * Lost = acknowledged but not in the store; a reading without PUBACK is not
 * lost (a QoS 1 device resends it).
 */
export function ingestAccounting (warmupAcked: number, stepsAcked: readonly number[], raw: number): { acked: number, lost: number } {
  const acked = warmupAcked + stepsAcked.reduce((n, a) => n + a, 0)
  return { acked, lost: Math.max(0, acked - raw) }
}

export const RSS_TARGETS_MB = { steady: 150, peak: 180, idle: 80 } as const

/** The footprint's three RSS figures (bytes in), each with its own target. */
export function rssFigures (rss: { idle: number, steady: number, peak: number }, devices: number, viewers: number, idleStarts = 1): Figure[] {
  const idle = { name: 'idle', value: rss.idle / MB }
  return [
    figure(`RSS steady state (median of the last third), ${devices} devices at 1 Hz + ${viewers} WebSocket viewers`, rss.steady / MB, 'MB', idle,
      { text: `steady RSS <= ${RSS_TARGETS_MB.steady} MB`, met: rss.steady <= RSS_TARGETS_MB.steady * MB }),
    figure('RSS peak (highest sample, including while the devices connect)', rss.peak / MB, 'MB', idle,
      { text: `peak RSS <= ${RSS_TARGETS_MB.peak} MB`, met: rss.peak <= RSS_TARGETS_MB.peak * MB }),
    figure(`RSS idle (started, nothing connected${idleStarts > 1 ? `; the median of ${idleStarts} starts` : ''})`, rss.idle / MB, 'MB', undefined,
      { text: `idle RSS <= ${RSS_TARGETS_MB.idle} MB`, met: rss.idle <= RSS_TARGETS_MB.idle * MB })
  ]
}
