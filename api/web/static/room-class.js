// The class on the room display (issue 43): the class bar of the header
// (name, elapsed and remaining time, ticking every second) and the results
// after the class, a leaderboard by effort points with each member's zone
// minutes. static/room.js owns the tiles and tells this module what to show.
import { classTimes, pointsText, resultRows } from './class-view.js'
import { ZONE_NAMES } from './zones.js'
import { el } from './dom.js'

const $ = id => document.getElementById(id)

/** One results row: rank, name, points and the minutes in zones 1..5. */
function resultRow (m) {
  const li = el('li', 'result')
  li.dataset.profileId = m.profile_id
  li.dataset.rank = String(m.rank)
  const zones = el('span', 'zone-minutes')
  m.zone_minutes.forEach((n, i) => {
    const z = el('span', 'zm', `${n}′`)
    z.dataset.zone = String(i + 1)
    z.title = `${ZONE_NAMES[i + 1]}: ${n} min`
    z.setAttribute('aria-label', `zone ${i + 1}: ${n} ${n === 1 ? 'minute' : 'minutes'}`)
    zones.append(z)
  })
  const row = el('div', 'row')
  // The number only (the title says they are effort points), so that three columns of rows fit.
  const points = el('span', 'rpoints', String(m.effort_points))
  points.setAttribute('aria-label', pointsText(m.effort_points))
  row.append(el('span', 'rank', String(m.rank)), el('span', 'rname', m.display_name), points, zones)
  li.append(row)
  return li
}

/**
 * The class parts of the display. `now()` is the server's clock; `onEnd()`
 * is called when the results' time is up.
 */
export function classDisplay ({ now, onEnd }) {
  const bar = $('class-bar'); const name = $('class-name'); const elapsed = $('class-elapsed'); const remaining = $('class-remaining')
  const results = $('results'); const title = $('results-title'); const list = $('results-list')
  let view = null
  let timer

  function tick () {
    if (view === null) return
    const t = classTimes(view, now())
    elapsed.textContent = t.elapsed
    remaining.textContent = view.state === 'running' ? t.remaining : 'results'
  }
  setInterval(tick, 1000)

  return {
    /** Shows the class bar for a view (null: none) and, after the class, the results of the members `visible` keeps. */
    show (v, visible, part) {
      view = v
      clearTimeout(timer)
      bar.hidden = v === null
      name.textContent = v?.name ?? ''
      tick()
      results.hidden = v?.state !== 'results'
      if (v?.state !== 'results') { list.replaceChildren(); return }
      title.textContent = `Results · ${v.name} · effort points and minutes in zones 1 to 5`
      const rows = resultRows(v.members, visible, part)
      list.replaceChildren(...rows.map(resultRow))
      if (rows.length === 0) list.append(el('li', 'result-empty', 'No results to show.'))
      // Every row on the screen: up to 10 in one column, then two, then three; at least 6 rows' height each.
      const cols = rows.length <= 10 ? 1 : rows.length <= 24 ? 2 : 3
      list.style.setProperty('--rcols', String(cols))
      list.style.setProperty('--rrows', String(Math.max(6, Math.ceil(rows.length / cols))))
      if (v.results_until !== null) timer = setTimeout(onEnd, Math.max(0, v.results_until - now()))
    }
  }
}
