// A small in-memory sliding-window counter for failed attempts (wrong device
// codes, wrong passwords), keyed by session and by client address.

export class AttemptLimiter {
  private readonly hits = new Map<string, number[]>()

  constructor (private readonly limit: number, private readonly windowMs: number, private readonly now: () => number = Date.now) {}

  /** True when any of the keys already has `limit` failures in the window. */
  blocked (keys: string[]): boolean {
    const since = this.now() - this.windowMs
    return keys.some(k => (this.hits.get(k) ?? []).filter(t => t > since).length >= this.limit)
  }

  fail (keys: string[]): void {
    const now = this.now()
    const since = now - this.windowMs
    if (this.hits.size > 50_000) this.hits.clear()
    for (const k of keys) {
      const list = (this.hits.get(k) ?? []).filter(t => t > since)
      list.push(now)
      this.hits.set(k, list)
    }
  }
}
