// Classes of rooms (issue 43): the class records, the running class of each
// room, and what a class leaves each member: their summary and the maxima it
// raised. Keys are designed for range scans:
//   classes          <class_id>                                   → ClassRecord
//   classes_by_room  <room_id>!<started_at, 16 digits>!<class_id> → class_id
//   class_running    <room_id>                                    → class_id
//   class_summaries  <profile_id>!<started_at, 16 digits>!<class_id> → ClassSummary
//   learned_max      <profile_id>!<at, 16 digits>                 → LearnedMax
// A class that ends writes its record, its summaries and its learned maxima and
// clears the running mark in one atomic batch.
import type { BatchOp, Store, Sub } from './db.ts'
import type { ClassRecord, ClassSummary, LearnedMax } from '../classes/types.ts'

const ts = (t: number): string => String(Math.max(0, Math.floor(t))).padStart(16, '0')
const low = (id: string): string => `${id}!`
const high = (id: string): string => `${id}!~`

/** What ending a class writes for one member. */
export interface MemberOutcome { profile_id: string, summary: ClassSummary, learned?: LearnedMax }

export class ClassStore {
  private readonly classes: Sub<ClassRecord>
  private readonly byRoom: Sub<string>
  private readonly running: Sub<string>
  private readonly summaries: Sub<ClassSummary>
  private readonly learned: Sub<LearnedMax>

  constructor (private readonly store: Store) {
    this.classes = store.sub<ClassRecord>('classes')
    this.byRoom = store.sub<string>('classes_by_room')
    this.running = store.sub<string>('class_running')
    this.summaries = store.sub<ClassSummary>('class_summaries')
    this.learned = store.sub<LearnedMax>('learned_max')
  }

  /** Stores a new class as its room's running class. */
  async create (rec: ClassRecord): Promise<void> {
    await this.store.batch([
      { type: 'put', sublevel: this.classes, key: rec.class_id, value: rec },
      { type: 'put', sublevel: this.byRoom, key: `${rec.room_id}!${ts(rec.started_at)}!${rec.class_id}`, value: rec.class_id },
      { type: 'put', sublevel: this.running, key: rec.room_id, value: rec.class_id }
    ], { sync: true })
  }

  /** Rewrites a class record (the coach's hidden members). */
  async save (rec: ClassRecord): Promise<void> {
    await this.store.batch([{ type: 'put', sublevel: this.classes, key: rec.class_id, value: rec }], { sync: true })
  }

  async get (classId: string): Promise<ClassRecord | undefined> {
    return await this.classes.get(classId)
  }

  /** Every running class (one per room at most), read at start. */
  async runningClasses (): Promise<ClassRecord[]> {
    const out: ClassRecord[] = []
    for await (const classId of this.running.values()) {
      const rec = await this.classes.get(classId)
      if (rec !== undefined) out.push(rec)
    }
    return out
  }

  /** The classes of a room, newest first, at most `limit`. */
  async ofRoom (roomId: string, limit = 50): Promise<ClassRecord[]> {
    const out: ClassRecord[] = []
    for await (const classId of this.byRoom.values({ gte: low(roomId), lt: high(roomId), reverse: true, limit })) {
      const rec = await this.classes.get(classId)
      if (rec !== undefined) out.push(rec)
    }
    return out
  }

  /** Ends a class: its record, every member's summary and learned maximum, and the running mark, in one batch. */
  async finish (rec: ClassRecord, outcomes: readonly MemberOutcome[]): Promise<void> {
    const ops: BatchOp[] = [
      { type: 'put', sublevel: this.classes, key: rec.class_id, value: rec },
      { type: 'del', sublevel: this.running, key: rec.room_id }
    ]
    for (const o of outcomes) {
      ops.push({ type: 'put', sublevel: this.summaries, key: `${o.profile_id}!${ts(rec.started_at)}!${rec.class_id}`, value: o.summary })
      if (o.learned !== undefined) ops.push({ type: 'put', sublevel: this.learned, key: `${o.profile_id}!${ts(o.learned.at)}`, value: o.learned })
    }
    await this.store.batch(ops, { sync: true })
  }

  /** A member's class summaries of classes started in [from, to), oldest first. */
  async summariesOf (profileId: string, from = 0, to = Number.MAX_SAFE_INTEGER): Promise<ClassSummary[]> {
    const out: ClassSummary[] = []
    for await (const s of this.summaries.values({ gte: `${profileId}!${ts(from)}`, lt: `${profileId}!${ts(to)}` })) out.push(s)
    return out
  }

  /** One summary of a member by class id. */
  async summaryOf (profileId: string, classId: string): Promise<ClassSummary | undefined> {
    for await (const s of this.summaries.values({ gte: low(profileId), lt: high(profileId) })) if (s.class_id === classId) return s
    return undefined
  }

  /** The maxima a member's classes raised, oldest first. */
  async learnedOf (profileId: string): Promise<LearnedMax[]> {
    const out: LearnedMax[] = []
    for await (const l of this.learned.values({ gte: low(profileId), lt: high(profileId) })) out.push(l)
    return out
  }

  /**
   * What a member's erasure deletes here: their summaries and learned maxima, and their profile id in the hidden
   * lists of class records. Returns the ops (for the erasure's batch) and how many summaries and maxima go.
   */
  async erasureOps (profileId: string): Promise<{ ops: BatchOp[], summaries: number, learned: number }> {
    const ops: BatchOp[] = []
    let summaries = 0
    let learned = 0
    for await (const key of this.summaries.keys({ gte: low(profileId), lt: high(profileId) })) { ops.push({ type: 'del', sublevel: this.summaries, key }); summaries++ }
    for await (const key of this.learned.keys({ gte: low(profileId), lt: high(profileId) })) { ops.push({ type: 'del', sublevel: this.learned, key }); learned++ }
    for await (const rec of this.classes.values()) {
      if (rec.hidden.includes(profileId)) ops.push({ type: 'put', sublevel: this.classes, key: rec.class_id, value: { ...rec, hidden: rec.hidden.filter(p => p !== profileId) } })
    }
    return { ops, summaries, learned }
  }
}
