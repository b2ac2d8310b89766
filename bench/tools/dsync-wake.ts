// What one durable wait costs beside a CPU hog, without hr-relay: a thread writes 1 KiB records with O_DSYNC over a
// journal file of the store's own making (createJournal: zero-filled and synced), one at a time, and times each
// write. The tries take turns: without the hog, beside it (one busy process per core, as the contention rounds of
// e2e-latency), and beside it at nice -5 (the unit's value; skipped where not permitted). For each write it also
// reads how long the thread waited for a core (/proc/thread-self/schedstat), so that a write's wall time splits
// into the disk's part and the wait to run again once the disk has answered (bench/README.md, "What the wake-up
// waits for").
//
//   node --import ./scripts/ts-loader.mjs bench/tools/dsync-wake.ts [writes] [tries] [dir]
//
// The defaults are 3,000 writes a try, 4 tries of each kind, and a file in the system's temporary directory (give
// the data directory's disk to measure that one).
import { closeSync, constants, openSync, writeSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { setPriority, tmpdir } from 'node:os'
import { join } from 'node:path'
import { CoreWait } from '../../api/core-wait.ts'
import { AREA_START, createJournal } from '../../api/store/journal.ts'
import { startHog } from '../lib/hog.ts'
import { fmt, percentile } from '../lib/stats.ts'

const RECORD = 1024
const FILE_BYTES = 8 << 20

export type Kind = 'idle' | 'hog' | 'hog, nice -5'

/** One try: each write's wall time and the part of it the thread spent waiting for a core (ms). */
export interface Try { kind: Kind, wall: Float64Array, coreWait: Float64Array }

/** `count` O_DSYNC writes of one record each, in turn over the record area of the journal at `path` (see preallocate). */
export function timeWrites (path: string, count: number): Omit<Try, 'kind'> {
  const fd = openSync(path, constants.O_RDWR | constants.O_DSYNC)
  const coreWait = new CoreWait()
  const record = Buffer.alloc(RECORD, 0x5a)
  const wall = new Float64Array(count)
  const waited = new Float64Array(count)
  try {
    for (let i = 0, at = AREA_START; i < count; i++, at = at + 2 * RECORD > FILE_BYTES ? AREA_START : at + RECORD) {
      const w0 = coreWait.ms()
      const t0 = performance.now()
      for (let done = 0; done < RECORD;) done += writeSync(fd, record, done, RECORD - done, at + done)
      wall[i] = performance.now() - t0
      waited[i] = Math.min(wall[i]!, Math.max(0, coreWait.ms() - w0))
    }
  } finally {
    coreWait.close()
    closeSync(fd)
  }
  return { wall, coreWait: waited }
}

/**
 * A journal of FILE_BYTES made as the store makes its own (createJournal: zero-filled and synced, then renamed), in
 * a new directory under `parent`: overwriting its record area changes no metadata.
 */
export async function preallocate (parent: string): Promise<{ path: string, remove: () => Promise<void> }> {
  const dir = await mkdtemp(join(parent, 'dsync-wake-'))
  const path = join(dir, 'journal')
  await createJournal(path, FILE_BYTES, 0)
  return { path, remove: async () => { await rm(dir, { recursive: true, force: true }) } }
}

/** A try's line: the wall time's p50, p99, p99.9 and max, the disk's part (wall less the wait for a core) at p99 and p99.9, and the share of all its wall time that was a wait for a core. */
export function describe (t: Try): string {
  const wall = Array.from(t.wall).sort((a, b) => a - b)
  const disk = Array.from(t.wall, (w, i) => w - t.coreWait[i]!).sort((a, b) => a - b)
  let total = 0
  let waited = 0
  for (let i = 0; i < t.wall.length; i++) { total += t.wall[i]!; waited += t.coreWait[i]! }
  const share = total > 0 ? (100 * waited / total).toFixed(0) : '0'
  return `${t.kind}: ${t.wall.length} writes, wall p50 ${fmt(percentile(wall, 50))} p99 ${fmt(percentile(wall, 99))} p99.9 ${fmt(percentile(wall, 99.9))} max ${fmt(wall[wall.length - 1] ?? NaN)} ms; ` +
    `disk p99 ${fmt(percentile(disk, 99))} p99.9 ${fmt(percentile(disk, 99.9))} ms; waiting for a core ${share} % of the wall time`
}

/** Sets the calling thread's nice value (Linux: setpriority on pid 0 is this thread); false where not permitted. */
function niceThread (value: number): boolean {
  try { setPriority(0, value); return true } catch { return false }
}

/** The tries, `tries` of each kind in turn (idle, hog, hog at nice -5), `count` writes each, over a file under `parent`. */
export async function measure (count: number, tries: number, parent: string, onTry: (t: Try) => void = () => undefined): Promise<Try[]> {
  const file = await preallocate(parent)
  const out: Try[] = []
  try {
    const canNice = niceThread(-5) && niceThread(0)
    const kinds: Kind[] = canNice ? ['idle', 'hog', 'hog, nice -5'] : ['idle', 'hog']
    for (let i = 0; i < tries; i++) {
      for (const kind of kinds) {
        const hog = kind === 'idle' ? undefined : startHog()
        try {
          if (kind === 'hog, nice -5') niceThread(-5)
          const t: Try = { kind, ...timeWrites(file.path, count) }
          out.push(t)
          onTry(t)
        } finally {
          niceThread(0)
          await hog?.stop()
        }
      }
    }
  } finally {
    await file.remove()
  }
  return out
}

async function main (): Promise<void> {
  const count = Number(process.argv[2] ?? 3000)
  const tries = Number(process.argv[3] ?? 4)
  const parent = process.argv[4] ?? tmpdir()
  if (!Number.isInteger(count) || count < 1 || !Number.isInteger(tries) || tries < 1) {
    process.stderr.write('usage: dsync-wake.ts [writes >= 1] [tries >= 1] [dir]\n')
    process.exit(2)
  }
  await measure(count, tries, parent, t => { process.stdout.write(`${describe(t)}\n`) })
}

if (process.argv[1]?.endsWith('dsync-wake.ts') === true) {
  main().then(() => process.exit(0), (err: unknown) => { process.stderr.write(`${String((err as Error).stack ?? err)}\n`); process.exit(1) })
}
