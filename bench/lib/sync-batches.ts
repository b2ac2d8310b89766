// The durable references' store (workers/aedes-ref.ts and
// workers/ws-broadcast-ref.ts, started with { durable: true }): hr-relay's
// group commit with the least work around it. Each message is one record in a
// LevelDB batch written with sync; the messages that arrive while a batch is
// written form the next batch, which starts before the finished one is
// answered (as api/pipeline/ingest.ts does). A message's callback runs once
// its batch is durable, so a reference that acknowledges or forwards in it
// keeps hr-relay's "acknowledged means stored" and "publish after storage".
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Level } from 'level'

interface Waiting { key: string, value: Uint8Array, done: (err: Error | null) => void }

const SYNC = { sync: true }

export class SyncBatches {
  /** Sync batches written and records stored since open. */
  batches = 0
  stored = 0
  private pending: Waiting[] = []
  private writing = false
  private seq = 0

  private constructor (readonly dir: string, private readonly db: Level<string, Uint8Array>) {}

  /** A fresh store in a temporary directory (removed by close). */
  static async open (): Promise<SyncBatches> {
    const dir = await mkdtemp(join(tmpdir(), 'hr-relay-bench-durable-'))
    const db = new Level<string, Uint8Array>(dir, { keyEncoding: 'utf8', valueEncoding: 'view' })
    await db.open()
    return new SyncBatches(dir, db)
  }

  /** Stores `value` under `prefix` and a sequence number; `done` runs once its batch is durable. */
  add (prefix: string, value: Uint8Array, done: (err: Error | null) => void): void {
    this.pending.push({ key: `${prefix}!${String(this.seq++).padStart(12, '0')}`, value, done })
    this.write()
  }

  async close (): Promise<void> {
    await this.db.close()
    await rm(this.dir, { recursive: true, force: true })
  }

  private write (): void {
    if (this.writing || this.pending.length === 0 || this.db.status !== 'open') return
    this.writing = true
    const group = this.pending
    this.pending = []
    const ops = group.map(w => ({ type: 'put' as const, key: w.key, value: w.value }))
    const settle = (err: Error | null): void => {
      this.writing = false
      if (err === null) { this.batches++; this.stored += group.length }
      this.write()
      for (const w of group) w.done(err)
    }
    this.db.batch(ops, SYNC).then(() => { settle(null) }, (err: Error) => { settle(err) })
  }
}
