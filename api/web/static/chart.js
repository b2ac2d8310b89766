// Today's heart rate on the member page (and a class's on its page), drawn with uPlot (served from node_modules).
// The time axis always has an explicit range inside today's window [from, to]
// (sent by /me/readings/today): uPlot's own range for one point, or for none,
// is years wide. The drawn range is kept in data-x-min / data-x-max (ms).
import uPlot from '/web/vendor/uplot/uPlot.esm.js'

const box = document.getElementById('chart')
const status = document.getElementById('chart-status')
const MIN_SPAN_S = 10 * 60

/** The x range in seconds: the readings' span, at least ten minutes around them, inside [from, to]. */
export function xRange (xs, fromS, toS) {
  if (xs.length === 0) return [fromS, Math.max(toS, fromS + 60)]
  let lo = xs[0]; let hi = xs[xs.length - 1]
  if (hi - lo < MIN_SPAN_S) {
    const mid = (lo + hi) / 2
    lo = mid - MIN_SPAN_S / 2; hi = mid + MIN_SPAN_S / 2
  }
  lo = Math.max(lo, fromS); hi = Math.min(hi, toS)
  if (hi <= lo) hi = lo + 60
  return [lo, hi]
}

async function draw () {
  const res = await fetch(box.dataset.source, { cache: 'no-store', credentials: 'same-origin' })
  if (!res.ok) { status.textContent = 'Could not load today\'s readings.'; return }
  const { points, resolution, from, to } = await res.json()
  const xs = points.map(p => p[0] / 1000)
  const ys = points.map(p => p[1])
  const fromS = Number.isFinite(from) ? from / 1000 : (xs[0] ?? Date.now() / 1000) - 3600
  const toS = Number.isFinite(to) ? to / 1000 : Math.max(xs[xs.length - 1] ?? 0, Date.now() / 1000)
  const [lo, hi] = xRange(xs, fromS, toS)
  box.replaceChildren()
  const width = Math.max(320, box.clientWidth)
  // eslint-disable-next-line new-cap -- uPlot names its constructor in lower case
  const chart = new uPlot({
    width,
    height: 300,
    scales: { x: { time: true, range: () => [lo, hi] }, y: { range: (_u, min, max) => min == null || max == null ? [40, 200] : [Math.min(min, max - 10) - 5, Math.max(max, min + 10) + 5] } },
    axes: [{ stroke: '#111' }, { stroke: '#111', label: 'bpm' }],
    series: [{}, { label: 'Heart rate', stroke: '#c00020', width: 2, points: { show: points.length < 3 }, value: (_u, v) => v == null ? '--' : `${v} bpm` }],
    hooks: {
      setScale: [(u, key) => {
        if (key !== 'x') return
        box.dataset.xMin = String(Math.round(u.scales.x.min * 1000))
        box.dataset.xMax = String(Math.round(u.scales.x.max * 1000))
      }]
    }
  }, [xs, ys], box)
  box.dataset.points = String(points.length)
  // data-period names the chart's window in its status ("today" on /me, "in this class" on a class page).
  const period = box.dataset.period ?? 'today'
  status.textContent = points.length === 0
    ? `No readings ${period} yet.`
    : `${points.length} ${resolution === 'minute' ? 'minute averages' : 'readings'} ${period}, latest ${ys[ys.length - 1]} bpm.`
  window.addEventListener('resize', () => chart.setSize({ width: Math.max(320, box.clientWidth), height: 300 }))
}

draw().catch(() => { status.textContent = 'Could not draw the chart.' })
