// Class mode on the room display and the coach page (pure): the clock texts
// of a running class and the rows of its results. The server renders the
// display's first paint with the same functions (api/web/overlay.ts).

/** m:ss, or h:mm:ss from an hour on; negative times count as 0. */
export function clock (ms) {
  const s = Math.max(0, Math.floor(ms / 1000))
  const h = Math.floor(s / 3600); const m = Math.floor((s % 3600) / 60); const sec = s % 60
  const two = n => String(n).padStart(2, '0')
  return h > 0 ? `${h}:${two(m)}:${two(sec)}` : `${m}:${two(sec)}`
}

/** The elapsed and remaining time of a class at `now` (server clock, ms); an ended class stops at its end. */
export function classTimes (view, now) {
  const end = view.ended_at ?? Math.min(now, view.planned_end)
  const at = Math.min(now, end)
  return {
    elapsed: `${clock(at - view.started_at)} ${view.ended_at === null ? 'elapsed' : 'in all'}`,
    remaining: view.ended_at === null ? `${clock(view.planned_end - now)} left` : 'ended'
  }
}

/** "1 point" / "12 points". */
export function pointsText (n) {
  return `${n} ${n === 1 ? 'point' : 'points'}`
}

/**
 * The results a screen shows: the members `visible` keeps, ranked by effort
 * points (the view's order: highest first, ties by name), each with its rank
 * among them; with a part (several screens) the ranked list is cut into
 * `count` runs whose sizes differ by at most one, and screen `index` shows run
 * `index`, so rank 1 is on the first screen.
 */
export function resultRows (members, visible, part = null) {
  const ranked = members.filter(visible).map((m, i) => ({ ...m, rank: i + 1 }))
  for (let i = 1; i < ranked.length; i++) {
    // Equal points share a rank.
    if (ranked[i].effort_points === ranked[i - 1].effort_points) ranked[i].rank = ranked[i - 1].rank
  }
  if (part === null) return ranked
  const from = Math.floor(((part.index - 1) * ranked.length) / part.count)
  const to = Math.floor((part.index * ranked.length) / part.count)
  return ranked.slice(from, to)
}
