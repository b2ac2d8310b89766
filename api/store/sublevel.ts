// The shapes every store module shares: a sublevel of the one LevelDB, a batch
// operation on one, and the two things a migration needs of the store (db.ts's
// Store has both). Kept apart from db.ts so that a migration (hour-rollups.ts)
// can name them without importing the Store that runs it.
import type { Level } from 'level'
import type { AbstractSublevel } from 'abstract-level'

export type Sub<V> = AbstractSublevel<Level<string, unknown>, string | Buffer | Uint8Array, string, V>

export type BatchOp =
  | { type: 'put', sublevel: Sub<any>, key: string, value: unknown }
  | { type: 'del', sublevel: Sub<any>, key: string }

/** What a migration uses of the store: its sublevels and atomic batches. */
export interface SublevelStore {
  sub<V> (name: string): Sub<V>
  batch (ops: BatchOp[], options?: { sync?: boolean }): Promise<void>
}
