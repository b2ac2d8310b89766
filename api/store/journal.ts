// The write-ahead journal of acknowledged readings: a file of fixed size, zero-filled and synced once, that each
// batch of readings is written into with O_DSYNC, overwriting it in place, while LevelDB takes the same batch
// without a sync. An acknowledgement waits for both.
//
// Why not a LevelDB sync batch: LevelDB appends to its log, and on ext4 (dioread_nolock, the default) an append's
// fdatasync waits for an unbound kernel worker to convert the new blocks' extents. When other processes keep the
// cores busy, that worker waits for a core for hundreds of milliseconds, and every acknowledgement with it
// (bench/README.md, "The targets not met"). Overwriting blocks that are already written and synced changes no
// metadata, so the write returns when the data is on the disk. A small group's record is written on the event
// loop's thread, a larger one on the thread pool (JournalTiming).
//
// Layout: two header slots (0 and 512, written alternately, so that one is whole whatever a power cut tears),
// then the record area from 4096, in two halves. Records fill one half from its start; when the next record does
// not fit, writing moves to the other half and the full one is checkpointed: LevelDB flushes its memtable to a
// synced table file (compactRange), which makes every batch written before it durable in LevelDB, and the header
// then records the last sequence number the checkpoint covers. A half is reused only after its checkpoint.
//
// A record: magic 'HRJ1', kind (1 batch, 2 cancel), payload length, sequence number, CRC-32 of all of it; then the
// payload. A batch's payload is its operations as LevelDB takes them (keys and values already encoded), so that
// replaying a record writes exactly what was written, and replaying it twice changes nothing. Replay (at open)
// applies, in order, the records after the checkpoint whose sequence numbers follow each other without a gap.
import { constants, writeSync } from 'node:fs'
import { open, rename, rm, type FileHandle } from 'node:fs/promises'
import { dirname } from 'node:path'
import { crc32 } from 'node:zlib'
import { CoreWait } from '../core-wait.ts'

/** An operation as LevelDB takes it: key and value already encoded (a utf8 string or bytes). */
export interface JournalOp {
  type: 'put' | 'del'
  key: string | Uint8Array
  value?: string | Uint8Array
}

/** What a replayed operation looks like to abstract-level's batch on the root database. */
export interface ReplayOp {
  type: 'put' | 'del'
  key: string | Uint8Array
  value?: string | Uint8Array
  keyEncoding: 'utf8' | 'view'
  valueEncoding?: 'utf8' | 'view'
}

const RECORD_MAGIC = 0x48524a31 // 'HRJ1'
const HEADER_MAGIC = 0x48524a48 // 'HRJH'
const VERSION = 1
const RECORD_HEAD = 24
const HEADER_BYTES = 36
const SLOT = 512
export const AREA_START = 4096
/** The smallest journal: two halves that each hold a few batches. */
export const MIN_JOURNAL_BYTES = AREA_START + 2 * 64 * 1024
/**
 * Where a record is written. A small group's (a few readings: the event loop has little else to do) is written on
 * the calling thread, while a pool thread writes LevelDB: the event loop then sleeps once, in the write, instead of
 * waking for a thread-pool job's answer. Beside busy processes each wake-up is a wait for a core, so that is one
 * wait fewer on every acknowledgement (bench/README.md, "The store's write-ahead journal"). The next group could
 * not be written before this one is anyway (one group is in flight at a time), so what waits with it is only the
 * rest of the event loop's work, for the time of one small write.
 *
 * A larger group's record goes to the thread pool: the event loop is busy, and plans the next group while the
 * pool writes. So do all records while the disk is slow (an SD card that stalls), for a while, so that the event
 * loop does not wait for it.
 */
export interface JournalTiming {
  /** Records up to this many bytes may be written on the calling thread. */
  onThreadBytes: number
  /**
   * The median time on the disk of the last WINDOW such writes above this (ms; a write's wall time less the time its
   * thread then waited for a core): the disk is slow, and records go to the pool...
   */
  slowMedianMs: number
  /** ... as they do after any one write that was on the disk longer than this (ms) ... */
  stallMs: number
  /** ... for this long (ms); then the calling thread is tried again. */
  poolMs: number
}

export const DEFAULT_TIMING: Readonly<JournalTiming> = Object.freeze({ onThreadBytes: 16 * 1024, slowMedianMs: 10, stallMs: 100, poolMs: 10_000 })
/** How many writes on the calling thread each median is taken over. */
const WINDOW = 8

const KIND_BATCH = 1
const KIND_CANCEL = 2

/** Whether this platform can open a file with O_DSYNC (Linux, macOS); elsewhere the store keeps sync batches. */
export const JOURNAL_SUPPORTED = typeof constants.O_DSYNC === 'number'

/** The journal cannot be read: both header slots are damaged, or the file is not the size its header says. */
export class JournalDamagedError extends Error {
  constructor (readonly path: string, problem = 'no valid header') {
    super(`the journal ${path} is damaged (${problem}); move it away to open the store without it: readings acknowledged in the last seconds before the stop may then be missing`)
    this.name = 'JournalDamagedError'
  }
}

// Flags of an encoded operation.
const PUT = 1
const KEY_BYTES = 2
const VALUE_BYTES = 4

function byteLength (x: string | Uint8Array): number {
  return typeof x === 'string' ? Buffer.byteLength(x) : x.byteLength
}

function put (buf: Buffer, at: number, x: string | Uint8Array): number {
  if (typeof x === 'string') return at + buf.write(x, at)
  buf.set(x, at)
  return at + x.byteLength
}

/** The size of a batch's record, header included. */
function batchRecordBytes (ops: readonly JournalOp[]): number {
  let size = RECORD_HEAD
  for (const op of ops) size += 5 + byteLength(op.key) + (op.type === 'put' ? 4 + byteLength(op.value ?? '') : 0)
  return size
}

/** A batch record: header, then per operation its flags, key length, key, value length and value. */
export function encodeBatch (seq: number, ops: readonly JournalOp[], bytes = batchRecordBytes(ops)): Buffer {
  const buf = Buffer.allocUnsafe(bytes)
  let at = RECORD_HEAD
  for (const op of ops) {
    const isPut = op.type === 'put'
    const value = op.value ?? ''
    buf[at] = (isPut ? PUT : 0) | (typeof op.key === 'string' ? 0 : KEY_BYTES) | (isPut && typeof value !== 'string' ? VALUE_BYTES : 0)
    const keyEnd = put(buf, at + 5, op.key)
    buf.writeUInt32LE(keyEnd - at - 5, at + 1)
    at = keyEnd
    if (isPut) {
      const valueEnd = put(buf, at + 4, value)
      buf.writeUInt32LE(valueEnd - at - 4, at)
      at = valueEnd
    }
  }
  return seal(buf, KIND_BATCH, seq)
}

/** A cancel record: the batch with sequence number `cancelled` reached the journal but not LevelDB; replay skips it. */
export function encodeCancel (seq: number, cancelled: number): Buffer {
  const buf = Buffer.allocUnsafe(RECORD_HEAD + 8)
  buf.writeDoubleLE(cancelled, RECORD_HEAD)
  return seal(buf, KIND_CANCEL, seq)
}

function seal (buf: Buffer, kind: number, seq: number): Buffer {
  buf.writeUInt32LE(RECORD_MAGIC, 0)
  buf.writeUInt32LE(kind, 4)
  buf.writeUInt32LE(buf.length - RECORD_HEAD, 8)
  buf.writeDoubleLE(seq, 12)
  buf.writeUInt32LE(crc32(buf.subarray(RECORD_HEAD), crc32(buf.subarray(0, 20))), 20)
  return buf
}

interface Rec { seq: number, kind: number, payload: Buffer }

/** The record at `at` in `buf`, or undefined where there is none (zeros, a torn or stale write). */
function readRecord (buf: Buffer, at: number): Rec | undefined {
  if (at + RECORD_HEAD > buf.length || buf.readUInt32LE(at) !== RECORD_MAGIC) return undefined
  const len = buf.readUInt32LE(at + 8)
  if (at + RECORD_HEAD + len > buf.length) return undefined
  const payload = buf.subarray(at + RECORD_HEAD, at + RECORD_HEAD + len)
  if (crc32(payload, crc32(buf.subarray(at, at + 20))) !== buf.readUInt32LE(at + 20)) return undefined
  return { seq: buf.readDoubleLE(at + 12), kind: buf.readUInt32LE(at + 4), payload }
}

/** The operations of a batch record's payload, as abstract-level's batch takes them on the root database. */
export function decodeBatch (payload: Buffer): ReplayOp[] {
  const ops: ReplayOp[] = []
  for (let at = 0; at < payload.length;) {
    const flags = payload[at] as number
    const keyLen = payload.readUInt32LE(at + 1)
    const keyBytes = payload.subarray(at + 5, at + 5 + keyLen)
    at += 5 + keyLen
    const key = (flags & KEY_BYTES) !== 0 ? new Uint8Array(keyBytes) : keyBytes.toString()
    const keyEncoding = (flags & KEY_BYTES) !== 0 ? 'view' : 'utf8'
    if ((flags & PUT) === 0) { ops.push({ type: 'del', key, keyEncoding }); continue }
    const valueLen = payload.readUInt32LE(at)
    const valueBytes = payload.subarray(at + 4, at + 4 + valueLen)
    at += 4 + valueLen
    if ((flags & VALUE_BYTES) !== 0) ops.push({ type: 'put', key, keyEncoding, value: new Uint8Array(valueBytes), valueEncoding: 'view' })
    else ops.push({ type: 'put', key, keyEncoding, value: valueBytes.toString(), valueEncoding: 'utf8' })
  }
  return ops
}

interface Header { counter: number, checkpoint: number, size: number }

function encodeHeader (h: Header): Buffer {
  const buf = Buffer.alloc(SLOT)
  buf.writeUInt32LE(HEADER_MAGIC, 0)
  buf.writeUInt32LE(VERSION, 4)
  buf.writeDoubleLE(h.counter, 8)
  buf.writeDoubleLE(h.checkpoint, 16)
  buf.writeDoubleLE(h.size, 24)
  buf.writeUInt32LE(crc32(buf.subarray(0, 32)), 32)
  return buf
}

function decodeHeader (buf: Buffer): Header | undefined {
  if (buf.length < HEADER_BYTES || buf.readUInt32LE(0) !== HEADER_MAGIC || buf.readUInt32LE(4) !== VERSION) return undefined
  if (crc32(buf.subarray(0, 32)) !== buf.readUInt32LE(32)) return undefined
  return { counter: buf.readDoubleLE(8), checkpoint: buf.readDoubleLE(16), size: buf.readDoubleLE(24) }
}

/** The newer whole header of the two slots. */
function newestHeader (head: Buffer): Header | undefined {
  const a = decodeHeader(head.subarray(0, SLOT))
  const b = decodeHeader(head.subarray(SLOT, 2 * SLOT))
  if (a === undefined) return b
  if (b === undefined) return a
  return a.counter >= b.counter ? a : b
}

/** What the store gives the journal: the LevelDB flush that makes every batch written so far durable. */
export interface Checkpointer {
  /** Resolves once every batch LevelDB has taken so far is in synced table files (a memtable flush). */
  flush (): Promise<void>
}

/** Where a journal stands: its header's checkpoint and counter, and the highest sequence number in it. */
export interface JournalPosition {
  checkpoint: number
  counter: number
  /** Every later record gets a higher one. */
  lastSeq: number
}

/** A journal as read at open: where it stands, and the records after the checkpoint, in order, that replay applies. */
export interface Recovered extends JournalPosition {
  batches: Array<{ seq: number, ops: ReplayOp[] }>
}

async function readAt (fh: FileHandle, at: number, length: number): Promise<Buffer> {
  const buf = Buffer.alloc(length)
  let got = 0
  while (got < length) {
    const { bytesRead } = await fh.read(buf, got, length - got, at + got)
    if (bytesRead === 0) break
    got += bytesRead
  }
  return buf.subarray(0, got)
}

/**
 * Reads the journal at `path`: the batches to replay (after the checkpoint, in order, without a gap), or undefined
 * when there is no journal. Throws JournalDamagedError when neither header slot is whole.
 */
export async function readJournal (path: string): Promise<Recovered | undefined> {
  let fh: FileHandle
  try { fh = await open(path, 'r') } catch (err) { if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined; throw err }
  try {
    const size = (await fh.stat()).size
    const header = newestHeader(await readAt(fh, 0, 2 * SLOT))
    if (header === undefined) throw new JournalDamagedError(path)
    // A cut-short copy: its halves would be read at other offsets than they were written at.
    if (header.size !== size) throw new JournalDamagedError(path, `${size} bytes, its header says ${header.size}`)
    const half = Math.floor((size - AREA_START) / 2)
    const live: Rec[] = []
    let lastSeq = header.checkpoint
    for (const start of [AREA_START, AREA_START + half]) {
      if (half <= 0) break
      // A half is written from its start after its last checkpoint: a stale first record means a stale half.
      const head = await readAt(fh, start, RECORD_HEAD)
      if (head.length < RECORD_HEAD || head.readUInt32LE(0) !== RECORD_MAGIC || head.readDoubleLE(12) <= header.checkpoint) continue
      const buf = await readAt(fh, start, half)
      let expect = head.readDoubleLE(12)
      for (let at = 0; ;) {
        const rec = readRecord(buf, at)
        if (rec === undefined || rec.seq !== expect) break
        live.push(rec)
        expect++
        at += RECORD_HEAD + rec.payload.length
      }
    }
    live.sort((a, b) => a.seq - b.seq)
    const cancelled = new Set<number>()
    const inOrder: Rec[] = []
    for (const rec of live) {
      if (rec.seq !== lastSeq + 1) break
      lastSeq = rec.seq
      inOrder.push(rec)
      if (rec.kind === KIND_CANCEL) cancelled.add(rec.payload.readDoubleLE(0))
    }
    const batches = inOrder.filter(r => r.kind === KIND_BATCH && !cancelled.has(r.seq)).map(r => ({ seq: r.seq, ops: decodeBatch(r.payload) }))
    for (const rec of live) if (rec.seq > lastSeq) lastSeq = rec.seq
    return { batches, checkpoint: header.checkpoint, counter: header.counter, lastSeq }
  } finally {
    await fh.close()
  }
}

/** Writes `buf` at `at` in full. */
async function writeAt (fh: FileHandle, buf: Buffer, at: number): Promise<void> {
  for (let done = 0; done < buf.length;) {
    const { bytesWritten } = await fh.write(buf, done, buf.length - done, at + done)
    done += bytesWritten
  }
}

async function syncDir (path: string): Promise<void> {
  const dir = await open(dirname(path), 'r')
  try { await dir.sync() } finally { await dir.close() }
}

/**
 * Makes a journal of `size` bytes at `path` whose checkpoint is `checkpoint`: zero-filled and synced under a
 * temporary name, then renamed, so that a journal that exists is always whole.
 */
export async function createJournal (path: string, size: number, checkpoint: number): Promise<void> {
  const tmp = `${path}.tmp`
  try {
    const fh = await open(tmp, 'w', 0o600)
    try {
      // 64 KiB at a time: the service's idle memory is a target of its own (bench/README.md, footprint).
      const zeros = Buffer.alloc(1 << 16)
      for (let at = 0; at < size; at += zeros.length) await writeAt(fh, zeros.subarray(0, Math.min(zeros.length, size - at)), at)
      // Header number n goes in slot n % 2: the next one (2) then goes in the other slot than this one.
      await writeAt(fh, encodeHeader({ counter: 1, checkpoint, size }), SLOT)
      await fh.sync()
    } finally {
      await fh.close()
    }
    await rename(tmp, path)
  } catch (err) {
    // E.g. no space left for it: nothing half-made stays behind.
    await rm(tmp, { force: true }).catch(() => undefined)
    throw err
  }
  await syncDir(path)
}

/**
 * An open journal. Appends are serialized (each record is written after the one before it has returned, whichever
 * thread writes it: appendNow writes only when nothing is queued), so that a record on the disk means every record
 * before it is too.
 */
export class Journal {
  private seq: number
  private checkpointed: number
  private counter: number
  private half = 0
  private pos = 0
  /** The last sequence number written in each half, or 0 when the half holds nothing newer than a checkpoint. */
  private readonly halfLast = [0, 0]
  private tail: Promise<unknown> = Promise.resolve()
  /** Appends, cancels and checkpoints queued on `tail` and not yet settled. */
  private queued = 0
  /** Until when (performance.now()) records go to the thread pool: the disk was slow (see JournalTiming). */
  private poolUntil = 0
  /** How long the last writes on the calling thread were on the disk (ms), WINDOW at a time. */
  private readonly diskMs = new Float64Array(WINDOW)
  private timed = 0
  private readonly coreWait = new CoreWait()
  /** Records written on the calling thread and on the thread pool. */
  readonly writes = { onThread: 0, pool: 0 }
  private checkpointing: Promise<void> | undefined
  private readonly halfBytes: number

  private broken = false

  private constructor (private readonly fh: FileHandle, readonly size: number, from: JournalPosition, private readonly store: Checkpointer, public timing: Readonly<JournalTiming> = DEFAULT_TIMING) {
    this.seq = from.lastSeq
    this.checkpointed = from.checkpoint
    this.counter = from.counter + 1
    this.halfBytes = Math.floor((size - AREA_START) / 2)
    // Until the first checkpointAll, nothing is written: records after the checkpoint are still to be covered.
    this.broken = from.lastSeq > from.checkpoint
  }

  /**
   * Opens the journal at `path`, standing where `from` says (read by readJournal, or made by createJournal), for
   * writing. While its records after the checkpoint are not yet covered by one (replay applies them, then
   * checkpointAll covers them), the first append checkpoints everything first.
   */
  static async open (path: string, from: JournalPosition, store: Checkpointer): Promise<Journal> {
    const fh = await open(path, constants.O_RDWR | constants.O_DSYNC)
    const size = (await fh.stat()).size
    return new Journal(fh, size, from, store)
  }

  /** The sequence number of the last record written. */
  get lastSeq (): number { return this.seq }

  /**
   * Writes a batch's record; resolves with its sequence number once it is on the disk, or with undefined when the
   * batch is larger than half the journal (the caller makes that one durable with `checkpointAll`, a flush).
   */
  append (ops: readonly JournalOp[]): Promise<number | undefined> {
    return this.queue(async () => await this.write(rec => encodeBatch(rec, ops)))
  }

  /**
   * Writes a batch's record on the calling thread (see JournalTiming) when nothing is queued before it and nothing
   * has to be waited for: its sequence number once it is on the disk, or false when the batch has to go through
   * `append` instead. Throws when the write fails.
   */
  appendNow (ops: readonly JournalOp[]): number | false {
    if (this.queued > 0 || this.broken || (this.poolUntil !== 0 && performance.now() < this.poolUntil)) return false
    // Sized before it is encoded: a record that goes to `append` is encoded there, once.
    const bytes = batchRecordBytes(ops)
    if (bytes > this.timing.onThreadBytes || bytes > this.halfBytes) return false
    if (this.pos + bytes > this.halfBytes) {
      // The other half is free only once its checkpoint is done; waiting for it is append's.
      if (this.halfLast[1 - this.half] !== 0 || this.checkpointing !== undefined) return false
      this.turnHalf()
    }
    const seq = this.seq + 1
    const rec = encodeBatch(seq, ops, bytes)
    const at = this.claim(rec, seq)
    const waited = this.coreWait.ms()
    const started = performance.now()
    try {
      for (let done = 0; done < rec.length;) done += writeSync(this.fh.fd, rec, done, rec.length - done, at + done)
    } catch (err) {
      this.broken = true
      throw err
    }
    this.halfLast[this.half] = seq
    this.writes.onThread++
    this.timeWrite(started, waited)
    return seq
  }

  /** Sends records to the thread pool for a while when the disk was slow for writes on the calling thread. */
  private timeWrite (started: number, waited: number): void {
    const now = performance.now()
    const disk = now - started - (this.coreWait.ms() - waited)
    this.diskMs[this.timed++] = disk
    let slow = disk > this.timing.stallMs
    if (!slow && this.timed === WINDOW) {
      const sorted = this.diskMs.slice().sort()
      slow = (sorted[WINDOW / 2 - 1]! + sorted[WINDOW / 2]!) / 2 > this.timing.slowMedianMs
    }
    if (this.timed === WINDOW || slow) this.timed = 0
    this.poolUntil = slow ? now + this.timing.poolMs : 0
  }

  /** Records that the batch `seq` did not reach LevelDB, so that replay skips it. */
  cancel (seq: number): Promise<number | undefined> {
    return this.queue(async () => await this.write(rec => encodeCancel(rec, seq)))
  }

  /** Runs `fn` after every append, cancel and checkpoint queued before it. */
  private queue<T> (fn: () => Promise<T>): Promise<T> {
    this.queued++
    const run = this.tail.then(fn)
    this.tail = run.then(() => { this.queued-- }, () => { this.queued-- })
    return run
  }

  /** Takes the place of record `seq` at the end of the current half: its offset in the file. */
  private claim (rec: Buffer, seq: number): number {
    const at = AREA_START + this.half * this.halfBytes + this.pos
    this.pos += rec.length
    this.seq = seq
    return at
  }

  private async write (make: (seq: number) => Buffer): Promise<number | undefined> {
    if (this.broken) await this.coverAll()
    const seq = this.seq + 1
    const rec = make(seq)
    if (rec.length > this.halfBytes) return undefined
    if (this.pos + rec.length > this.halfBytes) await this.switchHalf()
    const at = this.claim(rec, seq)
    try {
      await writeAt(this.fh, rec, at)
      this.writes.pool++
    } catch (err) {
      // The half may now hold a torn record, and replay stops at it: nothing more is written before a checkpoint
      // covers every record so far.
      this.broken = true
      throw err
    }
    this.halfLast[this.half] = seq
    return seq
  }

  /** Moves writing to the other half (once its checkpoint is done) and checkpoints the full one. */
  private async switchHalf (): Promise<void> {
    const other = 1 - this.half
    while (this.halfLast[other] !== 0) await (this.checkpointing ?? this.checkpoint(other))
    this.turnHalf()
  }

  /** Moves writing to the other half, which its checkpoint has freed, and starts the full one's checkpoint. */
  private turnHalf (): void {
    const full = this.half
    const upTo = this.seq
    this.half = 1 - full
    this.pos = 0
    this.checkpointing = this.checkpoint(full, upTo)
    this.checkpointing.catch(() => undefined)
  }

  /** Flushes LevelDB and records that everything up to `upTo` (default: every record so far) is in it. */
  private async checkpoint (half: number, upTo = this.seq): Promise<void> {
    try {
      await this.store.flush()
      await this.writeHeader(Math.max(upTo, this.checkpointed))
      if (this.halfLast[half]! <= upTo) this.halfLast[half] = 0
    } finally {
      this.checkpointing = undefined
    }
  }

  private async writeHeader (checkpoint: number): Promise<void> {
    const counter = this.counter
    await writeAt(this.fh, encodeHeader({ counter, checkpoint, size: this.size }), (counter % 2) * SLOT)
    // Only after the write: a failed (perhaps torn) one is retried in the same slot, never in the slot that holds
    // the last whole header.
    this.counter++
    this.checkpointed = checkpoint
  }

  /**
   * Waits for the appends in flight, flushes LevelDB and checkpoints every record, so that nothing in the journal
   * is left to replay; writing starts again at the first half.
   */
  checkpointAll (): Promise<void> {
    return this.queue(async () => { await this.coverAll() })
  }

  private async coverAll (): Promise<void> {
    while (this.checkpointing !== undefined) await this.checkpointing.catch(() => undefined)
    if (this.seq > this.checkpointed) {
      await this.store.flush()
      await this.writeHeader(this.seq)
    }
    this.half = 0
    this.pos = 0
    this.halfLast[0] = 0
    this.halfLast[1] = 0
    this.broken = false
  }

  /** Checkpoints everything and closes the file. */
  async close (): Promise<void> {
    this.coreWait.close()
    try { await this.checkpointAll() } finally { await this.fh.close() }
  }

  /** Closes the file without a checkpoint (LevelDB is closed already): the next open replays what is left. */
  async abandon (): Promise<void> {
    this.coreWait.close()
    await this.tail
    await this.fh.close()
  }
}
