// The one ingest pipeline every source hands readings to. Named steps:
//   validate → resolve_owner → paused → drop_unstored → group → plan → write → acknowledge → publish
// The first four run per reading (`paused` withholds the readings of a member
// who paused ingestion: acknowledged, never stored nor published, so no output
// sees them); then readings that arrive while a write is
// in flight (or within the same event-loop turn) form one group, written as a
// single LevelDB batch with sync (one fsync per group). `submit` resolves only
// after that write, so a source may acknowledge its sender (HTTP 200, MQTT
// PUBACK) and the reading survives a kill -9. Stored readings are then
// published to the live hub.
// Double buffering: while a group's batch is being written, the readings that
// arrive are planned on top of it as they come (no store reads; a reading
// that needs one makes the next group be planned after the write instead), so
// the next batch starts as soon as the previous one is durable. Batches are
// written one at a time, in order, and acknowledged in that order.
import type { Logger } from 'pino'
import type { Store } from '../store/db.ts'
import type { Plan, Readings } from '../store/readings.ts'
import type { Hub } from '../hub.ts'
import { DROP_REASONS, type DropReason, type Ingest, type IngestResult, type Reading, type ReadingSource, type StoredReading } from './reading.ts'
import { checkReading, measuredAtWindow } from '../../firmware-protocol/reading-contract.ts'

export type ResolveOwner = (deviceId: string) => Promise<string | undefined>

export interface IngestCounters {
  received: number
  stored: number
  dropped: Record<DropReason, number>
  /** Readings ahead of the relay's clock (within data.max_clock_skew_ms) stored at receive time, by source. */
  clock_skew_corrected: Partial<Record<ReadingSource, number>>
  batches: number
  failed_batches: number
}

export interface PipelineOptions {
  store: Store
  readings: Readings
  hub: Hub
  /** Checks that a profile exists (Users.get) and, synchronously from memory, whether its ingestion is paused. */
  users: { get (profileId: string): Promise<unknown>, ingestionPaused? (profileId: string, now: number): boolean }
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
}

interface Ctx { reading: Reading, profileId?: string, stored?: StoredReading }
interface Step { name: string, run (ctx: Ctx): Promise<DropReason | undefined> | DropReason | undefined }
interface Pending { reading: StoredReading, resolve (r: IngestResult): void, reject (err: unknown): void }
/** The group being written, or the next one being gathered (plan undefined: plan it when its turn comes). */
interface Group { items: Pending[], plan: Plan | undefined }
interface Writing { group: Group, plan: Plan, done: Promise<unknown> }

/** Write cycles before the writer lets a queued prune step run. */
const MAX_CYCLES = 200

export class PipelineStoppedError extends Error {
  constructor () { super('the ingest pipeline is stopped'); this.name = 'PipelineStoppedError' }
}

export class Pipeline implements Ingest {
  readonly counters: IngestCounters = {
    received: 0, stored: 0, batches: 0, failed_batches: 0, clock_skew_corrected: {},
    dropped: Object.fromEntries(DROP_REASONS.map(r => [r, 0])) as Record<DropReason, number>
  }

  private readonly steps: Step[]
  private resolveOwnerFn: ResolveOwner
  private readonly knownProfiles = new Set<string>()
  /** The latest measured_at accepted per profile (one number per member), for clock-skew correction. */
  private readonly lastAccepted = new Map<string, number>()
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

  constructor (private readonly o: PipelineOptions) {
    this.now = o.now ?? Date.now
    this.resolveOwnerFn = o.resolveOwner ?? (async () => undefined)
    this.steps = [
      { name: 'validate', run: ctx => this.validate(ctx.reading) },
      { name: 'resolve_owner', run: async ctx => { await this.resolveOwner(ctx); return undefined } },
      { name: 'paused', run: ctx => this.paused(ctx) },
      { name: 'drop_unstored', run: async ctx => await this.dropUnstored(ctx) }
    ]
  }

  /** The device registry plugs in here (default: no pairing, device-only readings are dropped). */
  setResolveOwner (fn: ResolveOwner): void { this.resolveOwnerFn = fn }

  async submit (reading: Reading): Promise<IngestResult> {
    if (this.stopped) throw new PipelineStoppedError()
    this.counters.received++
    const ctx: Ctx = { reading }
    for (const step of this.steps) {
      let reason: DropReason | undefined
      try {
        reason = await step.run(ctx)
      } catch (err) {
        this.o.log?.error({ err, step: step.name }, 'ingest step failed')
        throw err
      }
      if (reason !== undefined) return this.drop(reason)
    }
    const stored = ctx.stored
    if (stored === undefined) return this.drop('invalid')
    return await new Promise<IngestResult>((resolve, reject) => {
      this.pending.push({ reading: stored, resolve, reject })
      this.schedule()
    })
  }

  private drop (reason: DropReason): IngestResult {
    this.counters.dropped[reason]++
    return { status: 'dropped', reason }
  }

  private validate (r: Reading): DropReason | undefined {
    if (typeof r !== 'object' || r === null) return 'invalid'
    // The reading contract (firmware-protocol/reading-contract.ts), the same one every codec applies.
    if (checkReading(r) !== undefined) return 'invalid'
    if (r.profile_id !== undefined && (typeof r.profile_id !== 'string' || r.profile_id.length === 0 || r.profile_id.includes('!'))) return 'invalid'
    if (r.device_id !== undefined && (typeof r.device_id !== 'string' || r.device_id.length === 0)) return 'invalid'
    if (r.profile_id === undefined && r.device_id === undefined) return 'invalid'
    return undefined
  }

  private async resolveOwner (ctx: Ctx): Promise<void> {
    const r = ctx.reading
    if (r.profile_id !== undefined) { ctx.profileId = r.profile_id; return }
    if (r.device_id !== undefined && r.heart_rate > 0) {
      const owner = await this.resolveOwnerFn(r.device_id)
      if (owner !== undefined) ctx.profileId = owner
    }
  }

  private window (now: number): { min: number, max: number } {
    return measuredAtWindow({ now, rawRetentionDays: this.o.retention.rawDays, ...(this.o.maxClockSkewMs === undefined ? {} : { maxClockSkewMs: this.o.maxClockSkewMs }) })
  }

  /**
   * A member who paused ingestion: the reading is withheld (acknowledged, not stored, not published).
   * Only a reading that would otherwise be stored: out of the window or 0 bpm keeps its own answer.
   */
  private paused (ctx: Ctx): DropReason | undefined {
    const profileId = ctx.profileId
    if (profileId === undefined || ctx.reading.heart_rate <= 0 || this.o.users.ingestionPaused === undefined) return undefined
    const now = this.now()
    if (!this.o.users.ingestionPaused(profileId, now)) return undefined
    const t = Math.floor(ctx.reading.measured_at)
    const window = this.window(now)
    return t < window.min || t > window.max ? undefined : 'paused'
  }

  private async dropUnstored (ctx: Ctx): Promise<DropReason | undefined> {
    const r = ctx.reading
    if (r.heart_rate <= 0) return 'non_positive'
    const profileId = ctx.profileId
    if (profileId === undefined) return 'unpaired'
    if (!this.knownProfiles.has(profileId)) {
      if (await this.o.users.get(profileId) === undefined) return 'unknown_profile'
      this.knownProfiles.add(profileId)
    }
    let t = Math.floor(r.measured_at)
    const now = this.now()
    const window = this.window(now)
    if (t < window.min || t > window.max) return 'out_of_range'
    // A device clock ahead by at most max_clock_skew_ms: stored at the relay's receive time (README "The reading contract"),
    // and after every reading of this profile that went before it, so that two corrected readings never share a
    // millisecond (one would be dropped as a duplicate after being acknowledged).
    const last = this.lastAccepted.get(profileId)
    if (t > now) {
      t = Math.max(Math.floor(now), last === undefined ? -Infinity : last + 1)
      const c = this.counters.clock_skew_corrected
      c[r.source] = (c[r.source] ?? 0) + 1
    }
    if (last === undefined || t > last) this.lastAccepted.set(profileId, t)
    const stored: StoredReading = { profile_id: profileId, measured_at: t, heart_rate: r.heart_rate, source: r.source }
    if (r.device_id !== undefined) stored.device_id = r.device_id
    if (r.rr_intervals_ms !== undefined) stored.rr_intervals_ms = r.rr_intervals_ms
    if (r.energy_expended_kj !== undefined) stored.energy_expended_kj = r.energy_expended_kj
    if (r.sensor_contact !== undefined) stored.sensor_contact = r.sensor_contact
    ctx.stored = stored
    return undefined
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
      // The next batch goes out before this one is acknowledged and published.
      if (ok && this.next.items.length > 0 && cycles < MAX_CYCLES) { await this.startWrite(); cycles++ }
      if (ok) this.acknowledge(writing)
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
    let more: Plan | undefined
    try {
      more = await this.o.readings.plan(items.map(p => p.reading), base)
    } catch {
      more = undefined
    }
    if (more === undefined) next.plan = undefined
    else if (next.plan === undefined) next.plan = more
    else next.plan.absorb(more)
  }

  // write: readings, rollups and latest of one group in one atomic batch with one fsync.
  private async startWrite (): Promise<void> {
    const group = this.next
    this.next = { items: [], plan: undefined }
    let plan = group.plan
    try {
      plan ??= await this.o.readings.plan(group.items.map(p => p.reading))
    } catch (err) {
      this.failed(group, err)
      return
    }
    const ops = plan.ops
    const done = (async () => { await this.o.store.batch(ops, { sync: true }) })()
    done.catch(() => undefined)
    this.inflight = { group, plan, done }
  }

  private failed (group: Group, err: unknown): void {
    this.counters.failed_batches++
    this.o.log?.error({ err, readings: group.items.length }, 'writing a group of readings failed; nothing of it was stored')
    // The caches may hold what a plan on top of this group assumed: forget both.
    this.o.readings.resetCaches()
    this.next.plan = undefined
    for (const g of group.items) g.reject(err)
  }

  // acknowledge, then publish.
  private acknowledge (w: Writing): void {
    this.counters.batches++
    const dup = new Set(w.plan.duplicates)
    for (const g of w.group.items) {
      if (dup.has(g.reading)) g.resolve(this.drop('duplicate'))
      else { this.counters.stored++; g.resolve({ status: 'stored', profile_id: g.reading.profile_id }) }
    }
    for (const g of w.group.items) if (!dup.has(g.reading)) this.o.hub.publishReading(g.reading)
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
