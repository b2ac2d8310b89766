// The audit log: every change made through the admin API or the operator pages
// (and a member's own erasure), appended as one entry: when, who (the operator
// or "admin token"), what, on which object, from which address, and the result.
// Entries hold no heart rates, passwords or secrets: capture.ts picks named
// fields, never a body. Nothing changes an entry, with one exception: a member's
// erasure replaces their username and profile id, in every entry, by a digest of
// the profile id (`redactSubject`), so the entries stay and the bytes rule of the
// erasure holds for the log too.
//
// One LevelDB sublevel, `audit`, keyed by the time in ms and a counter, fixed
// width, so a listing since a time is one range read.
import { createHash } from 'node:crypto'
import type { BatchOp, Store, Sub } from '../store/db.ts'

export interface AuditEntry {
  /** Unix ms. */
  at: number
  /** The operator's name, "admin token", or "member" (a member erasing their own account). */
  actor: string
  /** e.g. "user.create", "user.delete", "room.member.add" (capture.ts). */
  action: string
  /** The object changed: its kind and id (a username, room id, device id…), when the request names one. */
  object: { kind: string, id: string | null }
  ip: string
  /** "ok" (2xx/3xx), "refused" (4xx) or "error" (5xx), and the HTTP status. */
  result: 'ok' | 'refused' | 'error'
  status: number
}

const KEY_WIDTH = 15

/** A `since` given as Unix ms or an ISO 8601 time: its ms, undefined when absent, NaN when it is neither. */
export function sinceMs (since: string | undefined): number | undefined {
  if (since === undefined || since === '') return undefined
  return /^\d+$/.test(since) ? Number(since) : Date.parse(since)
}

/** The digest an erased member's username and profile id become: one-way, and the same in every entry of theirs. */
export function erasedDigest (profileId: string): string {
  return `erased:${createHash('sha256').update(`hr-relay audit\0${profileId}`).digest('hex').slice(0, 16)}`
}

export class AuditLog {
  private readonly sub: Sub<AuditEntry>
  /** The newest key, once read. */
  private last: string | null | undefined
  /** Appends one after another, so keys are in order. */
  private chain: Promise<void> = Promise.resolve()

  constructor (private readonly store: Store) {
    this.sub = store.sub<AuditEntry>('audit')
  }

  /** Appends an entry; resolves once it is on disk. */
  async append (entry: AuditEntry): Promise<void> {
    const run = this.chain.then(async () => {
      if (this.last === undefined) {
        this.last = null
        for await (const k of this.sub.keys({ reverse: true, limit: 1 })) this.last = k
      }
      let ms = String(Math.max(0, Math.floor(entry.at))).padStart(KEY_WIDTH, '0')
      let seq = 0
      // In the same millisecond as the last entry, or after a clock stepped back: after the last one.
      if (this.last !== null && this.last.slice(0, KEY_WIDTH) >= ms) { ms = this.last.slice(0, KEY_WIDTH); seq = Number(this.last.slice(KEY_WIDTH + 1)) + 1 }
      const key = `${ms}-${String(seq).padStart(6, '0')}`
      await this.store.batch([{ type: 'put', sublevel: this.sub, key, value: entry }], { sync: true })
      this.last = key
    })
    this.chain = run.catch(() => undefined)
    await run
  }

  /** Entries at or after `since` (Unix ms), newest first, at most `limit`. */
  async list (options: { since?: number, limit?: number } = {}): Promise<AuditEntry[]> {
    const out: AuditEntry[] = []
    const gte = options.since === undefined ? undefined : String(Math.max(0, Math.floor(options.since))).padStart(KEY_WIDTH, '0')
    for await (const v of this.sub.values({ reverse: true, limit: options.limit ?? 1000, ...(gte === undefined ? {} : { gte }) })) out.push(v)
    return out
  }

  /**
   * A member's erasure: their username and profile id, wherever they occur in an entry (actor, object), become
   * erasedDigest(profileId). Entries are never removed. Returns how many entries changed.
   */
  async redactSubject (who: { username: string, profile_id: string }): Promise<number> {
    const digest = erasedDigest(who.profile_id)
    const name = who.username.normalize('NFC').toLowerCase()
    const swap = (v: string): string => v === who.profile_id || v.normalize('NFC').toLowerCase() === name ? digest : v.split(who.profile_id).join(digest)
    const ops: BatchOp[] = []
    await this.chain
    for await (const [key, e] of this.sub.iterator()) {
      const next: AuditEntry = { ...e, actor: swap(e.actor), object: { kind: e.object.kind, id: e.object.id === null ? null : swap(e.object.id) } }
      if (next.actor !== e.actor || next.object.id !== e.object.id) ops.push({ type: 'put', sublevel: this.sub, key, value: next })
    }
    await this.store.batch(ops, { sync: true })
    return ops.length
  }
}

const logs = new WeakMap<Store, AuditLog>()

/** The one audit log of a store. */
export function auditLogOf (store: Store): AuditLog {
  let log = logs.get(store)
  if (log === undefined) { log = new AuditLog(store); logs.set(store, log) }
  return log
}
