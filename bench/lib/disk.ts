// The disk's sync-write latency, measured in the same run: every reading
// hr-relay acknowledges or publishes has waited for one LevelDB batch with
// sync, so this sets a floor under its latency tails.
import { rm } from 'node:fs/promises'
import { Worker } from './proc.ts'
import { figure, type Figure } from './results.ts'
import { tempDir } from './server.ts'
import { summarize } from './stats.ts'

/**
 * `loader`: a running store-loader worker to use (default: one started for this probe). `gapMs`: a pause
 * between batches, for a scenario whose readings arrive that far apart (an idle disk and thread pool answer slower).
 */
export async function syncFigure (count: number, loader?: Worker, gapMs = 0): Promise<Figure> {
  const dir = await tempDir('sync')
  const w = loader ?? await Worker.start('workers/store-loader.ts')
  try {
    const s = summarize(Array.from(await w.call<Float64Array>('syncProbe', dir, count, gapMs)))
    const spacing = gapMs > 0 ? `, one every ${gapMs} ms` : ''
    return figure(`LevelDB sync batch p99 on this disk (p50 ${s.p50.toFixed(2)} ms, ${count} batches${spacing})`, s.p99, 'ms')
  } finally {
    if (loader === undefined) await w.stop()
    await rm(dir, { recursive: true, force: true })
  }
}
