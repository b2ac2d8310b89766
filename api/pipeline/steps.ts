// The ingest pipeline's named steps, each a small function, in the manner of
// aedes' `publishFuncsQoS`. READING_STEPS run in order for every reading:
//   validate → resolveOwner → consent → paused → filter
// and any of them may drop it with a reason. The readings that pass are
// gathered into groups by the writer (api/pipeline/ingest.ts), which runs the
// group steps on each group, one group at a time and in order:
//   plan → append → acknowledge → publish
// (`planOnTop` is the plan step of the double buffer: the next group planned
// on top of the group still being written).
import type { Logger } from 'pino'
import type { ReadingPlan as Plan, ReadingStore } from '../store/types.ts'
import type { ReadingLog } from '../store/reading-log.ts'
import type { Hub } from '../hub.ts'
import type { DropReason, IngestResult, Reading, ReadingSource, StoredReading } from './reading.ts'
import { checkReading } from '../../firmware-protocol/reading-contract.ts'

/** The owner of a device id; may answer synchronously (the device registry answers from memory). */
export type ResolveOwner = (deviceId: string) => string | undefined | Promise<string | undefined>

export interface IngestCounters {
  received: number
  stored: number
  dropped: Record<DropReason, number>
  /** Readings ahead of the relay's clock (within data.max_clock_skew_ms) stored at receive time, by source. */
  clock_skew_corrected: Partial<Record<ReadingSource, number>>
  /** Groups written (one reading-log append each). */
  batches: number
  /** Groups whose append failed: none of their readings was acknowledged. */
  failed_groups: number
}

/**
 * Checks that a profile exists (Users.get) and, synchronously from memory, whether its ingestion is paused and
 * which notice version its consent in force is for.
 */
export interface ProfileCheck {
  get (profileId: string): Promise<unknown>
  ingestionPaused? (profileId: string, now: number): boolean
  consentVersion? (profileId: string): string | undefined
}

/** What the reading steps read and update: the pipeline's collaborators and its per-profile state. */
export interface ReadingEnv {
  users: ProfileCheck
  resolveOwner: ResolveOwner
  now: () => number
  /** The measured_at window at `now` (retention back, max clock skew ahead). */
  window (now: number): { min: number, max: number }
  counters: IngestCounters
  /** Profiles seen to exist (Users.get is asked once per profile). */
  knownProfiles: Set<string>
  /** The latest measured_at accepted per profile (one number per member), for clock-skew correction. */
  lastAccepted: Map<string, number>
  /** privacy.require_consent: the notice version a member must have consented to, or undefined (not required). */
  consentRequired: () => string | undefined
}

/** One reading on its way through the reading steps. */
/** A reading on its way through the steps; `busyRetries` counts the steps run again after a store rewrite. */
export interface ReadingCtx { reading: Reading, profileId?: string, stored?: StoredReading, busyRetries?: number }

/**
 * A reading step. A step answers synchronously when it can, and returns a promise only when it has to wait
 * (a store read): the pipeline awaits only promises, so a reading that needs no I/O passes every step in one
 * turn, without a microtask per step.
 */
export type ReadingStep = (env: ReadingEnv, ctx: ReadingCtx) => Promise<DropReason | undefined> | DropReason | undefined

/** validate: the reading contract (firmware-protocol/reading-contract.ts, the one every codec applies) and the ids. */
export function validate (_env: ReadingEnv, ctx: ReadingCtx): DropReason | undefined {
  const r = ctx.reading
  if (typeof r !== 'object' || r === null) return 'invalid'
  if (checkReading(r) !== undefined) return 'invalid'
  if (r.profile_id !== undefined && (typeof r.profile_id !== 'string' || r.profile_id.length === 0 || r.profile_id.includes('!'))) return 'invalid'
  if (r.device_id !== undefined && (typeof r.device_id !== 'string' || r.device_id.length === 0)) return 'invalid'
  if (r.profile_id === undefined && r.device_id === undefined) return 'invalid'
  return undefined
}

/** resolveOwner: the reading's profile, given or (for a device reading above 0 bpm) its device's owner. */
export function resolveOwner (env: ReadingEnv, ctx: ReadingCtx): Promise<undefined> | undefined {
  const r = ctx.reading
  if (r.profile_id !== undefined) { ctx.profileId = r.profile_id; return undefined }
  if (r.device_id === undefined || r.heart_rate <= 0) return undefined
  const owner = env.resolveOwner(r.device_id)
  if (!(owner instanceof Promise)) { if (owner !== undefined) ctx.profileId = owner; return undefined }
  return owner.then(o => { if (o !== undefined) ctx.profileId = o; return undefined })
}

/**
 * consent: while consent is required, a member without consent in force for the current notice version: the
 * reading is refused (not acknowledged, not stored, not published). A reading of 0 bpm keeps its own answer.
 */
export function consent (env: ReadingEnv, ctx: ReadingCtx): DropReason | undefined {
  const profileId = ctx.profileId
  if (profileId === undefined || ctx.reading.heart_rate <= 0) return undefined
  const version = env.consentRequired()
  if (version === undefined) return undefined
  return env.users.consentVersion?.(profileId) === version ? undefined : 'no_consent'
}

/**
 * paused: a member who paused ingestion: the reading is withheld (acknowledged, not stored, not published).
 * Only a reading that would otherwise be stored: out of the window or 0 bpm keeps its own answer.
 */
export function paused (env: ReadingEnv, ctx: ReadingCtx): DropReason | undefined {
  const profileId = ctx.profileId
  if (profileId === undefined || ctx.reading.heart_rate <= 0 || env.users.ingestionPaused === undefined) return undefined
  const now = env.now()
  if (!env.users.ingestionPaused(profileId, now)) return undefined
  const t = Math.floor(ctx.reading.measured_at)
  const window = env.window(now)
  return t < window.min || t > window.max ? undefined : 'paused'
}

/**
 * filter: drops what is not stored (0 bpm or below, no owner, an unknown profile, outside the window)
 * and makes the reading to store, with the clock-skew clamp.
 */
export function filter (env: ReadingEnv, ctx: ReadingCtx): Promise<DropReason | undefined> | DropReason | undefined {
  const r = ctx.reading
  if (r.heart_rate <= 0) return 'non_positive'
  const profileId = ctx.profileId
  if (profileId === undefined) return 'unpaired'
  if (env.knownProfiles.has(profileId)) return accept(env, ctx, profileId)
  // A profile seen for the first time: asked once whether it exists.
  return env.users.get(profileId).then(user => {
    if (user === undefined) return 'unknown_profile'
    env.knownProfiles.add(profileId)
    return accept(env, ctx, profileId)
  })
}

/** The rest of filter for a known profile: the measured_at window, the clock-skew clamp, the reading to store. */
function accept (env: ReadingEnv, ctx: ReadingCtx, profileId: string): DropReason | undefined {
  const r = ctx.reading
  let t = Math.floor(r.measured_at)
  const now = env.now()
  const window = env.window(now)
  if (t < window.min || t > window.max) return 'out_of_range'
  // A device clock ahead by at most max_clock_skew_ms: stored at the relay's receive time (docs/api.md "The reading contract"),
  // and after every reading of this profile that went before it, so that two corrected readings never share a
  // millisecond (one would be dropped as a duplicate after being acknowledged).
  const last = env.lastAccepted.get(profileId)
  if (t > now) {
    t = Math.max(Math.floor(now), last === undefined ? -Infinity : last + 1)
    const c = env.counters.clock_skew_corrected
    c[r.source] = (c[r.source] ?? 0) + 1
  }
  if (last === undefined || t > last) env.lastAccepted.set(profileId, t)
  const stored: StoredReading = { profile_id: profileId, measured_at: t, heart_rate: r.heart_rate, source: r.source }
  if (r.device_id !== undefined) stored.device_id = r.device_id
  if (r.rr_intervals_ms !== undefined) stored.rr_intervals_ms = r.rr_intervals_ms
  if (r.energy_expended_kj !== undefined) stored.energy_expended_kj = r.energy_expended_kj
  if (r.sensor_contact !== undefined) stored.sensor_contact = r.sensor_contact
  ctx.stored = stored
  return undefined
}

/** The reading steps, in the order they run. */
export const READING_STEPS: readonly ReadingStep[] = [validate, resolveOwner, consent, paused, filter]

/** What the group steps use. */
export interface GroupEnv { readingLog: ReadingLog, readings: ReadingStore, hub: Hub, counters: IngestCounters, log?: Logger | undefined }

/** A reading that passed the reading steps, waiting for its group's write. */
export interface Pending { reading: StoredReading, resolve (r: IngestResult): void, reject (err: unknown): void }
/** The group being written, or the next one being gathered (plan undefined: plan it when its turn comes). */
export interface Group { items: Pending[], plan: Plan | undefined }
/** A group being appended; `duplicates` is the plan's, as a set, for acknowledge and publish. */
export interface Writing { group: Group, plan: Plan, duplicates: ReadonlySet<unknown>, done: Promise<unknown> }

/** plan: the group's writes on the store as written (reads the store where the caches miss). */
export async function plan (env: GroupEnv, group: Group): Promise<Plan> {
  return group.plan ?? await env.readings.plan(group.items.map(p => p.reading))
}

/**
 * plan, speculatively: readings planned on top of a group still being written. Undefined when that
 * needs a store read, or fails (logged): the group is then planned by `plan` after that write.
 */
export async function planOnTop (env: GroupEnv, items: Pending[], base: Plan): Promise<Plan | undefined> {
  try {
    return await env.readings.plan(items.map(p => p.reading), base)
  } catch (err) {
    env.log?.warn({ err, readings: items.length }, 'planning readings on top of the group in flight failed; they are planned again after it is written')
    return undefined
  }
}

/** append: readings, rollups and latest of one group, atomically, to the reading log; durable when `done` resolves. */
export function append (env: GroupEnv, group: Group, plan: Plan): Writing {
  const done = env.readingLog.append(plan.ops)
  done.catch(() => undefined)
  return { group, plan, duplicates: new Set(plan.duplicates), done }
}

/** acknowledge: only after the group is durable, each reading as stored or as a duplicate. */
export function acknowledge (env: GroupEnv, w: Writing): void {
  env.counters.batches++
  for (const g of w.group.items) {
    if (w.duplicates.has(g.reading)) {
      env.counters.dropped.duplicate++
      g.resolve({ status: 'dropped', reason: 'duplicate' })
    } else {
      env.counters.stored++
      g.resolve({ status: 'stored', profile_id: g.reading.profile_id })
    }
  }
}

/** publish: the stored readings of the group to the live hub, after they were acknowledged. */
export function publish (env: GroupEnv, w: Writing): void {
  for (const g of w.group.items) if (!w.duplicates.has(g.reading)) env.hub.publishReading(g.reading)
}
