// The one module that makes acknowledged readings durable. The ingest pipeline
// hands it each group of readings as the ops of one plan (readings, rollups,
// latest records); `append` resolves only once the whole group is on disk, and
// only then does the pipeline acknowledge the group's readings to their
// senders. A second backend (a PostgreSQL hub) implements the same interface
// with one transaction per group; test/conformance/reading-log.ts states the
// contract both pass.
//
// The LevelDB implementation writes each group as one LevelDB batch with
// `{ sync: true }`, through classic-level's public `db.batch`: LevelDB appends
// the batch to its log file and syncs that file before the write returns, so a
// group is atomic (all or nothing after a crash) and, once acknowledged,
// survives a kill -9 and a power cut. Group commit is what keeps this cheap:
// readings that arrive while a group is being written wait and form the next
// group, so one sync serves as many readings as arrived during the last one.
import type { AtomicBatch, ReadingLog, WriteOp } from './types.ts'

export type { ReadingLog }

/** The batch options of every group: LevelDB syncs its log before the write returns. */
const SYNC = { sync: true } as const

/**
 * The reading log on the LevelDB store (db.ts), through its atomic batch (classic-level's public `db.batch`): one
 * sync batch per group, one group at a time, in order.
 */
export class LevelReadingLog implements ReadingLog {
  /** The last append called, never rejecting: the next one starts after it settles. */
  private last: Promise<void> = Promise.resolve()

  constructor (private readonly store: AtomicBatch) {}

  append (ops: readonly WriteOp[]): Promise<void> {
    const batch = [...ops]
    const write = async (): Promise<void> => { if (batch.length > 0) await this.store.batch(batch, SYNC) }
    const done = this.last.then(write)
    this.last = done.catch(() => undefined)
    return done
  }

  /** Resolves once every append called so far has settled. */
  async drain (): Promise<void> {
    await this.last
  }
}
