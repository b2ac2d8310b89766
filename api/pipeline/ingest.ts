// The one ingest pipeline every source hands readings to, written as named
// steps (api/pipeline/steps.ts, in the manner of aedes' publishFuncsQoS):
//   validate → resolveOwner → paused → filter → plan → write → acknowledge → publish
// The reading steps run per reading (`paused` withholds the readings of a member
// who paused ingestion: acknowledged, never stored nor published, so no output
// sees them); then readings that arrive while a write is
// in flight (or within the same event-loop turn) form one group, written as a
// single LevelDB batch made durable once per group: by the store's write-ahead
// journal (api/store/journal.ts, one O_DSYNC write) or, without one, by a sync
// batch (one fsync). `submit` resolves only after that write, so a source may
// acknowledge its sender (HTTP 200, MQTT PUBACK) and the reading survives a
// kill -9 or a power cut. Stored readings are then published to the live hub.
// Double buffering: while a group's batch is being written, the readings that
// arrive are planned on top of it as they come (no store reads; a reading
// that needs one makes the next group be planned after the write instead), so
// the next batch starts as soon as the previous one is durable. Batches are
// written one at a time, in order, and acknowledged in that order. A small next
// group is written after the durable group is acknowledged and published (its
// journal record is written on this thread, and the acknowledgement would wait
// for it); a large one is handed to the thread pool first. At a high rate, while
// other processes keep the event loop's thread waiting for cores, the writer
// then yields one turn of the event loop before a small next group, so that the
// readings already in the sockets join it, or, at a saturating rate, waits 2 ms
// for more (Linger): fewer groups, fewer wake-ups.
import type { Logger } from 'pino'
import type { AtomicBatch, ReadingPlan as Plan, ReadingStore } from '../store/types.ts'
import type { Hub } from '../hub.ts'
import { DROP_REASONS, type DropReason, type Ingest, type IngestResult, type Reading } from './reading.ts'
import { measuredAtWindow } from '../../firmware-protocol/reading-contract.ts'
import {
  READING_STEPS, acknowledge, plan, planOnTop, publish, write,
  type Group, type GroupEnv, type IngestCounters, type Pending, type ProfileCheck, type ReadingCtx, type ReadingEnv, type ReadingStep, type ResolveOwner, type Writing
} from './steps.ts'
import { apiErrorMessage } from '../error-codes.ts'
import { CoreWait } from '../core-wait.ts'
import { WindowCount } from '../window-count.ts'

export type { IngestCounters, ResolveOwner }

export interface PipelineOptions {
  store: AtomicBatch
  readings: ReadingStore
  hub: Hub
  /** Checks that a profile exists (Users.get) and, synchronously from memory, whether its ingestion is paused. */
  users: ProfileCheck
  /** Device pairing: the owner of a device id, or undefined (reading dropped as 'unpaired'). */
  resolveOwner?: ResolveOwner
  retention: { rawDays: number, rollupDays: number }
  log?: Logger
  now?: () => number
  /**
   * data.max_clock_skew_ms: a reading at most this far ahead of now is stored at now (and counted in
   * clock_skew_corrected); one further ahead is refused as out_of_range (default: the reading contract's 30 s).
   */
  maxClockSkewMs?: number
  /** Readings per batch at most (default 5000). */
  maxGroup?: number
  /** Background pruning period (default 10 minutes; 0 turns the timer off). */
  pruneIntervalMs?: number
  /** How the writer goes on after a durable group: which next group waits for its acknowledgement, and when it yields (see Linger; tests set it). */
  linger?: Partial<Linger>
}

/**
 * How the writer goes on after a group is durable. A small next group (fewer than `below` readings) is written only
 * after the durable one is acknowledged and published: its journal record is an O_DSYNC write on the event loop's
 * thread, which the acknowledgement would otherwise wait for. A larger one is written first: its record and its
 * LevelDB batch go to the thread pool, and the acknowledgement overlaps them.
 *
 * The linger: while readings arrive fast and other processes keep the event loop's thread waiting for a core, the
 * writer then yields one turn of the event loop before a small next group, so that the readings whose packets are
 * already in the sockets join it instead of waiting for the group after. Each group costs the event loop wake-ups
 * (the journal's O_DSYNC write sleeps about twice, LevelDB's pool job wakes it once), and beside a busy process
 * every wake-up may wait for a core, up to a scheduler tick: fewer, larger groups wait fewer times (bench/README.md,
 * "What changed later on 2026-11-28"). At 2,000 readings a second a timed wait (2 ms) left the tail where the turn
 * leaves it and held every reading back for it (p50 2.9 against 1.0 ms beside a busy process); at a rate that
 * saturates the box (10,000 readings a second and more, where an acknowledgement takes tens of milliseconds
 * anyway) the writer waits `ms` instead, and the larger groups it makes carry more readings a second on one core.
 */
export interface Linger {
  /** Readings per second (the last full second's) from which the writer may linger. */
  fromPerSecond: number
  /** The share of the last sample's wall time that the event loop's thread spent waiting for a core, from which it lingers. */
  waitShare: number
  /** A next group of fewer readings than this is written after the acknowledgement, and is worth lingering for. */
  below: number
  /** Readings per second (the last full second's) from which the linger is a wait of `ms` instead of one turn. */
  timedFromPerSecond: number
  /** How long the writer waits at such a rate (ms). */
  ms: number
  /** How often the share is sampled (ms). */
  sampleMs: number
  /** The thread's wait for a core so far (ms; tests replace it). */
  coreWaitMs: () => number
  /** Waits `ms`, or one turn of the event loop for 0 (tests replace it). */
  wait: (ms: number) => Promise<void>
}

const coreWait = new CoreWait()
export const DEFAULT_LINGER: Readonly<Linger> = Object.freeze({
  fromPerSecond: 1000,
  waitShare: 0.2,
  below: 32,
  timedFromPerSecond: 10_000,
  ms: 2,
  sampleMs: 100,
  coreWaitMs: () => coreWait.ms(),
  wait: async (ms: number) => { await new Promise(resolve => { if (ms > 0) setTimeout(resolve, ms); else setImmediate(resolve) }) }
})

/** Write cycles before the writer lets a queued prune step run. */
const MAX_CYCLES = 200

export class PipelineStoppedError extends Error {
  readonly code = 'HR_PIPELINE_STOPPED'
  constructor () { super(apiErrorMessage('HR_PIPELINE_STOPPED')); this.name = 'PipelineStoppedError' }
}

export class Pipeline implements Ingest {
  readonly counters: IngestCounters = {
    received: 0, stored: 0, batches: 0, failed_batches: 0, clock_skew_corrected: {},
    dropped: Object.fromEntries(DROP_REASONS.map(r => [r, 0])) as Record<DropReason, number>
  }

  private readonly env: ReadingEnv
  private readonly groupEnv: GroupEnv
  private readonly now: () => number
  private pending: Pending[] = []
  private next: Group = { items: [], plan: undefined }
  private scheduled = false
  private writing = false
  private inflight: Writing | undefined
  private wake: (() => void) | undefined
  private stopped = false
  private chain: Promise<void> = Promise.resolve()
  private pruneTimer: NodeJS.Timeout | undefined
  private pruning = false
  private readonly linger: Readonly<Linger>
  /** Readings written per second (Linger.fromPerSecond). */
  private readonly rate = new WindowCount()
  /** The last sample of the thread's wait for a core, and whether it said to linger. */
  private readonly contention = { at: 0, waitMs: 0, busy: false }
  /** Groups written after a linger (tests and /metrics-free diagnostics). */
  lingered = 0

  constructor (private readonly o: PipelineOptions) {
    this.now = o.now ?? Date.now
    this.env = {
      users: o.users,
      resolveOwner: o.resolveOwner ?? (() => undefined),
      now: this.now,
      window: now => measuredAtWindow({ now, rawRetentionDays: o.retention.rawDays, ...(o.maxClockSkewMs === undefined ? {} : { maxClockSkewMs: o.maxClockSkewMs }) }),
      counters: this.counters,
      knownProfiles: new Set(),
      lastAccepted: new Map()
    }
    this.groupEnv = { store: o.store, readings: o.readings, hub: o.hub, counters: this.counters, log: o.log }
    this.linger = { ...DEFAULT_LINGER, ...o.linger }
  }

  /** Whether to linger before the next group: readings arrive fast and the thread waits for cores (Linger). */
  private contended (written: number): boolean {
    const l = this.linger
    if (this.rate.add(written, 1000).last < l.fromPerSecond) return false
    const now = performance.now()
    const c = this.contention
    if (now - c.at >= l.sampleMs) {
      const waitMs = l.coreWaitMs()
      c.busy = c.at !== 0 && (waitMs - c.waitMs) / (now - c.at) >= l.waitShare
      c.at = now
      c.waitMs = waitMs
    }
    return c.busy
  }

  /** The device registry plugs in here (default: no pairing, device-only readings are dropped). */
  setResolveOwner (fn: ResolveOwner): void { this.env.resolveOwner = fn }

  /**
   * Runs the reading steps and resolves once the reading's group is durable. Not an async function: a reading whose
   * steps all answer synchronously (the usual case) costs one promise, the one it waits on for its group.
   */
  submit (reading: Reading): Promise<IngestResult> {
    if (this.stopped) return Promise.reject(new PipelineStoppedError())
    this.counters.received++
    return this.steps({ reading }, 0)
  }

  /** The reading steps from `from` on; continues after a step that had to wait. */
  private steps (ctx: ReadingCtx, from: number): Promise<IngestResult> {
    for (let i = from; i < READING_STEPS.length; i++) {
      const step = READING_STEPS[i] as ReadingStep
      let answer: ReturnType<ReadingStep>
      try {
        answer = step(this.env, ctx)
      } catch (err) {
        return this.stepFailed(step, err)
      }
      if (answer instanceof Promise) {
        return answer.then(reason => reason === undefined ? this.steps(ctx, i + 1) : this.drop(reason), err => this.stepFailed(step, err))
      }
      if (answer !== undefined) return Promise.resolve(this.drop(answer))
    }
    const stored = ctx.stored
    if (stored === undefined) return Promise.resolve(this.drop('invalid'))
    return new Promise<IngestResult>((resolve, reject) => {
      this.pending.push({ reading: stored, resolve, reject })
      this.schedule()
    })
  }

  private stepFailed (step: ReadingStep, err: unknown): Promise<never> {
    this.o.log?.error({ err, step: step.name }, 'ingest step failed')
    return Promise.reject(err)
  }

  private drop (reason: DropReason): IngestResult {
    this.counters.dropped[reason]++
    return { status: 'dropped', reason }
  }

  // group: readings arriving during a write, or in the same turn, go together.
  private schedule (): void {
    if (this.scheduled) return
    this.scheduled = true
    setImmediate(() => {
      this.scheduled = false
      if (this.writing) this.wake?.()
      else void this.flush()
    })
  }

  /** Runs fn after every earlier write or prune step (one at a time). */
  exclusive<T> (fn: () => Promise<T>): Promise<T> {
    const run = this.chain.then(fn)
    this.chain = run.then(() => undefined, () => undefined)
    return run
  }

  private async flush (): Promise<void> {
    if (this.writing || (this.pending.length === 0 && this.next.items.length === 0)) return
    this.writing = true
    try {
      await this.exclusive(async () => { await this.writeLoop() })
    } finally {
      this.writing = false
      if (this.pending.length > 0 || this.next.items.length > 0) this.schedule()
    }
  }

  /**
   * One writer: starts a group's batch, gathers and plans the next group
   * while it is written, settles it, starts the next. Returns when nothing is
   * left (or after MAX_CYCLES, so a prune step can run in between).
   */
  private async writeLoop (): Promise<void> {
    for (let cycles = 0; ;) {
      await this.gather()
      if (this.inflight === undefined) {
        if (this.next.items.length === 0 || cycles >= MAX_CYCLES) {
          // A plan made on state a prune step may change is made again.
          this.next.plan = undefined
          return
        }
        await this.startWrite()
        cycles++
        continue
      }
      const writing = this.inflight
      const arrived = new Promise<void>(resolve => { this.wake = resolve })
      const settled = await Promise.race([writing.done.then(() => true, () => true), arrived.then(() => false)])
      this.wake = undefined
      if (!settled) continue
      this.inflight = undefined
      let ok = true
      try {
        await writing.done
        writing.plan.commit()
      } catch (err) {
        ok = false
        this.failed(writing.group, err)
      }
      if (!ok) continue
      const busy = this.contended(writing.group.items.length)
      if (this.next.items.length + this.pending.length < this.linger.below) {
        // A small next group: this one is acknowledged and published before it is written (Linger).
        acknowledge(this.groupEnv, writing)
        publish(this.groupEnv, writing)
        if (busy) {
          await this.linger.wait(this.rate.last >= this.linger.timedFromPerSecond ? this.linger.ms : 0)
          this.lingered++
        }
        continue
      }
      // A large next group goes to the pool before this one is acknowledged and published.
      if (this.next.items.length > 0 && cycles < MAX_CYCLES) { await this.startWrite(); cycles++ }
      acknowledge(this.groupEnv, writing)
      publish(this.groupEnv, writing)
    }
  }

  /** Moves pending readings into the next group, planned on top of the batch in flight when possible. */
  private async gather (): Promise<void> {
    const room = (this.o.maxGroup ?? 5000) - this.next.items.length
    if (room <= 0 || this.pending.length === 0) return
    const items = this.pending.splice(0, room)
    const next = this.next
    const plannable = next.items.length === 0 || next.plan !== undefined
    for (const it of items) next.items.push(it)
    const base = next.plan ?? this.inflight?.plan
    if (!plannable || base === undefined) { next.plan = undefined; return }
    const more = await planOnTop(this.groupEnv, items, base)
    if (more === undefined) next.plan = undefined
    else if (next.plan === undefined) next.plan = more
    else next.plan.absorb(more)
  }

  private async startWrite (): Promise<void> {
    const group = this.next
    this.next = { items: [], plan: undefined }
    let planned: Plan
    try {
      planned = await plan(this.groupEnv, group)
    } catch (err) {
      this.failed(group, err)
      return
    }
    this.inflight = write(this.groupEnv, group, planned)
  }

  private failed (group: Group, err: unknown): void {
    this.counters.failed_batches++
    this.o.log?.error({ err, readings: group.items.length }, 'writing a group of readings failed; nothing of it was stored')
    // The caches may hold what a plan on top of this group assumed: forget both.
    this.o.readings.resetCaches()
    this.next.plan = undefined
    for (const g of group.items) g.reject(err)
  }

  start (): void {
    const every = this.o.pruneIntervalMs ?? 600_000
    if (every <= 0 || this.pruneTimer !== undefined) return
    this.pruneTimer = setInterval(() => { void this.pruneNow().catch(err => this.o.log?.error({ err }, 'pruning failed')) }, every)
    this.pruneTimer.unref()
  }

  /** Deletes readings and rollups past retention in bounded steps; returns how many keys were deleted. */
  async pruneNow (limitPerStep = 1000): Promise<number> {
    if (this.pruning) return 0
    this.pruning = true
    let total = 0
    try {
      for (;;) {
        const n = await this.exclusive(async () => await this.o.readings.prune(this.now(), this.o.retention, limitPerStep))
        total += n
        if (n < limitPerStep || this.stopped) break
        await new Promise(resolve => setImmediate(resolve))
      }
    } finally {
      this.pruning = false
    }
    if (total > 0) this.o.log?.info({ deleted: total }, 'pruned readings past retention')
    return total
  }

  /** Writes what is pending, then refuses new readings. */
  async stop (): Promise<void> {
    this.stopped = true
    if (this.pruneTimer !== undefined) { clearInterval(this.pruneTimer); this.pruneTimer = undefined }
    while (this.pending.length > 0 || this.next.items.length > 0 || this.writing || this.scheduled) {
      await new Promise(resolve => setTimeout(resolve, 5))
    }
    await this.exclusive(async () => undefined)
  }
}
