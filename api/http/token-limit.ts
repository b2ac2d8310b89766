// The per-token request limit of the data API (service-notes "Rate limit";
// config http.rate_limit_per_second): one counter per access token, shared by
// every guarded route, in windows of one second that start with a token's
// first request. Answers carry the standard
// RateLimit-Limit / -Remaining / -Reset headers, and a refused request 429
// with Retry-After.
//
// Counting is synchronous: a parallel burst cannot read a count that another
// request of the burst has not yet written (each request counts before it
// yields), so the (limit+1)th request of a burst is refused.

/** One token's window. */
interface Window { count: number, resetAt: number }

/** What a counted request is told (the header values). */
export interface LimitState {
  /** Within the limit. */
  ok: boolean
  limit: number
  remaining: number
  /** Whole seconds until the window ends (RateLimit-Reset, and Retry-After when refused). */
  resetS: number
}

/** Windows kept before the expired ones are swept (only authenticated tokens have one). */
const SWEEP_AT = 10_000

export class TokenRateLimit {
  private readonly windows = new Map<string, Window>()

  constructor (readonly limit: number, private readonly windowMs = 1000) {}

  private windowOf (key: string, now: number): Window {
    let w = this.windows.get(key)
    if (w === undefined || w.resetAt <= now) {
      if (w === undefined && this.windows.size >= SWEEP_AT) this.sweep(now)
      w = { count: 0, resetAt: now + this.windowMs }
      this.windows.set(key, w)
    }
    return w
  }

  private sweep (now: number): void {
    for (const [k, w] of this.windows) if (w.resetAt <= now) this.windows.delete(k)
  }

  private counted (w: Window, now: number): LimitState {
    w.count++
    return { ok: w.count <= this.limit, limit: this.limit, remaining: Math.max(0, this.limit - w.count), resetS: Math.ceil((w.resetAt - now) / 1000) }
  }

  /** Counts one request of `key` and says whether it is within the limit. */
  take (key: string, now = Date.now()): LimitState {
    return this.counted(this.windowOf(key, now), now)
  }
}
