// The one ingest pipeline every source hands readings to, written as named
// steps (api/pipeline/steps.ts, in the manner of aedes' publishFuncsQoS):
//   per reading: validate → resolveOwner → paused → filter
//   per group:   plan → append → acknowledge → publish
// `paused` withholds the readings of a member who paused ingestion
// (acknowledged, never stored nor published). The readings that pass wait for
// the writer: readings that arrive in the same event-loop turn, or while a
// group is being written, form the next group. `append` hands a group to the
// store's reading log (api/store/reading-log.ts), which resolves once the whole
// group is durable; only then are its readings acknowledged (`submit`
// resolves, so a source may answer HTTP 200 or an MQTT PUBACK) and published
// to the live hub. Groups are written one at a time and acknowledged in the
// order they were written; a group whose write fails rejects every one of its
// readings, and none of them is acknowledged.
// Double buffering: while a group is being written, the readings that arrive
// are planned on top of it (from memory; a reading that needs a store read
// makes the next group be planned after the write instead), so that the next
// group's write starts as soon as the previous one is durable, before that
// one's readings are acknowledged and published.
import type { Logger } from 'pino'
import type { ReadingPlan as Plan, ReadingStore } from '../store/types.ts'
import type { ReadingLog } from '../store/reading-log.ts'
import { storageFailure } from '../store/db.ts'
import type { Hub } from '../hub.ts'
import { DROP_REASONS, type DropReason, type Ingest, type IngestResult, type Reading } from './reading.ts'
import { measuredAtWindow } from '../../firmware-protocol/reading-contract.ts'
import {
  READING_STEPS, acknowledge, append, plan, planOnTop, publish,
  type Group, type GroupEnv, type IngestCounters, type Pending, type ProfileCheck, type ReadingCtx, type ReadingEnv, type ReadingStep, type ResolveOwner, type Writing
} from './steps.ts'
import { apiErrorMessage } from '../error-codes.ts'

export type { IngestCounters, ResolveOwner }

export interface PipelineOptions {
  /** Where each group of readings is written, durably (the store's reading log). */
  readingLog: ReadingLog
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
  /** Readings per group at most (default 5000). */
  maxGroup?: number
  /** Background pruning period (default 10 minutes; 0 turns the timer off). */
  pruneIntervalMs?: number
  /** privacy.require_consent and privacy.notice_version: readings of members without consent are refused. */
  consent?: ConsentPolicy
  /**
   * Resolves once the store is open again after a rewrite (Store.settled): a step whose store read failed because
   * the rewrite had closed it runs again then, instead of failing its reading.
   */
  storeSettled?: () => Promise<void>
}

/** Whether readings need their member's consent to the privacy notice, and to which version of it. */
export interface ConsentPolicy { required: boolean, noticeVersion: string }

/** How a reading's promise is settled. */
type Settle = Pick<Pending, 'resolve' | 'reject'>

/** Write cycles before the writer lets a queued prune step run. */
const MAX_CYCLES = 200

export class PipelineStoppedError extends Error {
  readonly code = 'HR_PIPELINE_STOPPED'
  constructor () { super(apiErrorMessage('HR_PIPELINE_STOPPED')); this.name = 'PipelineStoppedError' }
}

export class Pipeline implements Ingest {
  readonly counters: IngestCounters = {
    received: 0, stored: 0, batches: 0, failed_groups: 0, clock_skew_corrected: {},
    dropped: Object.fromEntries(DROP_REASONS.map(r => [r, 0])) as Record<DropReason, number>
  }

  private readonly env: ReadingEnv
  private readonly groupEnv: GroupEnv
  private readonly now: () => number
  private pending: Pending[] = []
  private next: Group = { items: [], plan: undefined }
  private scheduled = false
  /** The writer's run (write cycles until nothing is left), while it runs. */
  private writing: Promise<void> | undefined
  private inflight: Writing | undefined
  private wake: (() => void) | undefined
  private stopped = false
  /** Set once stop() has written everything: a reading that finishes its steps after that is refused. */
  private closed = false
  private chain: Promise<void> = Promise.resolve()
  private pruneTimer: NodeJS.Timeout | undefined
  private pruning = false
  /** Members erased while the service runs: a reading of theirs still on its way is refused, never written. */
  private readonly erased = new Set<string>()

  constructor (private readonly o: PipelineOptions) {
    this.now = o.now ?? Date.now
    this.env = {
      users: o.users,
      resolveOwner: o.resolveOwner ?? (() => undefined),
      now: this.now,
      window: now => measuredAtWindow({ now, rawRetentionDays: o.retention.rawDays, ...(o.maxClockSkewMs === undefined ? {} : { maxClockSkewMs: o.maxClockSkewMs }) }),
      counters: this.counters,
      knownProfiles: new Set(),
      lastAccepted: new Map(),
      consentRequired: () => o.consent?.required === true ? o.consent.noticeVersion : undefined
    }
    this.groupEnv = { readingLog: o.readingLog, readings: o.readings, hub: o.hub, counters: this.counters, log: o.log }
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
    return new Promise<IngestResult>((resolve, reject) => { this.steps({ reading }, 0, { resolve, reject }) })
  }

  /**
   * The reading steps from `from` on; continues after a step that had to wait. The reading's own promise is settled
   * directly (a drop, a failed step, or its group's acknowledgement), never through a chain of promises, so that
   * readings are acknowledged in the order their group lists them.
   */
  private steps (ctx: ReadingCtx, from: number, settle: Settle): void {
    for (let i = from; i < READING_STEPS.length; i++) {
      const step = READING_STEPS[i] as ReadingStep
      let answer: ReturnType<ReadingStep>
      try {
        answer = step(this.env, ctx)
      } catch (err) {
        this.stepFailed(ctx, i, err, settle)
        return
      }
      if (answer instanceof Promise) {
        answer.then(reason => { if (reason === undefined) this.steps(ctx, i + 1, settle); else settle.resolve(this.drop(reason)) }, err => { this.stepFailed(ctx, i, err, settle) })
        return
      }
      if (answer !== undefined) { settle.resolve(this.drop(answer)); return }
    }
    const stored = ctx.stored
    if (stored === undefined) { settle.resolve(this.drop('invalid')); return }
    if (this.closed) { settle.reject(new PipelineStoppedError()); return }
    this.pending.push({ reading: stored, resolve: settle.resolve, reject: settle.reject })
    this.schedule()
  }

  private stepFailed (ctx: ReadingCtx, i: number, err: unknown, settle: Settle): void {
    const step = READING_STEPS[i] as ReadingStep
    // The store closed by a rewrite for a moment: the step runs again once it is open (a few retries at most).
    if (storageFailure(err) === 'busy' && this.o.storeSettled !== undefined && (ctx.busyRetries ?? 0) < 20) {
      ctx.busyRetries = (ctx.busyRetries ?? 0) + 1
      this.o.storeSettled().then(() => { this.steps(ctx, i, settle) }, (e: unknown) => { settle.reject(e) })
      return
    }
    this.o.log?.error({ err, step: step.name }, 'ingest step failed')
    settle.reject(err)
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
      if (this.writing !== undefined) this.wake?.()
      else this.startWriter()
    })
  }

  private startWriter (): void {
    if (this.writing !== undefined || (this.pending.length === 0 && this.next.items.length === 0)) return
    this.writing = this.exclusive(async () => { await this.writeLoop() }).finally(() => {
      this.writing = undefined
      if (this.pending.length > 0 || this.next.items.length > 0) this.schedule()
    })
  }

  /**
   * A member's erasure: from now on their readings are refused ('unknown_profile'), and `erase` runs while no group
   * is being written. A reading of theirs that passed the steps before is refused when its group is gathered, so
   * nothing of theirs is written after `erase`, and nothing of theirs is acknowledged and then lost.
   */
  async eraseProfile<T> (profileId: string, erase: () => Promise<T>): Promise<T> {
    this.erased.add(profileId)
    this.env.knownProfiles.delete(profileId)
    this.env.lastAccepted.delete(profileId)
    return await this.exclusive(erase)
  }

  /** The items without the readings of erased members, which are answered as refused. */
  private withoutErased (items: Pending[]): Pending[] {
    if (this.erased.size === 0) return items
    return items.filter(p => {
      if (!this.erased.has(p.reading.profile_id)) return true
      p.resolve(this.drop('unknown_profile'))
      return false
    })
  }

  /** Runs fn after every earlier write or prune step (one at a time). */
  exclusive<T> (fn: () => Promise<T>): Promise<T> {
    const run = this.chain.then(fn)
    this.chain = run.then(() => undefined, () => undefined)
    return run
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
      // A next group already planned is written before this one's readings are acknowledged and published.
      if (this.next.items.length > 0 && this.next.plan !== undefined && cycles < MAX_CYCLES) { await this.startWrite(); cycles++ }
      acknowledge(this.groupEnv, writing)
      publish(this.groupEnv, writing)
    }
  }

  /** Moves pending readings into the next group, planned on top of the group in flight when possible. */
  private async gather (): Promise<void> {
    const room = (this.o.maxGroup ?? 5000) - this.next.items.length
    if (room <= 0 || this.pending.length === 0) return
    const items = this.withoutErased(this.pending.splice(0, room))
    if (items.length === 0) return
    const next = this.next
    const plannable = next.items.length === 0 || next.plan !== undefined
    for (const it of items) next.items.push(it)
    const base = next.plan ?? this.inflight?.plan
    if (!plannable || base === undefined) { next.plan = undefined; return }
    let more: Plan | undefined
    // A plan on top that fails (its store read met the database closed by a rewrite) is made afresh at the write.
    try { more = await planOnTop(this.groupEnv, items, base) } catch { more = undefined }
    if (more === undefined) next.plan = undefined
    else if (next.plan === undefined) next.plan = more
    else next.plan.absorb(more)
  }

  private async startWrite (): Promise<void> {
    const group = this.next
    this.next = { items: [], plan: undefined }
    if (this.erased.size > 0) {
      const kept = this.withoutErased(group.items)
      if (kept.length !== group.items.length) { group.items = kept; group.plan = undefined }
      if (kept.length === 0) return
    }
    let planned: Plan | undefined
    for (let busy = 0; planned === undefined; busy++) {
      try {
        planned = await plan(this.groupEnv, group)
      } catch (err) {
        // The store closed by a rewrite for a moment: planned again once it is open (a few times at most).
        if (storageFailure(err) === 'busy' && this.o.storeSettled !== undefined && busy < 20) {
          group.plan = undefined
          await this.o.storeSettled()
          continue
        }
        this.failed(group, err)
        return
      }
    }
    this.inflight = append(this.groupEnv, group, planned)
  }

  private failed (group: Group, err: unknown): void {
    this.counters.failed_groups++
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

  /** Refuses new readings, writes (and acknowledges) every reading already taken, then returns. */
  async stop (): Promise<void> {
    this.stopped = true
    if (this.pruneTimer !== undefined) { clearInterval(this.pruneTimer); this.pruneTimer = undefined }
    while (this.writing !== undefined || this.scheduled || this.pending.length > 0 || this.next.items.length > 0) {
      if (this.writing !== undefined) await this.writing
      else await new Promise(resolve => setImmediate(resolve))
    }
    await this.exclusive(async () => undefined)
    this.closed = true
  }
}
