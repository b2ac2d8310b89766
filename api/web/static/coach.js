// The coach's tablet (api/web/operator-coach.ts): the first state comes with
// the page (#coach-state), then the page follows the room's stream as the
// coach sees it (heart rates, also of the members hidden from displays, the
// class's room_class messages, members coming and going).
// A tile shows the bpm and zone, "no signal" after STALE_MS without a reading
// (the display's rule), the class's effort points and alert; the class's
// alerts are listed on top. Tapping a tile shows the member's last ten minutes.
import { openLive, wsUrl } from './live.js'
import { zoneOf } from './zones.js'
import { classTimes, pointsText } from './class-view.js'
import { showChart } from './coach-chart.js'

const root = document.getElementById('coach')
const roomId = root.dataset.roomId
const statusEl = document.getElementById('coach-class-status')
const alertsEl = document.getElementById('alerts')
const connEl = document.getElementById('connection')
const startForm = document.getElementById('start-form')
const endForm = document.getElementById('end-form')
/** A reading older than this is "no signal" (api/web/overlay.ts STALE_MS, the display's rule). */
const STALE_MS = 10000
const initial = JSON.parse(document.getElementById('coach-state')?.textContent ?? 'null')
let skew = Number.isFinite(initial?.server_now) ? initial.server_now - Date.now() : 0
const serverNow = () => Date.now() + skew
const tiles = new Map()
let view = null

function tileOf (node) {
  const $ = s => node.querySelector(s)
  return { node, num: $('.num'), zone: $('.zone'), points: $('.points'), flag: $('.flag'), form: $('.hide-form'), input: $('.hide-form input[name=hidden]'), button: $('.hide-btn'), member: {}, timer: undefined }
}

for (const node of document.querySelectorAll('.ctile')) {
  const t = tileOf(node)
  tiles.set(node.dataset.profileId, t)
  node.querySelector('.ctile-open').addEventListener('click', () => {
    showChart(`/operator/rooms/${encodeURIComponent(roomId)}/coach/members/${encodeURIComponent(node.dataset.profileId)}/readings`, node.querySelector('.name').textContent)
  })
}

function noSignal (t) {
  clearTimeout(t.timer)
  t.node.dataset.state = t.member.paused ? 'paused' : 'no-signal'
  delete t.node.dataset.zone
  t.num.textContent = '--'
  t.zone.textContent = t.member.paused ? 'hidden from displays' : 'no signal'
}

function reading (t, bpm, at) {
  skew = Math.max(skew, at - Date.now())
  const age = serverNow() - at
  if (age > STALE_MS) { noSignal(t); return }
  const z = zoneOf(bpm, t.member.max_heart_rate, t.member.zones)
  t.node.dataset.state = 'live'
  t.node.dataset.zone = String(z.index)
  t.num.textContent = String(Math.round(bpm))
  t.zone.textContent = `${z.percent}% · ${z.name}`
  clearTimeout(t.timer)
  t.timer = setTimeout(() => noSignal(t), Math.max(0, STALE_MS - age))
}

function adopt (m) {
  const t = tiles.get(m.profile_id)
  if (!t) return
  t.member = m
  if (!m.paused && m.latest) reading(t, m.latest.heart_rate, m.latest.measured_at)
  else noSignal(t)
}

function tick () {
  if (view === null) { statusEl.textContent = 'No class is running.'; return }
  const times = classTimes(view, serverNow())
  statusEl.textContent = view.state === 'running' ? `${view.name} · ${times.elapsed} · ${times.remaining}` : `${view.name} ended · results on the display`
}

/** The class: the forms, the tiles' points, alerts and hide switches, and the list of alerts. */
function applyClass (v) {
  const expired = v?.state === 'results' && v.results_until !== null && v.results_until <= serverNow()
  view = v === null || v === undefined || expired ? null : v
  const running = view?.state === 'running'
  root.dataset.mode = view === null ? 'room' : running ? 'class' : 'results'
  if (startForm) startForm.hidden = running
  if (endForm) endForm.hidden = !running
  const byId = new Map((view?.members ?? []).map(m => [m.profile_id, m]))
  const alerts = []
  for (const [id, t] of tiles) {
    const c = view === null ? undefined : byId.get(id)
    t.points.textContent = c === undefined ? '' : pointsText(c.effort_points)
    const alert = running && c?.alert === true
    if (alert) { t.node.dataset.alert = 'true'; alerts.push(c.display_name) } else delete t.node.dataset.alert
    const hidden = c?.hidden === true
    t.node.dataset.hidden = String(hidden)
    t.flag.textContent = hidden ? 'hidden from the display' : ''
    if (t.form) {
      t.form.hidden = !running || c === undefined
      t.input.value = hidden ? 'false' : 'true'
      t.button.setAttribute('aria-pressed', String(hidden))
      t.button.textContent = hidden ? `Show ${c.display_name} on the display again` : `Hide ${c?.display_name ?? ''} from the display`
    }
  }
  alertsEl.replaceChildren(...alerts.map(name => {
    const li = document.createElement('li')
    li.textContent = `${name}: at or above 95 % of their maximum for a minute`
    return li
  }))
  tick()
}

/** Loads the room's state; false when the coach is signed out or the room is gone. */
async function refresh () {
  const res = await fetch(`/operator/rooms/${encodeURIComponent(roomId)}/coach/state`, { cache: 'no-store', credentials: 'same-origin' })
  if (!res.ok) { connEl.textContent = res.status === 403 ? 'Signed out: reload the page.' : 'Cannot load the room.'; return false }
  const state = await res.json()
  // A member who joined or left, or a new display link: the page's tiles, forms and stream come from the server.
  const ids = new Set(state.members.map(m => m.profile_id))
  if (state.display_id !== root.dataset.displayId || ids.size !== tiles.size || [...tiles.keys()].some(id => !ids.has(id))) { window.location.reload(); return }
  for (const m of state.members) adopt(m)
  applyClass(state.class)
  return true
}

if (initial) { for (const m of initial.members) adopt(m); applyClass(initial.class) }
setInterval(tick, 1000)

const CONN = { connecting: 'connecting…', reconnecting: 'reconnecting…', waiting: 'live', live: 'live', 'no-signal': 'live', gone: 'Signed out, or the room is gone: reload the page.' }

openLive(wsUrl(`/operator/rooms/${encodeURIComponent(roomId)}/coach/stream?kinds=heart_rate,room_member_updated,room_member_removed,room_class`), {
  staleMs: 0,
  onState (s) { root.dataset.connection = s; connEl.textContent = CONN[s] ?? '' },
  // A closed stream: go on while the coach is signed in and the room is there.
  stillValid: async () => await refresh().catch(() => true),
  onOpen () { refresh().catch(() => {}) },
  onMessage (msg) {
    if (msg?.kind === 'heart_rate') {
      const t = tiles.get(msg.heart_rate?.profile_id)
      const bpm = msg.heart_rate?.bpm
      if (t && Number.isFinite(bpm) && bpm > 0) reading(t, bpm, Date.parse(msg.timestamp) || serverNow())
      return true
    }
    if (msg?.kind === 'room_class') { applyClass(msg.room_class ?? null); return true }
    if (msg?.kind === 'room_member_updated' || msg?.kind === 'room_member_removed') { refresh().catch(() => {}); return true }
    return false
  }
})
