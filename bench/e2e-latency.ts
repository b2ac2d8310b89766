// e2e-latency: N MQTT devices at 1 Hz (QoS 1), one WebSocket subscriber per
// user; time from the device's PUBLISH to the subscriber's receipt of the
// reading. Reference: the same generator and the same N devices publishing
// through a bare Aedes broker to one MQTT subscriber (no auth, storage or API).
// Full runs add bare Aedes + sync batch: each reading stored in a group-committed
// LevelDB sync batch before its PUBACK, then forwarded to a subscriber of its own
// device (a connection per device, as hr-relay has a WebSocket per user): the
// least work of a relay doing hr-relay's job.
import { availableParallelism } from 'node:os'
import { fleet, freshCopy } from './lib/fleet.ts'
import { syncFigure } from './lib/disk.ts'
import { deliveryOne, receiptsWhenComplete, type Delivery } from './lib/latency.ts'
import { bucketPercentile, histogramBetween, parseIngestHistogram, type IngestHistogram } from './lib/metrics.ts'
import { schedBetween, schedOf, ticksPerSecond, type SchedSample, type SchedWindow } from './lib/cpu.ts'
import { parseRuntime, runtimeBetween, type RuntimeScrape, type RuntimeWindow } from './lib/runtime-window.ts'
import { allCpus, pinProcess, reniceProcess, signalAll, startHog } from './lib/hog.ts'
import { bothOrNeither, Worker } from './lib/proc.ts'
import { figure, type Figure } from './lib/results.ts'
import { GYM_HOG_P99_MS, GYM_QUIET_P99_MS, p99Target } from './lib/targets.ts'
import { fmt } from './lib/stats.ts'
import { type Context, type Outcome, type Scenario } from './lib/scenario.ts'
import { requireMqtt, startServer } from './lib/server.ts'
import { openViewers, viewersFor } from './lib/viewers.ts'
import { serviceNice } from './lib/unit-env.ts'
import type { PublishReport } from './workers/mqtt-devices.ts'
import type { Receipts } from './workers/ws-viewers.ts'

/** The first size is a big gym, the one with targets (--quick: a small stand-in); the others are figures without one. */
const sizes = (quick: boolean): number[] => quick ? [25] : [200, 2000]

/** Where the measured side runs: beside a CPU hog, pinned to a core, with node options (the contention and pi-profile scenarios). */
export interface Placement {
  /** One busy process per core from before the warm-up until the stragglers are in. */
  hog?: boolean
  /** taskset CPU list for the server (hr-relay or the bare broker), e.g. "0". */
  serverCpus?: string
  /** Node options for hr-relay, e.g. --max-old-space-size=256. */
  nodeOptions?: string[]
  /** A compiled build's relay/cli-entry.js to start hr-relay from instead of bin/hr-relay.cjs (bench/tools/ab-contention.ts). */
  compiledEntry?: string
  /** taskset CPU list for the generator and the receivers while they measure (restored after). */
  workerCpus?: string
  /** Extra environment for hr-relay (the unit's Environment=). */
  env?: Record<string, string>
}

/** The server's own stalls over a measured window: called after the warm-up and after the window's publishes. */
export interface StallProbe { before: () => Promise<void>, after: () => Promise<Stalls | undefined> }

/**
 * The server's main-thread stalls in a window, its scheduling (CPU of every
 * thread, wake-ups, preemptions, time runnable without a core; from /proc) and, for hr-relay, its
 * pipeline's submit → durable times.
 */
export interface Stalls { runtime: RuntimeWindow, sched?: SchedWindow, pipeline?: IngestHistogram }

/** Samples a process's threads before a window and gives what they did in it (undefined where /proc cannot be read). */
function schedProbe (pid: number): { before: () => Promise<void>, after: () => Promise<SchedWindow | undefined> } {
  let first: SchedSample | undefined
  const sample = async (): Promise<SchedSample | undefined> => await schedOf(pid).catch(() => undefined)
  return {
    async before () { first = await sample() },
    async after () {
      const last = await sample()
      return first === undefined || last === undefined ? undefined : schedBetween(first, last, ticksPerSecond(), String(pid))
    }
  }
}

/**
 * The receiving side's scheduling in a window (the viewers' process for hr-relay, the subscriber's for the
 * bare brokers): not the server, but its waits are in every latency figure, and they are not the same work
 * on both sides (a WebSocket per user against one MQTT connection).
 */
interface Window { report: PublishReport, delivery: Delivery, stalls?: Stalls, receiving?: SchedWindow }

/** A window's optional probe results, as optional fields (absent, not undefined: exactOptionalPropertyTypes). */
const probed = (stalls: Stalls | undefined, receiving: SchedWindow | undefined): { stalls?: Stalls, receiving?: SchedWindow } =>
  ({ ...(stalls === undefined ? {} : { stalls }), ...(receiving === undefined ? {} : { receiving }) })

/** hr-relay's stalls, from two scrapes of its /metrics. */
function metricsProbe (httpUrl: string, pid: number): StallProbe {
  const sched = schedProbe(pid)
  let first: { runtime?: RuntimeScrape, pipeline?: IngestHistogram } = {}
  const scrape = async (): Promise<typeof first> => {
    const res = await fetch(`${httpUrl}/metrics`)
    const text = res.status === 200 ? await res.text() : ''
    const runtime = parseRuntime(text, performance.now())
    const pipeline = parseIngestHistogram(text)
    return { ...(runtime === undefined ? {} : { runtime }), ...(pipeline === undefined ? {} : { pipeline }) }
  }
  return {
    async before () { first = await scrape(); await sched.before() },
    async after () {
      const s = await sched.after()
      const last = await scrape()
      if (first.runtime === undefined || last.runtime === undefined) return undefined
      const pipeline = first.pipeline === undefined || last.pipeline === undefined ? undefined : histogramBetween(first.pipeline, last.pipeline)
      return { runtime: runtimeBetween(first.runtime, last.runtime), ...(s === undefined ? {} : { sched: s }), ...(pipeline === undefined ? {} : { pipeline }) }
    }
  }
}

/** The bare broker's stalls, recorded in its worker. */
function workerProbe (broker: Worker): StallProbe {
  const sched = schedProbe(broker.pid)
  return {
    async before () { await broker.call('windowStart'); await sched.before() },
    async after () {
      const s = await sched.after()
      return { runtime: await broker.call<RuntimeWindow>('windowEnd'), ...(s === undefined ? {} : { sched: s }) }
    }
  }
}

async function measure (devices: Worker, receivers: Worker, rate: number, windowMs: number, placement: Placement = {}, probe?: StallProbe): Promise<Window> {
  const pinned = placement.workerCpus === undefined ? [] : [devices.pid, receivers.pid]
  for (const pid of pinned) await pinProcess(pid, placement.workerCpus as string)
  const hog = placement.hog === true ? startHog() : undefined
  const receiving = schedProbe(receivers.pid)
  try {
    // Warm-up (JIT, connection buffers), not recorded: a quarter of the window, at most a second.
    await devices.call('publish', { rate, durationMs: Math.min(1000, windowMs / 4), qos: 1, recordSends: false, measuredAt: 'clock', drainMs: 5000 })
    await probe?.before()
    await receiving.before()
    await receivers.call('start')
    const report = await devices.call<PublishReport>('publish', { rate, durationMs: windowMs, qos: 1, recordSends: true, measuredAt: 'clock', drainMs: 10_000 })
    const stalls = await probe?.after()
    const received = await receiving.after()
    // Stragglers: until every reading arrived, at most min(1.5 s, half the window).
    const [receipts] = await receiptsWhenComplete([receivers], report.sends.size, rs => deliveryOne(report.sends, rs[0] as Receipts).lost, Math.min(1500, windowMs / 2))
    return { report, delivery: deliveryOne(report.sends, receipts as Receipts), ...probed(stalls, received) }
  } finally {
    await hog?.stop()
    for (const pid of pinned) await pinProcess(pid, allCpus()).catch(() => {})
  }
}

export interface Measured { d: Delivery, report: PublishReport, stalls?: Stalls, receiving?: SchedWindow }

/** An open side of the comparison: its server, receivers and devices connected, windows measured on demand. */
export interface Side<W> {
  readonly pid: number
  /** Every process of the side: the server, its receivers and its generator. */
  readonly pids: readonly number[]
  /** One window of `windowMs` on the open connections, placed as given. */
  window (windowMs: number, placement?: Placement): Promise<W>
  close (): Promise<void>
}

const measured = (w: Window): Measured => ({ d: w.delivery, report: w.report, ...probed(w.stalls, w.receiving) })

/** hr-relay on a fresh copy of the fleet, one WebSocket viewer per user, N devices connected. */
export async function openHrRelay (ctx: Context, devices: Worker, n: number, placement: Placement = {}): Promise<Side<Measured>> {
  const f = await fleet(n, ctx.log)
  const dataDir = await freshCopy(f)
  const [server, viewers] = await bothOrNeither(
    startServer({
      dataDir,
      removeDataDir: true,
      ...(ctx.cpuProfileDir === undefined ? {} : { cpuProfileDir: ctx.cpuProfileDir }),
      ...(placement.serverCpus === undefined ? {} : { cpus: placement.serverCpus }),
      ...(placement.nodeOptions === undefined ? {} : { nodeOptions: placement.nodeOptions }),
      ...(placement.env === undefined ? {} : { env: placement.env }),
      ...(placement.compiledEntry === undefined ? {} : { compiledEntry: placement.compiledEntry })
    }),
    Worker.start('workers/ws-viewers.ts'))
  const close = async (): Promise<void> => { await devices.call('close').catch(() => {}); await viewers.stop(); await server.stop() }
  try {
    const port = requireMqtt(server)
    await openViewers(viewers, viewersFor(server.url, f.users.slice(0, n)))
    await devices.call('connect', port, f.devices.slice(0, n))
  } catch (err) {
    await close()
    throw err
  }
  const probe = metricsProbe(server.url, server.pid)
  return {
    pid: server.pid,
    pids: [server.pid, viewers.pid, devices.pid],
    async window (windowMs, at = placement) { return measured(await measure(devices, viewers, n, windowMs, at, probe)) },
    close
  }
}

/**
 * N devices through hr-relay: one window as placed; with `hogWindowMs`, a
 * second window on the same server and connections beside the CPU hog; with
 * `hogNice` too, a third beside the hog with every thread of the server at
 * that nice value (the unit's Nice=), when this user may set it.
 */
export async function throughHrRelay (ctx: Context, devices: Worker, n: number, windowMs: number, placement: Placement = {}, hogWindowMs?: number, hogNice?: number): Promise<Measured & { hogged?: Measured, niced?: Measured }> {
  const side = await openHrRelay(ctx, devices, n, placement)
  try {
    const first = await side.window(windowMs)
    let hogged: Measured | undefined
    if (hogWindowMs !== undefined) {
      ctx.log(`e2e-latency: ${n} devices through hr-relay beside a CPU hog`)
      hogged = await side.window(hogWindowMs, { ...placement, hog: true })
    }
    const niced = hogWindowMs !== undefined && hogNice !== undefined ? await nicedWindow(ctx, side, n, hogWindowMs, hogNice, placement) : undefined
    return { ...first, ...(hogged === undefined ? {} : { hogged }), ...(niced === undefined ? {} : { niced }) }
  } finally {
    await side.close()
  }
}

/** A window beside the hog with every thread of hr-relay at `nice` (the unit's Nice=); undefined when this user may not set it. */
async function nicedWindow (ctx: Context, side: Side<Measured>, n: number, windowMs: number, nice: number, placement: Placement = {}): Promise<Measured | undefined> {
  if (!await reniceProcess(side.pid, nice)) {
    ctx.log(`e2e-latency: not permitted to set nice ${nice}; no window at the unit's nice value`)
    return undefined
  }
  ctx.log(`e2e-latency: ${n} devices through hr-relay at nice ${nice} beside a CPU hog`)
  return await side.window(windowMs, { ...placement, hog: true })
}

export type RefDelivery = Delivery & { stalls?: Stalls, receiving?: SchedWindow }

const refDelivery = (w: Window): RefDelivery => ({ ...w.delivery, ...probed(w.stalls, w.receiving) })

/**
 * A bare Aedes broker with one MQTT subscriber on the device topics and N devices connected; `durable` makes it
 * bare Aedes + sync batch (workers/aedes-ref.ts: a LevelDB sync batch before each PUBACK and forward) with a
 * subscriber per device (workers/mqtt-subscriber.ts). `perBatch()` is readings per sync batch over the broker's life.
 */
export async function openAedes (devices: Worker, n: number, placement: Placement = {}, durable = false): Promise<Side<RefDelivery> & { perBatch (): Promise<number | undefined> }> {
  const [broker, sub] = await bothOrNeither(Worker.start('workers/aedes-ref.ts'), Worker.start('workers/mqtt-subscriber.ts'))
  const close = async (): Promise<void> => {
    if (placement.serverCpus !== undefined) await pinProcess(broker.pid, allCpus()).catch(() => {})
    await devices.call('close').catch(() => {}); await sub.stop(); await broker.stop()
  }
  try {
    const port = await broker.call<number>('start', { durable })
    if (placement.serverCpus !== undefined) await pinProcess(broker.pid, placement.serverCpus)
    const ids = Array.from({ length: n }, (_, i) => `ref${i}`)
    await sub.call('open', port, ids, durable)
    await devices.call('connect', port, ids.map(device_id => ({ device_id })))
  } catch (err) {
    await close()
    throw err
  }
  const probe = workerProbe(broker)
  return {
    pid: broker.pid,
    pids: [broker.pid, sub.pid, devices.pid],
    async window (windowMs, at = placement) { return refDelivery(await measure(devices, sub, n, windowMs, at, probe)) },
    async perBatch () {
      const { batches, stored } = await broker.call<{ batches: number, stored: number }>('counts')
      return durable && batches > 0 ? stored / batches : undefined
    },
    close
  }
}

/** N devices through bare Aedes (or bare Aedes + sync batch): one window as placed; with `hogWindowMs`, a second beside the hog. */
export async function throughAedes (devices: Worker, n: number, windowMs: number, placement: Placement = {}, hogWindowMs?: number, durable = false): Promise<RefDelivery & { hogged?: RefDelivery, perBatch?: number }> {
  const side = await openAedes(devices, n, placement, durable)
  try {
    const first = await side.window(windowMs)
    const hogged = hogWindowMs === undefined ? undefined : await side.window(hogWindowMs, { ...placement, hog: true })
    const perBatch = await side.perBatch()
    return { ...first, ...(hogged === undefined ? {} : { hogged }), ...(perBatch === undefined ? {} : { perBatch }) }
  } finally {
    await side.close()
  }
}

/**
 * One window of `side` with every process of the other open sides (`all` but `side`) stopped (SIGSTOP): their
 * timers (WebSocket pings, keep-alives) would otherwise run in the middle of it, as they did not when each side
 * had the machine to itself. Their sockets keep what arrives until they go on (SIGCONT).
 */
export async function alone<W> (side: Side<W>, all: ReadonlyArray<Side<unknown>>, windowMs: number, placement?: Placement): Promise<W> {
  const pids = all.filter(o => o !== side).flatMap(o => o.pids)
  await signalAll(pids, 'SIGSTOP')
  try {
    return await side.window(windowMs, placement)
  } finally {
    await signalAll(pids, 'SIGCONT')
  }
}

/** The contention rounds of one device count: each side's window beside the hog, per round. */
export interface Rounds { ours: Measured[], ref: RefDelivery[], durable: RefDelivery[], median: number, ratios: number[] }

/**
 * Contention in paired rounds: hr-relay, bare Aedes (and, given, bare Aedes + sync batch) all open, a window of
 * each beside the hog back to back, in an order that turns round every round (ABBA; A B C, C B A with three),
 * so all sides of a round see the machine as it is that half-minute, each with the others stopped; the round
 * whose p99 ratio (hr-relay against bare Aedes) is the median is the one reported (as latest-http does with its rounds).
 */
export async function contentionRounds (ctx: Context, sides: { ours: Side<Measured>, ref: Side<RefDelivery>, durable?: Side<RefDelivery> }, n: number, rounds: number, windowMs: number): Promise<Rounds> {
  const out: Rounds = { ours: [], ref: [], durable: [], median: 0, ratios: [] }
  const hogged: Placement = { hog: true }
  const { ours, ref, durable } = sides
  const all: Array<Side<unknown>> = durable === undefined ? [ours, ref] : [ours, ref, durable]
  const names = new Map<Side<unknown>, string>([[ours, 'hr-relay'], [ref, 'bare Aedes'], ...(durable === undefined ? [] : [[durable, 'bare Aedes + sync batch'] as [Side<unknown>, string]])])
  for (let r = 0; r < rounds; r++) {
    const order = r % 2 === 0 ? all : [...all].reverse()
    ctx.log(`e2e-latency: ${n} devices beside a CPU hog, round ${r + 1}/${rounds} (${order.map(o => names.get(o)).join(', then ')})`)
    for (const side of order) {
      if (side === ours) out.ours.push(await alone(ours, all, windowMs, hogged))
      else if (side === ref) out.ref.push(await alone(ref, all, windowMs, hogged))
      else if (durable !== undefined) out.durable.push(await alone(durable, all, windowMs, hogged))
    }
  }
  out.ratios = out.ours.map((m, i) => m.d.summary.p99 / (out.ref[i] as RefDelivery).summary.p99)
  const byRatio = out.ratios.map((x, i) => ({ x, i })).sort((a, b) => a.x - b.x)
  out.median = byRatio[Math.floor(byRatio.length / 2)]?.i ?? 0
  return out
}

/**
 * Where a tail comes from: how long each server's main thread was stalled in
 * the window (GC pauses per second; how late a 10 ms timer fired), and what it
 * asked of the scheduler per reading (CPU of every thread; wake-ups, each a
 * thread that blocked and must get a core again: beside a hog, a wait for it),
 * next to the reference's. No target: the figures explain the p99 rows above them.
 */
function stallFigures (what: string, ours: Stalls | undefined, ref: Stalls | undefined, refName: string, readings: { ours: number, ref: number }): Figure[] {
  if (ours === undefined) return []
  const perSecond = (s: Stalls): number => s.runtime.gcMs / s.runtime.seconds
  const refFigure = (value: number | undefined): { name: string, value: number } | undefined => value === undefined ? undefined : { name: refName, value }
  const figures = [
    figure(`main thread in GC pauses, ${what}`, perSecond(ours), 'ms/s', ref === undefined ? undefined : { name: refName, value: perSecond(ref) }),
    figure(`event-loop lateness p99 (10 ms timer), ${what}`, ours.runtime.loopLateP99Ms, 'ms', ref === undefined ? undefined : { name: refName, value: ref.runtime.loopLateP99Ms })
  ]
  if (ours.sched !== undefined && readings.ours > 0) {
    const refSched = ref?.sched !== undefined && readings.ref > 0 ? ref.sched : undefined
    figures.push(figure(`server CPU per reading (every thread), ${what}`, ours.sched.cpuUs / readings.ours, 'µs', refFigure(refSched === undefined ? undefined : refSched.cpuUs / readings.ref)))
    figures.push(figure(`thread wake-ups per reading (voluntary context switches, every thread), ${what}`, ours.sched.wakeups / readings.ours, 'wake-ups', refFigure(refSched === undefined ? undefined : refSched.wakeups / readings.ref)))
    // Time runnable but without a core (schedstat): beside a hog, what the wake-ups above cost in waiting.
    if (ours.sched.runDelayUs !== undefined) {
      figures.push(figure(`waiting for a core per reading (run-queue delay, every thread), ${what}`, ours.sched.runDelayUs / readings.ours, 'µs', refFigure(refSched?.runDelayUs === undefined ? undefined : refSched.runDelayUs / readings.ref)))
    }
    if (ours.sched.mainRunDelayUs !== undefined) {
      figures.push(figure(`main thread waiting for a core per reading, ${what}`, ours.sched.mainRunDelayUs / readings.ours, 'µs', refFigure(refSched?.mainRunDelayUs === undefined ? undefined : refSched.mainRunDelayUs / readings.ref)))
    }
  }
  return figures
}

/**
 * The receiving side (not the server): CPU and time without a core per reading of the process that records the
 * receipts, the viewers' (a WebSocket per user) against the bare broker's subscriber (one MQTT connection). Its
 * waits are in the latency rows of both sides; beside a hog, the side with more receiving work waits more. No target.
 */
function receivingFigures (what: string, ours: SchedWindow | undefined, ref: SchedWindow | undefined, refName: string, readings: { ours: number, ref: number }, receivers = 'viewers'): Figure[] {
  if (ours === undefined || readings.ours <= 0) return []
  const refValue = (v: number | undefined): { name: string, value: number } | undefined => ref === undefined || v === undefined || readings.ref <= 0 ? undefined : { name: refName, value: v / readings.ref }
  const figures = [figure(`receiving side (${receivers} against the reference's subscriber), CPU per reading, ${what}`, ours.cpuUs / readings.ours, 'µs', refValue(ref?.cpuUs))]
  if (ours.mainRunDelayUs !== undefined) {
    figures.push(figure(`receiving side, main thread waiting for a core per reading, ${what}`, ours.mainRunDelayUs / readings.ours, 'µs', refValue(ref?.mainRunDelayUs)))
  }
  return figures
}

/**
 * Bare Aedes + sync batch against bare Aedes (what storing before
 * acknowledging and publishing, and a connection per device, cost on this disk
 * and these cores, with the least work around them), and hr-relay against it
 * (what is hr-relay's own: authentication, decoding, rollups, the API). Its
 * receiving side (a subscriber per device) against bare Aedes's one subscriber:
 * so that a slower receiver is not read as a slower server. No target: they say
 * how much of a gap the job itself makes.
 */
function durableFigures (what: string, ours: Delivery, durable: RefDelivery, bare: RefDelivery, bareName = 'bare Aedes', bareReceiver = 'bare Aedes\'s subscriber'): Figure[] {
  const name = 'bare Aedes + sync batch'
  return [
    figure(`${name}: p50 publish→subscriber, ${what}`, durable.summary.p50, 'ms', { name: bareName, value: bare.summary.p50 }),
    figure(`${name}: p99 publish→subscriber, ${what}`, durable.summary.p99, 'ms', { name: bareName, value: bare.summary.p99 }),
    figure(`hr-relay p99 publish→WebSocket against ${name}, ${what}`, ours.summary.p99, 'ms', { name, value: durable.summary.p99 }),
    ...stallFigures(`${name}, ${what}`, durable.stalls, bare.stalls, bareName, { ours: durable.expected, ref: bare.expected }),
    ...receivingFigures(`${name}, ${what}`, durable.receiving, bare.receiving, bareReceiver, { ours: durable.expected, ref: bare.expected }, 'a subscriber per device')
  ]
}

/** The median of a few figures (the mean of the middle two for an even count). */
function medianOf (xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b)
  const mid = Math.floor(s.length / 2)
  return s.length === 0 ? Number.NaN : s.length % 2 === 1 ? s[mid] as number : ((s[mid - 1] as number) + (s[mid] as number)) / 2
}

/** hr-relay's stalls in one contention round, for the notes: what a round far above the others had that the others did not. */
function roundStalls (s: Stalls | undefined, readings: number): string {
  if (s === undefined) return ''
  const wait = s.sched?.mainRunDelayUs === undefined || readings <= 0 ? '' : `, main thread without a core ${fmt(s.sched.mainRunDelayUs / readings)} µs/reading`
  const pipeline = s.pipeline === undefined || s.pipeline.count === 0 ? '' : `, submit → durable mean ${fmt(s.pipeline.meanMs)} ms`
  return `; hr-relay GC ${fmt(s.runtime.gcMs)} ms in ${s.runtime.gcPauses} pauses, timer late at worst ${fmt(s.runtime.loopLateMaxMs)} ms${wait}${pipeline}`
}

function stallNote (what: string, ours: Stalls | undefined, ref: Stalls | undefined): string {
  const waited = (w: SchedWindow): string => w.runDelayUs === undefined ? '' : `, runnable without a core ${fmt(w.runDelayUs / 1000)} ms in all${w.mainRunDelayUs === undefined ? '' : ` (the main thread ${fmt(w.mainRunDelayUs / 1000)} ms)`}`
  const sched = (w: SchedWindow | undefined): string => w === undefined ? '' : `, ${w.threads} threads woken ${w.wakeups} times and preempted ${w.preemptions} times${waited(w)}`
  const one = (s: Stalls): string => `${s.runtime.gcPauses} GC ${s.runtime.gcPauses === 1 ? 'pause' : 'pauses'} in ${s.runtime.seconds.toFixed(1)} s (mean ${(s.runtime.gcMs / Math.max(1, s.runtime.gcPauses)).toFixed(1)} ms), a 10 ms timer late by p99 ${fmt(s.runtime.loopLateP99Ms)} ms and at worst ${fmt(s.runtime.loopLateMaxMs)} ms${sched(s.sched)}`
  if (ours === undefined) return `stalls, ${what}: hr-relay exports no GC or event-loop figures at /metrics`
  const p = ours.pipeline
  const pipeline = p === undefined || p.count === 0 ? '' : `; its pipeline, submit → durable (/metrics): ${p.count} readings, mean ${fmt(p.meanMs)} ms, p99 <= ${bucketPercentile(p, 99)} ms (bucket bound)`
  return `stalls, ${what}: hr-relay ${one(ours)}${pipeline}${ref === undefined ? '' : `; bare Aedes ${one(ref)}`}`
}

export const e2eLatency: Scenario = {
  name: 'e2e-latency',
  reference: 'bare Aedes broker, one MQTT subscriber on the device topics, same generator and devices (the contention rows: under the same CPU hog); full runs also bare Aedes + sync batch with a subscriber per device',
  fleetSize: quick => Math.max(...sizes(quick)),
  async run (ctx: Context): Promise<Outcome> {
    const windowMs = ctx.quick ? 1000 : 20_000
    // Contention: paired rounds beside one busy process per core, hr-relay and bare Aedes back to back in each.
    const rounds = ctx.quick ? 1 : 5
    const hogWindowMs = ctx.quick ? 500 : 5000
    const figures: Figure[] = []
    const contention: Figure[] = []
    const notes: string[] = []
    let lost = 0
    const ns = sizes(ctx.quick)
    // Full runs: a window beside the hog at the unit's Nice= (deploy/hr-relay.service), as the installed box runs.
    const nice = ctx.quick ? undefined : await serviceNice()
    // One generator per side: every side stays connected through the paired rounds.
    const started = await Promise.allSettled(Array.from({ length: ctx.quick ? 2 : 3 }, async () => await Worker.start('workers/mqtt-devices.ts')))
    const generators = started.flatMap(r => r.status === 'fulfilled' ? [r.value] : [])
    const failed = started.find((r): r is PromiseRejectedResult => r.status === 'rejected')
    if (failed !== undefined) {
      for (const g of generators) await g.stop()
      throw failed.reason
    }
    const [devices, refDevices, syncDevices] = generators as [Worker, Worker, Worker | undefined]
    try {
      for (const n of ns) {
        let first: Measured
        let ref: RefDelivery
        let paired: Rounds
        let niced: Measured | undefined
        let durable: (RefDelivery & { hogged?: RefDelivery, perBatch?: number }) | undefined
        const ours = await openHrRelay(ctx, devices, n)
        try {
          const bare = await openAedes(refDevices, n)
          try {
            // Full runs: bare Aedes + sync batch, the least work of a relay that stores before it acknowledges and
            // publishes to each device's own subscriber.
            const sync = syncDevices === undefined ? undefined : await openAedes(syncDevices, n, {}, true)
            try {
              // Every window with the other sides stopped (their timers would run in it).
              const all: Array<Side<unknown>> = sync === undefined ? [ours, bare] : [ours, bare, sync]
              ctx.log(`e2e-latency: ${n} devices through hr-relay`)
              first = await alone(ours, all, windowMs)
              ctx.log(`e2e-latency: ${n} devices through bare Aedes`)
              ref = await alone(bare, all, windowMs)
              let syncFirst: RefDelivery | undefined
              if (sync !== undefined) {
                ctx.log(`e2e-latency: ${n} devices through bare Aedes + sync batch (a LevelDB sync batch before each PUBACK, a subscriber per device)`)
                syncFirst = await alone(sync, all, windowMs)
              }
              paired = await contentionRounds(ctx, { ours, ref: bare, ...(sync === undefined ? {} : { durable: sync }) }, n, rounds, hogWindowMs)
              const perBatch = await sync?.perBatch()
              const syncHogged = paired.durable[paired.median]
              if (syncFirst !== undefined) durable = { ...syncFirst, ...(syncHogged === undefined ? {} : { hogged: syncHogged }), ...(perBatch === undefined ? {} : { perBatch }) }
            } finally {
              await sync?.close()
            }
          } finally {
            await bare.close()
          }
          niced = nice === undefined ? undefined : await nicedWindow(ctx, ours, n, hogWindowMs, nice)
        } finally {
          await ours.close()
        }
        const { d, report } = first
        const gym = n === ns[0]
        const refName = 'bare Aedes'
        figures.push(figure(`p50 publish→WebSocket, ${n} devices`, d.summary.p50, 'ms', { name: refName, value: ref.summary.p50 }))
        figures.push(figure(`p99 publish→WebSocket, ${n} devices`, d.summary.p99, 'ms', { name: refName, value: ref.summary.p99 },
          gym ? p99Target(d.summary.p99, GYM_QUIET_P99_MS) : undefined))
        figures.push(figure(`max publish→WebSocket, ${n} devices`, d.summary.max, 'ms', { name: refName, value: ref.summary.max }))
        figures.push(figure(`readings lost, ${n} devices`, d.lost, 'readings', undefined, { text: 'zero lost', met: d.lost === 0 }))
        figures.push(...stallFigures(`${n} devices`, first.stalls, ref.stalls, refName, { ours: d.expected, ref: ref.expected }))
        figures.push(...receivingFigures(`${n} devices`, first.receiving, ref.receiving, `${refName}'s subscriber`, { ours: d.expected, ref: ref.expected }))
        if (durable !== undefined) figures.push(...durableFigures(`${n} devices`, d, durable, ref))
        lost += d.lost
        notes.push(`${n} devices: ${d.expected} readings sent in ${windowMs / 1000} s, ${d.received} received, ${report.unacked} without PUBACK, ${report.disconnects} disconnects; generator lag max ${report.maxLagMs.toFixed(1)} ms; reference lost ${ref.lost}`)
        notes.push(stallNote(`${n} devices`, first.stalls, ref.stalls))
        if (durable !== undefined) notes.push(`bare Aedes + sync batch (a subscriber per device), ${n} devices: ${durable.expected} readings sent in ${windowMs / 1000} s, lost ${durable.lost} (beside the hog, over the rounds, ${paired.durable.reduce((sum, r) => sum + r.lost, 0)}); ${durable.perBatch === undefined ? 'no sync batch counted' : `${durable.perBatch.toFixed(2)} readings per sync batch over the server's life`}`)
        // Contention: the target is on the median of hr-relay's p99 over the rounds; every other figure is of the round
        // whose p99 ratio against bare Aedes is the median (its stalls explain it); the rounds are in the notes.
        const hogged = paired.ours[paired.median] as Measured
        const refHogged = paired.ref[paired.median] as RefDelivery
        const h = hogged.d
        const hogRefName = 'bare Aedes, same hog'
        const hogReceiverName = 'bare Aedes\'s subscriber, same hog'
        contention.push(figure(`contention: p50 publish→WebSocket beside a CPU hog, ${n} devices`, h.summary.p50, 'ms', { name: hogRefName, value: refHogged.summary.p50 }))
        const p99s = medianOf(paired.ours.map(m => m.d.summary.p99))
        contention.push(figure(`contention: p99 publish→WebSocket beside a CPU hog, the median of ${rounds} round${rounds === 1 ? '' : 's'}, ${n} devices`, p99s, 'ms', { name: `${hogRefName}, the median of its rounds`, value: medianOf(paired.ref.map(r => r.summary.p99)) },
          gym ? p99Target(p99s, GYM_HOG_P99_MS) : undefined))
        contention.push(figure(`contention: p99 publish→WebSocket beside a CPU hog, the round of the median ratio, ${n} devices`, h.summary.p99, 'ms', { name: hogRefName, value: refHogged.summary.p99 }))
        const roundsLost = paired.ours.reduce((sum, m) => sum + m.d.lost, 0)
        contention.push(figure(`contention: readings lost beside a CPU hog, ${n} devices`, roundsLost, 'readings', undefined, { text: 'zero lost', met: roundsLost === 0 }))
        contention.push(...stallFigures(`contention, ${n} devices`, hogged.stalls, refHogged.stalls, hogRefName, { ours: h.expected, ref: refHogged.expected }))
        contention.push(...receivingFigures(`contention, ${n} devices`, hogged.receiving, refHogged.receiving, hogReceiverName, { ours: h.expected, ref: refHogged.expected }))
        if (durable?.hogged !== undefined) contention.push(...durableFigures(`beside a CPU hog, ${n} devices`, h, durable.hogged, refHogged, hogRefName, hogReceiverName))
        if (niced !== undefined) {
          // The installed box: hr-relay at the unit's Nice= beside the same hog, against itself at nice 0 (the
          // median round). No target (the target's reference, bare Aedes, ran at nice 0).
          const what = `contention at the unit's Nice=${String(nice)}: p99 publish→WebSocket beside a CPU hog, ${n} devices`
          contention.push(figure(what, niced.d.summary.p99, 'ms', { name: 'hr-relay at nice 0, same hog', value: h.summary.p99 }))
          contention.push(figure(`contention at the unit's Nice=${String(nice)}: readings lost, ${n} devices`, niced.d.lost, 'readings', undefined, { text: 'zero lost', met: niced.d.lost === 0 }))
          lost += niced.d.lost
          notes.push(`contention at the unit's Nice=${String(nice)}, ${n} devices: every thread of hr-relay reniced, a ${hogWindowMs / 1000} s window beside the same hog after the rounds; p50 ${fmt(niced.d.summary.p50)} ms, ${niced.d.expected} readings sent, ${niced.d.received} received (bare Aedes at nice 0 under the hog, median round: p99 ${fmt(refHogged.summary.p99)} ms)`)
          notes.push(stallNote(`contention at the unit's Nice=${String(nice)}, ${n} devices`, niced.stalls, undefined))
        }
        lost += roundsLost
        const sent = paired.ours.reduce((sum, m) => sum + m.d.expected, 0)
        const received = paired.ours.reduce((sum, m) => sum + m.d.received, 0)
        const unacked = paired.ours.reduce((sum, m) => sum + m.report.unacked, 0)
        const refLost = paired.ref.reduce((sum, r) => sum + r.lost, 0)
        const syncP99 = (i: number): string => paired.durable[i] === undefined ? '' : ` / ${fmt((paired.durable[i] as RefDelivery).summary.p99)}`
        const roundText = paired.ours.map((m, i) => `${fmt(m.d.summary.p99)} / ${fmt((paired.ref[i] as RefDelivery).summary.p99)}${syncP99(i)} ms (${(paired.ratios[i] as number).toFixed(2)}x${roundStalls(m.stalls, m.d.expected)})`).join(', ')
        notes.push(`contention, ${n} devices: ${rounds} paired round(s), each a ${hogWindowMs / 1000} s window of hr-relay, one of bare Aedes${paired.durable.length > 0 ? ' and one of bare Aedes + sync batch' : ''} back to back (the order turned round every round), every server open on its own connections throughout, the other sides' processes stopped (SIGSTOP) during each window; ${availableParallelism()} busy processes (node -e 'for(;;){}', one per core) from each window's warm-up to its stragglers; hr-relay / bare Aedes${paired.durable.length > 0 ? ' / bare Aedes + sync batch' : ''} p99 per round: ${roundText}; the median round (${paired.median + 1}) is reported; over all rounds ${sent} readings sent to hr-relay, ${received} received, ${unacked} without PUBACK, reference lost ${refLost}`)
        notes.push(stallNote(`contention, ${n} devices (the median round)`, hogged.stalls, refHogged.stalls))
      }
    } finally {
      for (const g of generators) await g.stop()
    }
    figures.push(...contention)
    figures.push(await syncFigure(ctx.quick ? 100 : 500))
    return { figures, lost, notes }
  }
}
