// The one ingest pipeline every source hands readings to. Named steps:
//   validate → resolve_owner → drop_unstored → group → write → acknowledge → publish
// The first three run per reading; then readings that arrive while a write is
// in flight (or within the same event-loop turn) form one group, written as a
// single LevelDB batch with sync (one fsync per group). `submit` resolves only
// after that write, so a source may acknowledge its sender (HTTP 200, MQTT
// PUBACK) and the reading survives a kill -9. Stored readings are then
// published to the live hub.
import type { Logger } from 'pino'
import type { Store } from '../store/db.ts'
import type { Readings } from '../store/readings.ts'
import type { Hub } from '../hub.ts'
import { DROP_REASONS, type DropReason, type Ingest, type IngestResult, type Reading, type StoredReading } from './reading.ts'
import { MAX_RR, MAX_TIMESTAMP } from './codec.ts'

export const MAX_BPM = 1000
const DAY_MS = 86_400_000

export type ResolveOwner = (deviceId: string) => Promise<string | undefined>

export interface IngestCounters {
  received: number
  stored: number
  dropped: Record<DropReason, number>
  batches: number
  failed_batches: number
}

export interface PipelineOptions {
  store: Store
  readings: Readings
  hub: Hub
  /** Checks that a profile exists (Users.get). */
  users: { get (profileId: string): Promise<unknown> }
  /** Device pairing: the owner of a device id, or undefined (reading dropped as 'unpaired'). */
  resolveOwner?: ResolveOwner
  retention: { rawDays: number, rollupDays: number }
  log?: Logger
  now?: () => number
  /** Readings further in the future than this are dropped as out_of_range (default 10 minutes). */
  maxFutureMs?: number
  /** Readings per batch at most (default 5000). */
  maxGroup?: number
  /** Background pruning period (default 10 minutes; 0 turns the timer off). */
  pruneIntervalMs?: number
}

interface Ctx { reading: Reading, profileId?: string, stored?: StoredReading }
interface Step { name: string, run (ctx: Ctx): Promise<DropReason | undefined> | DropReason | undefined }
interface Pending { reading: StoredReading, resolve (r: IngestResult): void, reject (err: unknown): void }

export class PipelineStoppedError extends Error {
  constructor () { super('the ingest pipeline is stopped'); this.name = 'PipelineStoppedError' }
}

export class Pipeline implements Ingest {
  readonly counters: IngestCounters = {
    received: 0, stored: 0, batches: 0, failed_batches: 0,
    dropped: Object.fromEntries(DROP_REASONS.map(r => [r, 0])) as Record<DropReason, number>
  }

  private readonly steps: Step[]
  private resolveOwnerFn: ResolveOwner
  private readonly knownProfiles = new Set<string>()
  private readonly now: () => number
  private pending: Pending[] = []
  private scheduled = false
  private writing = false
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
    if (typeof r.measured_at !== 'number' || !Number.isFinite(r.measured_at) || r.measured_at < 0 || r.measured_at > MAX_TIMESTAMP) return 'invalid'
    if (typeof r.heart_rate !== 'number' || !Number.isInteger(r.heart_rate) || r.heart_rate > MAX_BPM) return 'invalid'
    if (r.profile_id !== undefined && (typeof r.profile_id !== 'string' || r.profile_id.length === 0 || r.profile_id.includes('!'))) return 'invalid'
    if (r.device_id !== undefined && (typeof r.device_id !== 'string' || r.device_id.length === 0)) return 'invalid'
    if (r.profile_id === undefined && r.device_id === undefined) return 'invalid'
    if (r.rr_intervals_ms !== undefined && (!Array.isArray(r.rr_intervals_ms) || r.rr_intervals_ms.length > MAX_RR || !r.rr_intervals_ms.every(x => typeof x === 'number' && Number.isFinite(x) && x >= 0 && x <= 65535))) return 'invalid'
    if (r.energy_expended_kj !== undefined && (typeof r.energy_expended_kj !== 'number' || !Number.isFinite(r.energy_expended_kj) || r.energy_expended_kj < 0 || r.energy_expended_kj > 65535)) return 'invalid'
    if (r.sensor_contact !== undefined && typeof r.sensor_contact !== 'boolean') return 'invalid'
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

  private async dropUnstored (ctx: Ctx): Promise<DropReason | undefined> {
    const r = ctx.reading
    if (r.heart_rate <= 0) return 'non_positive'
    const profileId = ctx.profileId
    if (profileId === undefined) return 'unpaired'
    if (!this.knownProfiles.has(profileId)) {
      if (await this.o.users.get(profileId) === undefined) return 'unknown_profile'
      this.knownProfiles.add(profileId)
    }
    const now = this.now()
    const t = Math.floor(r.measured_at)
    if (t > now + (this.o.maxFutureMs ?? 600_000) || t < now - this.o.retention.rawDays * DAY_MS) return 'out_of_range'
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
    if (this.scheduled || this.writing) return
    this.scheduled = true
    setImmediate(() => {
      this.scheduled = false
      void this.flush()
    })
  }

  /** Runs fn after every earlier write or prune step (one at a time). */
  exclusive<T> (fn: () => Promise<T>): Promise<T> {
    const run = this.chain.then(fn)
    this.chain = run.then(() => undefined, () => undefined)
    return run
  }

  private async flush (): Promise<void> {
    if (this.writing || this.pending.length === 0) return
    this.writing = true
    const group = this.pending.splice(0, this.o.maxGroup ?? 5000)
    try {
      // write: readings, rollups and latest in one atomic batch with one fsync.
      const plan = await this.exclusive(async () => {
        const p = await this.o.readings.plan(group.map(g => g.reading))
        await this.o.store.batch(p.ops, { sync: true })
        p.commit()
        return p
      })
      this.counters.batches++
      // acknowledge, then publish.
      const dup = new Set(plan.duplicates)
      for (const g of group) {
        if (dup.has(g.reading)) g.resolve(this.drop('duplicate'))
        else { this.counters.stored++; g.resolve({ status: 'stored', profile_id: g.reading.profile_id }) }
      }
      for (const g of group) if (!dup.has(g.reading)) this.o.hub.publishReading(g.reading)
    } catch (err) {
      this.counters.failed_batches++
      this.o.log?.error({ err, readings: group.length }, 'writing a group of readings failed; nothing of it was stored')
      for (const g of group) g.reject(err)
    } finally {
      this.writing = false
      if (this.pending.length > 0) this.schedule()
    }
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
    while (this.pending.length > 0 || this.writing || this.scheduled) {
      await new Promise(resolve => setTimeout(resolve, 5))
    }
    await this.exclusive(async () => undefined)
  }
}
