// A small in-memory sliding-window counter for failed attempts (wrong device
// codes, wrong passwords, wrong admin tokens), keyed by session, address,
// username. Not @fastify/rate-limit: that plugin counts requests under one key
// each, while these limits count failures under several keys at once and give
// back the attempts that succeed (docs/api.md "Rate limits").
//
// An attempt is reserved before the slow check runs (scrypt, a store read), so
// a parallel burst cannot slip between "is it blocked?" and "record the
// failure": the (limit+1)th concurrent attempt is refused at once.

/** A reserved attempt; `succeeded()` gives it back (a success is not a failure). */
export interface Attempt { succeeded: () => void }

/**
 * What the sign-in and device pages count wrong attempts with: this module's AttemptLimiter in one process, or a
 * counter that several processes share (the hub's, hub/store/pg-attempts.ts), so that a limit holds however many
 * instances an attacker's attempts are spread over. `reserve` counts the attempt before it resolves, so the
 * caller awaits it before the slow check it guards.
 */
export interface AttemptCounter {
  /** Counts an attempt under every key, or answers null (and counts nothing) when any key is at its limit. */
  reserve (keys: string[]): Attempt | null | Promise<Attempt | null>
  /** Seconds until every key is below the limit again (for Retry-After); at least 1. */
  retryAfter (keys: string[]): number | Promise<number>
}

/** Keys kept at most; beyond it the oldest keys that are not locked out go first. */
export const MAX_KEYS = 50_000

export class AttemptLimiter implements AttemptCounter {
  /** key → times of the attempts in the window, oldest first; Map order = least recently touched first. */
  private readonly hits = new Map<string, number[]>()

  constructor (
    private readonly limit: number,
    private readonly windowMs: number,
    private readonly now: () => number = Date.now,
    private readonly maxKeys = MAX_KEYS
  ) {}

  private recent (key: string, since: number): number[] {
    const list = this.hits.get(key)
    if (list === undefined) return []
    const kept = list.filter(t => t > since)
    if (kept.length === 0) this.hits.delete(key)
    else if (kept.length !== list.length) this.hits.set(key, kept)
    return kept
  }

  /** True when any of the keys has `limit` attempts in the window. */
  blocked (keys: string[]): boolean {
    const since = this.now() - this.windowMs
    return keys.some(k => this.recent(k, since).length >= this.limit)
  }

  /** Seconds until every key is below the limit again (for Retry-After); at least 1. */
  retryAfter (keys: string[]): number {
    const now = this.now()
    let until = now
    for (const k of keys) {
      const list = this.recent(k, now - this.windowMs)
      const freeing = list[list.length - this.limit]
      if (list.length >= this.limit && freeing !== undefined) until = Math.max(until, freeing + this.windowMs)
    }
    return Math.max(1, Math.ceil((until - now) / 1000))
  }

  /**
   * Counts an attempt under every key, or returns null (and counts nothing)
   * when any key is already at the limit. Synchronous: call it before
   * awaiting the check it guards.
   */
  reserve (keys: string[]): Attempt | null {
    if (this.blocked(keys)) return null
    const at = this.now()
    for (const k of keys) {
      const list = this.hits.get(k) ?? []
      list.push(at)
      // Re-insert so that Map order stays "least recently touched first" for eviction.
      this.hits.delete(k)
      this.hits.set(k, list)
    }
    if (this.hits.size > this.maxKeys) this.evict()
    let given = false
    return {
      succeeded: () => {
        if (given) return
        given = true
        for (const k of keys) {
          const list = this.hits.get(k)
          const i = list?.lastIndexOf(at) ?? -1
          if (list === undefined || i < 0) continue
          list.splice(i, 1)
          if (list.length === 0) this.hits.delete(k)
        }
      }
    }
  }

  /**
   * Brings the table back to 90 % of its size: drops keys with nothing left
   * in the window, then the least recently touched keys that are not locked
   * out, and only then (a table full of lockouts) the oldest lockouts. An
   * attacker who fills the table with fresh keys therefore resets nobody's
   * lockout. One pass per 10 % of growth keeps the cost amortised.
   */
  private evict (): void {
    const target = Math.floor(this.maxKeys * 0.9)
    const since = this.now() - this.windowMs
    for (const k of [...this.hits.keys()]) this.recent(k, since)
    for (const [k, list] of this.hits) {
      if (this.hits.size <= target) return
      if (list.length < this.limit) this.hits.delete(k)
    }
    for (const k of this.hits.keys()) {
      if (this.hits.size <= target) return
      this.hits.delete(k)
    }
  }

  /** Number of keys held (for tests). */
  get size (): number { return this.hits.size }
}
