// The room display's grid (pure): columns x rows for n tiles in a width x
// height area with gaps, chosen so that the tiles are as large as possible for
// a preferred width:height aspect (a tile wider than that gains nothing), and
// the members of one screen when several screens share a room (part=1of2).

export const TILE_ASPECT = 1.4

export function gridFor (n, width, height, gap, aspect = TILE_ASPECT) {
  if (!(n > 0) || !(width > 0) || !(height > 0)) return { cols: 1, rows: 1 }
  let best = { cols: 1, rows: n, size: -Infinity }
  for (let cols = 1; cols <= n; cols++) {
    const rows = Math.ceil(n / cols)
    const w = (width - gap * (cols - 1)) / cols
    const h = (height - gap * (rows - 1)) / rows
    const size = Math.min(w, h * aspect)
    if (size > best.size) best = { cols, rows, size }
  }
  return { cols: best.cols, rows: best.rows }
}

/**
 * `part=<i>of<n>` of a display link (several screens per room): { index, count }
 * with 1 <= index <= count <= 8, null when absent, or 'bad' for anything else.
 */
export function parsePart (value) {
  if (value === undefined || value === null || value === '') return null
  const m = /^([1-8])of([1-8])$/.exec(String(value))
  if (m === null) return 'bad'
  const index = Number(m[1]); const count = Number(m[2])
  return index <= count ? { index, count } : 'bad'
}

/**
 * The members one screen of a split display shows: all members in a stable
 * order (by name, then profile id; never by heart rate, so a tile does not
 * jump between screens), cut into `count` runs whose sizes differ by at most
 * one; screen `index` takes run `index`. Every member is on exactly one screen.
 */
export function partMembers (members, part) {
  if (part === null) return members
  const sorted = [...members].sort((a, b) => {
    const x = String(a.display_name).toLowerCase(); const y = String(b.display_name).toLowerCase()
    if (x !== y) return x < y ? -1 : 1
    return a.profile_id < b.profile_id ? -1 : a.profile_id > b.profile_id ? 1 : 0
  })
  const from = Math.floor(((part.index - 1) * sorted.length) / part.count)
  const to = Math.floor((part.index * sorted.length) / part.count)
  return sorted.slice(from, to)
}
