// Ends something (a WebSocket stream, an MQTT app connection) when the access
// token it was opened with stops working: on the store's revocation event, and
// at the token's expiry by a timer. No polling. setTimeout cannot wait longer
// than 2^31 - 1 ms (about 24.8 days), so a longer lifetime is waited for in
// steps.
import type { TokenStore } from './types.ts'

export const MAX_TIMER_MS = 2 ** 31 - 1

export type TokenEnd = 'revoked' | 'expired'

export interface WatchOptions {
  now?: () => number
}

/**
 * Calls `end` once when the access token with this digest is revoked or
 * reaches expiresAt. Returns a function that stops watching (call it when the
 * stream closes for any other reason).
 */
export function watchAccessToken (tokens: TokenStore, digest: string, expiresAt: number, end: (why: TokenEnd) => void, options: WatchOptions = {}): () => void {
  const now = options.now ?? Date.now
  let done = false
  let timer: NodeJS.Timeout | undefined
  const finish = (why: TokenEnd): void => {
    if (done) return
    stop()
    end(why)
  }
  const arm = (): void => {
    const left = expiresAt - now()
    if (left <= 0) { finish('expired'); return }
    timer = setTimeout(arm, Math.min(left, MAX_TIMER_MS))
    timer.unref()
  }
  const unsubscribe = tokens.onRevoked(digests => { if (digests.has(digest)) finish('revoked') })
  function stop (): void {
    done = true
    unsubscribe()
    if (timer !== undefined) clearTimeout(timer)
  }
  arm()
  // A revocation stored between the caller's lookup and this subscription has no event left to
  // see: look the token up once more (cache dropped before the delete, so this reads the store).
  if (!done) {
    tokens.isLive(digest, now()).then(live => { if (!live) finish('revoked') }, () => { finish('revoked') })
  }
  return stop
}
