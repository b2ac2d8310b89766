// The disk's sync-write latency, measured in the same run: every reading
// hr-relay acknowledges or publishes has waited for one LevelDB batch with
// sync, so this sets a floor under its latency tails.
import { rm } from 'node:fs/promises'
import { Worker } from './proc.ts'
import { figure, type Figure } from './results.ts'
import { tempDir } from './server.ts'
import { summarize } from './stats.ts'

/** `loader`: a running store-loader worker to use (default: one started for this probe). */
export async function syncFigure (count: number, loader?: Worker): Promise<Figure> {
  const dir = await tempDir('sync')
  const w = loader ?? await Worker.start('workers/store-loader.ts')
  try {
    const s = summarize(Array.from(await w.call<Float64Array>('syncProbe', dir, count)))
    return figure(`LevelDB sync batch p99 on this disk (p50 ${s.p50.toFixed(2)} ms, ${count} batches)`, s.p99, 'ms')
  } finally {
    if (loader === undefined) await w.stop()
    await rm(dir, { recursive: true, force: true })
  }
}
