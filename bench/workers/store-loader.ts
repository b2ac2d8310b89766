// Worker: direct store work on a data directory no server holds: loading
// synthetic readings through the store's batch path (Readings.plan →
// Store.batch → commit, what the ingest pipeline does per group), the
// full-scan reference for statistics, raw `level` batch throughput, and
// compaction plus disk size for the footprint.
import { readdir, stat } from 'node:fs/promises'
import { join } from 'node:path'
import { Level } from 'level'
import { Store } from '../../api/store/db.ts'
import { Readings } from '../../api/store/readings.ts'
import { finish, type Statistics, type Sums } from '../../api/stats.ts'
import { streamCredit } from '../../api/store/rollups.ts'
import type { StoredReading } from '../../api/pipeline/reading.ts'
import { now, serve } from '../lib/proc.ts'
import { syntheticReading } from '../lib/synthetic.ts'

const GAP_MS = 5000

export interface LoadPlan {
  profileId: string
  /** First reading's time (ms). */
  start: number
  count: number
  /** Readings per batch (the pipeline's default group limit is 5000). */
  group: number
}

async function load (dir: string, p: LoadPlan): Promise<{ stored: number, ms: number }> {
  const store = await Store.open(dir)
  const readings = new Readings(store, { gapMs: GAP_MS })
  let stored = 0
  const t0 = now()
  try {
    for (let i = 0; i < p.count;) {
      const group: StoredReading[] = []
      for (const end = Math.min(p.count, i + p.group); i < end; i++) {
        const r = syntheticReading(p.profileId, p.start, i)
        if (r !== undefined) group.push(r)
      }
      const plan = await readings.plan(group)
      await store.batch(plan.ops, { sync: false })
      plan.commit()
      stored += plan.stored.length
    }
    await store.batch([{ type: 'put', sublevel: store.sub('meta'), key: 'bench_loaded', value: stored }], { sync: true })
  } finally {
    await store.close()
  }
  return { stored, ms: now() - t0 }
}

/** The reference: statistics from a full scan of the raw readings (no rollups). */
async function scan (dir: string, profileId: string, from: number, to: number): Promise<{ stats: Statistics, count: number, ms: number }> {
  const store = await Store.open(dir)
  const readings = new Readings(store, { gapMs: GAP_MS })
  try {
    const t0 = now()
    const s: Sums = { count: 0, sum: 0, min: 0, max: 0, streamedMs: 0, bpmMs: 0 }
    let prev: number | undefined
    for await (const r of readings.range(profileId, from, to)) {
      const credit = prev === undefined ? 0 : streamCredit(r.measured_at - prev, GAP_MS)
      s.min = s.count === 0 ? r.heart_rate : Math.min(s.min, r.heart_rate)
      s.max = s.count === 0 ? r.heart_rate : Math.max(s.max, r.heart_rate)
      s.count++
      s.sum += r.heart_rate
      s.streamedMs += credit
      s.bpmMs += r.heart_rate * credit
      prev = r.measured_at
    }
    const stats = finish(s, {})
    return { stats, count: s.count, ms: now() - t0 }
  } finally {
    await store.close()
  }
}

/** Reference for ingest: raw `level` batches of `group` small values, with sync, as fast as it goes. */
async function levelBatches (dir: string, total: number, group: number): Promise<{ perSecond: number, ms: number }> {
  const db = new Level<string, Uint8Array>(dir, { valueEncoding: 'view' })
  await db.open()
  const value = new Uint8Array([4, 72, 0])
  const t0 = now()
  try {
    for (let i = 0; i < total;) {
      const ops: Array<{ type: 'put', key: string, value: Uint8Array }> = []
      for (const end = Math.min(total, i + group); i < end; i++) ops.push({ type: 'put', key: `p${i % 100}!${String(1_700_000_000_000 + i).padStart(13, '0')}`, value })
      await db.batch(ops, { sync: true })
    }
  } finally {
    await db.close()
  }
  const ms = now() - t0
  return { perSecond: total / (ms / 1000), ms }
}

async function dirBytes (dir: string): Promise<number> {
  let total = 0
  for (const e of await readdir(dir, { withFileTypes: true })) {
    const p = join(dir, e.name)
    total += e.isDirectory() ? await dirBytes(p) : (await stat(p)).size
  }
  return total
}

/** Compacts the whole database and returns its size on disk and the count of raw readings. */
async function compact (dir: string): Promise<{ bytes: number, raw: number }> {
  const store = await Store.open(dir)
  try {
    // level on Node is classic-level, which has compactRange (its typings for Level omit it).
    await (store.db as unknown as { compactRange (a: string, b: string): Promise<void> }).compactRange('\u0000', '\uffff')
    let raw = 0
    const readings = new Readings(store, { gapMs: GAP_MS })
    for await (const _k of readings.raw.keys()) raw++
    return { bytes: await dirBytes(join(dir, 'db')), raw }
  } finally {
    await store.close()
  }
}

/**
 * Latency of n sequential small LevelDB batches with sync (what one group commit waits for), ms each. `gapMs`:
 * the pause between batches (0: back to back); a disk and thread pool that idle in between answer slower.
 */
async function syncProbe (dir: string, n: number, gapMs = 0): Promise<Float64Array> {
  const db = new Level<string, Uint8Array>(dir, { valueEncoding: 'view' })
  await db.open()
  const out = new Float64Array(n)
  try {
    for (let i = 0; i < n; i++) {
      const t0 = now()
      await db.batch([{ type: 'put', key: `r${i}`, value: new Uint8Array([4, 72, 0]) }, { type: 'put', key: `m${i}`, value: new Uint8Array(40) }], { sync: true })
      out[i] = now() - t0
      if (gapMs > 0) await new Promise(resolve => setTimeout(resolve, gapMs))
    }
  } finally {
    await db.close()
  }
  return out
}

// Every handler opens and closes its own store: nothing to reset between scenarios.
serve({ load, scan, levelBatches, compact, syncProbe, reset: () => {} })
