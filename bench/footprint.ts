// footprint: resident memory of the hr-relay process with D MQTT devices at
// 1 Hz (the simulator's load generator) and W WebSocket viewers connected;
// reference: the same server idle. Disk: bytes per stored reading after
// compaction (db.compactRange), for one user's 1 Hz readings loaded through
// the store's batch path, over the same store compacted before the load.
import { readFile, rm } from 'node:fs/promises'
import { fleet, freshCopy, type Fleet } from './lib/fleet.ts'
import { bothOrNeither, Worker } from './lib/proc.ts'
import { figure } from './lib/results.ts'
import { sleep, type Context, type Outcome, type Scenario } from './lib/scenario.ts'
import { requireMqtt, startServer, type BenchServer } from './lib/server.ts'
import { openViewers, viewersFor } from './lib/viewers.ts'
import { compiledEntry } from './lib/build.ts'
import { rssFigures } from './lib/accounting.ts'
import { percentile } from './lib/stats.ts'
import { serviceEnvironment } from './lib/unit-env.ts'
import { heapOf, type HeapScrape } from './lib/metrics.ts'
import type { LoadStats } from '../device-sim/load.ts'

const mb = (bytes: number): string => (bytes / 1048576).toFixed(1)

/** V8's heap at the highest RSS sample that has it, and its largest in the steady window: how much of the RSS is the heap. */
function heapSummary (all: ReadonlyArray<{ rss: number, heap?: HeapScrape }>, steady: ReadonlyArray<{ rss: number, heap?: HeapScrape }>): string {
  const withHeap = all.filter(s => s.heap !== undefined)
  const top = withHeap.reduce<{ rss: number, heap?: HeapScrape } | undefined>((a, s) => a === undefined || s.rss > a.rss ? s : a, undefined)
  if (top?.heap === undefined) return 'V8 heap: not read (no heap gauges at /metrics)'
  const largest = (samples: ReadonlyArray<{ heap?: HeapScrape }>): string => {
    const used = samples.flatMap(s => s.heap === undefined ? [] : [s.heap.used])
    return used.length === 0 ? 'not read' : `${mb(Math.max(...used))} MB`
  }
  return `V8 heap (/metrics, once a second) at the highest RSS sample read with it (RSS ${mb(top.rss)} MB): ${mb(top.heap.total)} MB committed, ${mb(top.heap.used)} MB used, ${mb(top.heap.external)} MB external; the rest of the RSS is native (node, LevelDB, sockets, malloc). Largest heap used in the steady window: ${largest(steady)}; over the whole window: ${largest(withHeap)}`
}

/** Where the idle RSS is: anonymous memory (V8's heap, malloc, stacks) and the file-backed pages (node's code, libraries). */
async function idleSplit (pid: number, url: string): Promise<string> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8')
  const kb = (field: string): number => Number(new RegExp(`^${field}:\\s+(\\d+) kB$`, 'm').exec(status)?.[1] ?? Number.NaN) * 1024
  const heap = await heapOf(url)
  const inHeap = heap === undefined ? 'V8 heap not read' : `V8 heap ${mb(heap.total)} MB committed, ${mb(heap.used)} MB used`
  return `idle RSS: ${mb(kb('RssAnon'))} MB anonymous (${inHeap}; the rest malloc, LevelDB, stacks), ${mb(kb('RssFile') + kb('RssShmem'))} MB file-backed (node's code and libraries)`
}

/** Starts of the server whose idle RSS a full run takes the median of. */
const IDLE_STARTS = 3

/** The idle RSS of one more start of the server, 3 s after it is ready. */
async function idleRss (start: () => Promise<BenchServer>): Promise<number> {
  const server = await start()
  try {
    await sleep(3000)
    return await server.rss()
  } finally {
    await server.stop()
  }
}

const sizes = (quick: boolean): { devices: number, viewers: number } => quick ? { devices: 25, viewers: 25 } : { devices: 2000, viewers: 500 }

async function diskPerReading (quick: boolean, f: Fleet): Promise<{ perReading: number, readings: number, before: number, after: number }> {
  // The fleet's first user on a fresh copy of its accounts; the accounts are in `before` and cancel out.
  const user = f.users[0]
  const dir = await freshCopy(f)
  const loader = await Worker.start('workers/store-loader.ts')
  try {
    const before = await loader.call<{ bytes: number }>('compact', dir)
    const count = quick ? 20_000 : 1_000_000
    await loader.call('load', dir, { profileId: user?.profile_id, start: Date.now() - count * 1000 - 60_000, count, group: 5000 })
    const after = await loader.call<{ bytes: number, raw: number }>('compact', dir)
    return { perReading: (after.bytes - before.bytes) / after.raw, readings: after.raw, before: before.bytes, after: after.bytes }
  } finally {
    await loader.stop()
    await rm(dir, { recursive: true, force: true })
  }
}

export const footprint: Scenario = {
  name: 'footprint',
  reference: 'RSS of the same server idle (started, nothing connected); disk: the same store compacted before the readings',
  fleetSize: quick => sizes(quick).devices,
  async run (ctx: Context): Promise<Outcome> {
    const { devices: nd, viewers: nv } = sizes(ctx.quick)
    const durationS = ctx.quick ? 1 : 30
    const f = await fleet(nd, ctx.log)
    // Production runs a build (`npm run build`); --quick saves the 25 s compile and runs the sources through the load hook.
    const compiled = ctx.quick ? undefined : await compiledEntry()
    const unitEnv = await serviceEnvironment()
    // On a fresh copy of the fleet, as systemd runs it: the unit's Environment= (MALLOC_ARENA_MAX=2, 1 MB semi-spaces).
    const start = async (): Promise<BenchServer> => await startServer({ dataDir: await freshCopy(f), removeDataDir: true, env: unitEnv, ...(compiled === undefined ? {} : { compiledEntry: compiled }) })
    const [load, viewers] = await bothOrNeither(Worker.start('workers/sim-load.ts'), Worker.start('workers/ws-viewers.ts'))
    let server
    try {
      server = await start()
    } catch (err) {
      await viewers.stop(); await load.stop()
      throw err
    }
    let idle: number; let peak = 0; let steady = 0; let stats: LoadStats; let heapNote = ''; let idleNote = ''
    const idles: number[] = []
    try {
      const port = requireMqtt(server)
      await sleep(ctx.quick ? 500 : 3000)
      idles.push(await server.rss())
      idleNote = await idleSplit(server.pid, server.url)
      // The idle RSS is set by the start (it is the same from the second after it on) and differs between starts
      // by several MB (malloc's and V8's state after the start's collections): a full run takes the median of three.
      for (let i = 1; i < IDLE_STARTS && !ctx.quick; i++) idles.push(await idleRss(start))
      idle = percentile([...idles].sort((a, b) => a - b), 50)
      await openViewers(viewers, viewersFor(server.url, f.users.slice(0, nv)))
      let done = false
      const running = load.call<LoadStats>('run', port, f.devices.slice(0, nd), durationS).finally(() => { done = true })
      const samples: Array<{ t: number, rss: number, heap?: HeapScrape }> = []
      while (!done) {
        // RSS four times a second; V8's heap from /metrics every fourth sample (where the RSS is: heap or native).
        const heap = samples.length % 4 === 0 ? await heapOf(server.url) : undefined
        samples.push({ t: Date.now(), rss: await server.rss(), ...(heap === undefined ? {} : { heap }) })
        await sleep(250)
      }
      stats = await running
      // Steady state: the last third of the publishing window (every device connected, readings flowing).
      const end = Date.now()
      const last = samples.filter(s => s.t >= end - (durationS * 1000) / 3)
      const tail = last.map(s => s.rss).sort((a, b) => a - b)
      steady = tail[Math.floor(tail.length / 2)] ?? Number.NaN
      peak = Math.max(...samples.map(s => s.rss))
      heapNote = heapSummary(samples, last)
    } finally {
      await viewers.stop(); await load.stop(); await server.stop()
    }
    ctx.log('footprint: disk bytes per reading')
    const disk = await diskPerReading(ctx.quick, f)
    const lost = stats.sent - stats.acked
    return {
      figures: [
        ...rssFigures({ idle, steady, peak }, nd, nv, idles.length),
        figure('disk bytes per stored reading after compaction', disk.perReading, 'bytes', undefined, { text: '<= 24 bytes', met: disk.perReading <= 24 }),
        figure('devices connected', stats.connected, 'devices', undefined, { text: `all ${nd}`, met: stats.connected === nd })
      ],
      lost,
      notes: [
        `load generator (device-sim/load.ts): ${stats.sent} sent, ${stats.acked} acknowledged, ${stats.failed} failed, ${stats.in_flight} in flight, ${stats.skipped} skipped, ${stats.connect_failed} connections refused`,
        `disk: ${disk.readings} readings of one user at 1 Hz through the batch path; ${disk.before} bytes compacted before, ${disk.after} after (readings, per-minute rollups and latest included)`,
        `idle RSS of each start: ${idles.map(mb).join(', ')} MB (the first is the server measured under load below)`,
        idleNote,
        heapNote,
        `server environment from deploy/hr-relay.service: ${Object.entries(unitEnv).map(([k, v]) => `${k}=${v}`).join(' ') || 'none'}`,
        compiled === undefined ? 'the server runs its TypeScript through the load hook (--quick: no build), which adds the hook thread and compiled sources to the RSS' : 'the server runs the compiled build (scripts/build.mjs, as `npm run build`), as in production'
      ]
    }
  }
}
