// What the relay may ask api about OAuth, so that the token store, its
// digests and the token-watch timers stay api's: the embedded broker
// authenticates an app by its access token and ends the app's connection when
// that token stops working (revoked or expired); the composition root creates
// the admin token and hands api its digest.
import { digest, GUID_RE, newToken } from './store/secrets.ts'
import type { TokenStore } from './store/types.ts'
import { watchAccessToken, type TokenEnd } from './store/token-watch.ts'

export type { TokenEnd }

export type AppAuthResult =
  | { ok: true, profile_id: string | null, scopes: string[], digest: string, expires_at: number }
  | { ok: false, reason: 'not_found' | 'expired' }

/** Apps' access tokens, as the broker sees them. */
export interface AppAuth {
  /** True when `secret` has the shape of an access token (a GUID), as opposed to a device's password. */
  isAccessToken (secret: string): boolean
  /** The token's owner, scopes and expiry, with the digest that names it; never logs or keeps the token. */
  authenticate (token: string, now?: number): Promise<AppAuthResult>
  /** Calls `end` once when the token with this digest is revoked or reaches expiresAt; returns stop. */
  watch (tokenDigest: string, expiresAt: number, end: (why: TokenEnd) => void): () => void
}

export function appAuth (tokens: TokenStore): AppAuth {
  return {
    isAccessToken: secret => GUID_RE.test(secret),
    authenticate: async (token, now) => {
      const found = await tokens.lookup(token, now)
      if (!found.ok) return found
      return { ok: true, profile_id: found.token.profile_id, scopes: found.token.scopes, digest: found.digest, expires_at: found.token.expires_at }
    },
    watch: (tokenDigest, expiresAt, end) => watchAccessToken(tokens, tokenDigest, expiresAt, end)
  }
}

/** A new admin token (data-dir/admin-token). */
export function newAdminToken (): string { return newToken() }

/** The digest api compares a presented admin token with (Services.adminTokenDigest). */
export function adminTokenDigest (token: string): string { return digest(token) }
