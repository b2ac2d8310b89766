// The Cookie and Set-Cookie headers (RFC 6265), for the sign-in session only.
// No cookie library is installed; this is the one place cookies are handled.

/** Parses a Cookie header; the first occurrence of a name wins, bad pairs are skipped. */
export function parseCookies (header: string | undefined): Map<string, string> {
  const out = new Map<string, string>()
  if (typeof header !== 'string' || header.length > 8192) return out
  for (const part of header.split(';')) {
    const eq = part.indexOf('=')
    if (eq <= 0) continue
    const name = part.slice(0, eq).trim()
    let value = part.slice(eq + 1).trim()
    if (value.startsWith('"') && value.endsWith('"') && value.length >= 2) value = value.slice(1, -1)
    if (name !== '' && !out.has(name)) out.set(name, value)
  }
  return out
}

export interface CookieOptions {
  maxAgeSeconds?: number
  secure?: boolean
  path?: string
}

const TOKEN = /^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/
const VALUE = /^[A-Za-z0-9!#$%&'()*+\-./:<=>?@[\]^_`{|}~]*$/

/** A Set-Cookie value, always HttpOnly and SameSite=Lax. */
export function serializeCookie (name: string, value: string, options: CookieOptions = {}): string {
  if (!TOKEN.test(name)) throw new TypeError('invalid cookie name')
  if (!VALUE.test(value)) throw new TypeError('invalid cookie value')
  const parts = [`${name}=${value}`, `Path=${options.path ?? '/'}`, 'HttpOnly', 'SameSite=Lax']
  if (options.maxAgeSeconds !== undefined) parts.push(`Max-Age=${Math.max(0, Math.floor(options.maxAgeSeconds))}`)
  if (options.secure === true) parts.push('Secure')
  return parts.join('; ')
}
