// Pure rules of the bpm widget (no DOM), shared by the page and the tests.

export const DEFAULT_TEXT_COLOR = '#ffffff'
export const DEFAULT_HEART_COLOR = '#ff2d55'

/**
 * The configuration as the page uses it. Unknown keys are ignored; a range
 * needs numeric `from` <= `to` and a valid colour; `heartEnabled` defaults to
 * true. `isColor` decides what a valid colour is (CSS.supports in the browser).
 */
export function normalizeConfig (raw, isColor) {
  const cfg = typeof raw === 'object' && raw !== null && !Array.isArray(raw) ? raw : {}
  const ranges = Array.isArray(cfg.ranges)
    ? cfg.ranges.filter(r => typeof r === 'object' && r !== null &&
        Number.isFinite(r.from) && Number.isFinite(r.to) && r.from <= r.to &&
        typeof r.color === 'string' && isColor(r.color))
      .map(r => ({ from: r.from, to: r.to, color: r.color }))
    : []
  const color = (v, d) => typeof v === 'string' && isColor(v) ? v : d
  return {
    ranges,
    heartColor: color(cfg.heartColor, DEFAULT_HEART_COLOR),
    textColor: color(cfg.textColor ?? cfg.color, DEFAULT_TEXT_COLOR),
    heartEnabled: cfg.heartEnabled !== false,
    font: typeof cfg.font === 'string' && cfg.font.length > 0 && cfg.font.length <= 200 ? cfg.font : null
  }
}

/** The colour of a bpm: the first range with from <= bpm <= to, else the fallback. */
export function colorFor (bpm, ranges, fallback) {
  for (const r of ranges) if (bpm >= r.from && bpm <= r.to) return r.color
  return fallback
}

/** Seconds per heartbeat (the CSS animation duration), for bpm clamped to 20..300. */
export function beatSeconds (bpm) {
  const b = Math.min(300, Math.max(20, bpm))
  return Math.round((60 / b) * 1000) / 1000
}

/** The bpm of a widget stream message `{measured_at, data: {heart_rate}}`, or null. */
export function bpmOf (msg) {
  const hr = msg?.data?.heart_rate
  return typeof hr === 'number' && Number.isFinite(hr) && hr > 0 && typeof msg.measured_at === 'number' ? Math.round(hr) : null
}
