// A member's last ten minutes on the coach page, drawn with uPlot (served
// from node_modules) in the #member-detail panel.
import uPlot from '/web/vendor/uplot/uPlot.esm.js'

const panel = document.getElementById('member-detail')
const title = document.getElementById('detail-title')
const box = document.getElementById('chart')
const status = document.getElementById('chart-status')
let chart = null

document.getElementById('detail-close').addEventListener('click', () => { panel.hidden = true })

/** Fetches `source` ({ from, to, paused, points: [[ms, bpm], ...] }) and draws it for `name`. */
export async function showChart (source, name) {
  panel.hidden = false
  title.textContent = `${name}: last 10 minutes`
  status.textContent = 'Loading…'
  box.dataset.points = ''
  chart?.destroy()
  chart = null
  box.replaceChildren()
  panel.scrollIntoView({ block: 'nearest' })
  const res = await fetch(source, { cache: 'no-store', credentials: 'same-origin' })
  if (!res.ok) { status.textContent = `Could not load ${name}'s readings.`; return }
  const { points, from, to, paused } = await res.json()
  const xs = points.map(p => p[0] / 1000)
  const ys = points.map(p => p[1])
  // eslint-disable-next-line new-cap -- uPlot names its constructor in lower case
  chart = new uPlot({
    width: Math.max(320, box.clientWidth),
    height: 260,
    scales: { x: { time: true, range: () => [from / 1000, to / 1000] }, y: { range: (_u, min, max) => min == null || max == null ? [40, 200] : [Math.min(min, max - 10) - 5, Math.max(max, min + 10) + 5] } },
    axes: [{ stroke: '#111' }, { stroke: '#111', label: 'bpm' }],
    series: [{}, { label: 'Heart rate', stroke: '#c00020', width: 3, points: { show: points.length < 3 }, value: (_u, v) => v == null ? '--' : `${v} bpm` }]
  }, [xs, ys], box)
  box.dataset.points = String(points.length)
  status.textContent = paused
    ? `${name} hides from room displays: no readings to show.`
    : points.length === 0 ? `No readings from ${name} in the last 10 minutes.` : `${points.length} ${points.length === 1 ? 'reading' : 'readings'}, latest ${ys[ys.length - 1]} bpm.`
}
