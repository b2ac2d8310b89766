// Heart-rate zones of the room display (pure). The server sends each member's
// maximum heart rate (member config, else the user's, else 220 - age, else 190;
// api/web/zones.ts) and the zone lower bounds in percent (default 50..90).

export const DEFAULT_BOUNDS = [50, 60, 70, 80, 90]

/** Colours for black text (contrast ratio above 7:1); index 0 is below zone 1. */
export const ZONE_COLORS = ['#b8c2cc', '#9cc3ff', '#5cc8ff', '#4ee08a', '#ffc233', '#ff6b6b']
export const ZONE_NAMES = ['Rest', 'Zone 1 · very light', 'Zone 2 · light', 'Zone 3 · moderate', 'Zone 4 · hard', 'Zone 5 · maximum']

export function zoneOf (bpm, max, bounds = DEFAULT_BOUNDS) {
  const b = Array.isArray(bounds) && bounds.length === 5 && bounds.every(Number.isFinite) ? bounds : DEFAULT_BOUNDS
  const m = Number.isFinite(max) && max > 0 ? max : 190
  const percent = Math.round((bpm / m) * 100)
  let index = 0
  for (let i = 0; i < b.length; i++) if (percent >= b[i]) index = i + 1
  return { index, percent, name: ZONE_NAMES[index], color: ZONE_COLORS[index] }
}

/**
 * SVG polyline points for the trend: [t, bpm] pairs within windowMs of now,
 * scaled to w x h. The time axis starts at the oldest sample (at least a minute
 * back), so a short session still fills the width.
 */
export function trendPoints (samples, now, windowMs, w, h) {
  const recent = samples.filter(([t]) => t >= now - windowMs && t <= now + 1000)
  if (recent.length < 2) return ''
  const start = Math.min(recent[0][0], now - 60000)
  const span = Math.max(1, now - start)
  let lo = Infinity; let hi = -Infinity
  for (const [, b] of recent) { lo = Math.min(lo, b); hi = Math.max(hi, b) }
  lo -= 5; hi += 5
  return recent.map(([t, b]) => {
    const x = Math.min(w, ((t - start) / span) * w)
    const y = h - ((b - lo) / (hi - lo)) * h
    return `${x.toFixed(1)},${y.toFixed(1)}`
  }).join(' ')
}

/** Orders of the room display's tiles (`?order=` of the display link); 'effort' is a class's leaderboard. */
export const ORDERS = ['name', 'bpm', 'zone', 'effort']

/**
 * Tile order of the room display, the same on the server (first paint) and
 * in the page: a and b are { name, bpm, percent, zone, effort } with bpm null for a
 * member without a live reading (no signal, paused). 'name': by name;
 * 'bpm': live members by bpm, highest first; 'zone': by zone, then percent of
 * the maximum. Members without a reading follow, by name. 'effort': by the
 * class's effort points so far, highest first, then by name (a member
 * without points, or with no class running, counts 0).
 */
export function compareMembers (order, a, b) {
  if (order === 'effort') {
    const d = (b.effort ?? 0) - (a.effort ?? 0)
    if (d !== 0) return d
  }
  if (order === 'bpm' || order === 'zone') {
    const la = a.bpm !== null; const lb = b.bpm !== null
    if (la !== lb) return la ? -1 : 1
    if (la) {
      if (order === 'zone' && a.zone !== b.zone) return b.zone - a.zone
      const d = order === 'zone' ? b.percent - a.percent : b.bpm - a.bpm
      if (d !== 0) return d
    }
  }
  const x = a.name.toLowerCase(); const y = b.name.toLowerCase()
  return x < y ? -1 : x > y ? 1 : 0
}
