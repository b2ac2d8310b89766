// The room display's grid (pure): columns x rows for n tiles in a width x
// height area with gaps, chosen so that the tiles are as large as possible for
// a preferred width:height aspect (a tile wider than that gains nothing).

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
