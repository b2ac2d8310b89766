// The scopes of spec section 5.4.
export const ALL_SCOPES = [
  'data:heart_rate:read', 'data:heart_rate:write', 'profile:read', 'profile:create',
  'widgets:read', 'widgets:update', 'data:statistics:read', 'data:ingestion_pause:read',
  'data:ingestion_pause:write', 'game_mod:configuration:read', 'game_mod:configuration:write',
  'chatapp:rich_presence:config:read', 'chatapp:rich_presence:config:write', 'data:room:read'
] as const

export type Scope = typeof ALL_SCOPES[number]

const KNOWN = new Set<string>(ALL_SCOPES)

/**
 * Parses a scope list; the spec gives both comma- and space-separated forms
 * (4.1), so both are accepted. Returns null when any scope is unknown or the
 * list is empty; duplicates are removed.
 */
export function parseScopes (text: string): string[] | null {
  if (typeof text !== 'string') return null
  const parts = text.split(/[\s,]+/).filter(s => s.length > 0)
  if (parts.length === 0) return null
  for (const p of parts) if (!KNOWN.has(p)) return null
  return [...new Set(parts)]
}
