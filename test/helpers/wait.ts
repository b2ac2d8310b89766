// Event-loop-friendly waiting with a bound, for tests that watch a real system settle.

/** Resolves once `check` holds; rejects after `ms` naming `what`. */
export async function until (what: string, check: () => boolean | Promise<boolean>, ms = 45_000, everyMs = 25): Promise<void> {
  const deadline = Date.now() + ms
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`)
    await new Promise(resolve => setTimeout(resolve, everyMs))
  }
}

/** Resolves with the first value `fn` gives that is not undefined; rejects after `ms` naming `what`. */
export async function eventually<T> (what: string, fn: () => Promise<T | undefined>, ms = 60_000, everyMs = 250): Promise<T> {
  const deadline = Date.now() + ms
  for (;;) {
    const v = await fn()
    if (v !== undefined) return v
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`)
    await new Promise(resolve => setTimeout(resolve, everyMs))
  }
}
