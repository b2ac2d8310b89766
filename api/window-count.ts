// Readings counted per window of time: the store (which groups are sync batches) and the ingest pipeline (when the
// writer lingers) both decide by the rate of the last full window and of the current one so far.

/** A count per window: the current window's so far, and the full window just before it. */
export class WindowCount {
  private start = 0
  /** The current window's count so far. */
  count = 0
  /** The count of the window just before the current one (0 when that one was not just before: a quiet spell). */
  last = 0

  /** Adds `n`, starting a new window first when `windowMs` has passed since the current one began. */
  add (n: number, windowMs: number): this {
    const now = performance.now()
    const elapsed = now - this.start
    if (elapsed >= windowMs) {
      this.last = elapsed < 2 * windowMs ? this.count : 0
      this.start = now
      this.count = 0
    }
    this.count += n
    return this
  }
}
