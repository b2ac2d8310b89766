// Today's heart rate on the member page, drawn with uPlot (served from node_modules).
import uPlot from '/web/vendor/uplot/uPlot.esm.js'

const box = document.getElementById('chart')
const status = document.getElementById('chart-status')

async function draw () {
  const res = await fetch(box.dataset.source, { cache: 'no-store', credentials: 'same-origin' })
  if (!res.ok) { status.textContent = 'Could not load today\'s readings.'; return }
  const { points, resolution } = await res.json()
  if (points.length === 0) { status.textContent = 'No readings today yet.'; box.dataset.points = '0'; return }
  const xs = points.map(p => p[0] / 1000)
  const ys = points.map(p => p[1])
  box.replaceChildren()
  const width = Math.max(320, box.clientWidth)
  const chart = new uPlot({
    width,
    height: 300,
    scales: { x: { time: true } },
    axes: [{ stroke: '#111' }, { stroke: '#111', label: 'bpm' }],
    series: [{}, { label: 'Heart rate', stroke: '#c00020', width: 2, value: (_u, v) => v == null ? '--' : `${v} bpm` }]
  }, [xs, ys], box)
  box.dataset.points = String(points.length)
  status.textContent = `${points.length} ${resolution === 'minute' ? 'minute averages' : 'readings'} today, latest ${ys[ys.length - 1]} bpm.`
  window.addEventListener('resize', () => chart.setSize({ width: Math.max(320, box.clientWidth), height: 300 }))
}

draw().catch(() => { status.textContent = 'Could not draw the chart.' })
