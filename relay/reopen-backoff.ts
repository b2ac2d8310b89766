// Exponential backoff with full jitter for reopening a port or device that went
// away (serial source, MIDI output). Pure: the caller owns the timer.

export interface BackoffOptions {
  /** First delay ceiling in milliseconds. */
  initialMs: number
  /** Largest delay ceiling in milliseconds. */
  maxMs: number
}

export const DEFAULT_REOPEN: BackoffOptions = { initialMs: 500, maxMs: 30_000 }

/**
 * Delay before reopen attempt number `attempt` (0 for the first retry):
 * a ceiling of initialMs * 2^attempt capped at maxMs, and a delay drawn
 * uniformly from [ceiling/2, ceiling] so that many relays (or many ports on
 * one relay) do not retry in step, while a retry never comes sooner than half
 * the ceiling.
 */
export function reopenDelay (attempt: number, options: BackoffOptions, random: () => number = Math.random): number {
  const initial = Math.max(1, options.initialMs)
  const max = Math.max(initial, options.maxMs)
  const ceiling = Math.min(max, initial * 2 ** Math.min(Math.max(0, attempt), 30))
  return Math.round(ceiling / 2 + random() * (ceiling / 2))
}
