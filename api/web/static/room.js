// The room display: one tile per member, sized to fill the screen. The first
// paint comes from the server (tiles plus the embedded #room-state); this
// script takes the tiles over, then follows the room stream (the display key
// in the URL is the capability). Tiles come and go with the membership
// messages; calories and pauses are refreshed from the state route. During a
// class (room_class messages) the tiles carry effort points and alerts, and
// after it the results replace the tiles until their time is up. With
// part=<i>of<n> the page shows its share of the members (several screens).
import { openLive, wsUrl } from './live.js'
import { zoneOf, trendPoints, compareMembers, ORDERS } from './zones.js'
import { gridFor, parsePart, partMembers } from './room-layout.js'
import { pointsText } from './class-view.js'
import { classDisplay } from './room-class.js'
import { el } from './dom.js'

const root = document.getElementById('room')
const grid = document.getElementById('tiles')
const titleEl = document.getElementById('room-name')
const connEl = document.getElementById('connection')
const roomId = root.dataset.roomId
const params = new URLSearchParams(window.location.search)
const key = params.get('display_id') ?? ''
const order = ORDERS.includes(params.get('order')) ? params.get('order') : 'name'
const parsedPart = parsePart(params.get('part'))
/** This screen's share of the members, null for all (the server refuses a bad part= with a 400 page). */
const part = parsedPart === 'bad' ? null : parsedPart
const q = `display_id=${encodeURIComponent(key)}${part === null ? '' : `&part=${part.index}of${part.count}`}`
const TREND_MS = 5 * 60 * 1000
/** A reading older than this is "no signal" (api/web/overlay.ts STALE_MS). */
const STALE_MS = 10000
const SVG = 'http://www.w3.org/2000/svg'
const tiles = new Map()
const initial = JSON.parse(document.getElementById('room-state')?.textContent ?? 'null')
/** Every member of the room ({ profile_id, display_name }) and who hides from displays, for the split and the results. */
let roster = []
const pausedIds = new Set()
/** The class as the stream or the state last gave it (null: none). */
let view = null
/**
 * Server time minus page time: readings are timed by the server's clock. The
 * first estimate comes from the page's HTML and lags by however long the page
 * took to load (seconds on a loaded box); a reading that arrives proves the
 * server's clock has reached its time, so each one can only move it forward.
 */
let skew = Number.isFinite(initial?.server_now) ? initial.server_now - Date.now() : 0
const serverNow = () => Date.now() + skew

function newNode (id) {
  const node = el('article', 'tile')
  node.dataset.profileId = id
  node.dataset.state = 'no-signal'
  const bpm = el('p', 'bpm')
  bpm.append(el('span', 'num', '--'), el('span', 'unit', ' bpm'))
  const svg = document.createElementNS(SVG, 'svg')
  svg.setAttribute('viewBox', '0 0 300 60')
  svg.setAttribute('class', 'trend')
  svg.setAttribute('aria-hidden', 'true')
  svg.setAttribute('preserveAspectRatio', 'none')
  const line = document.createElementNS(SVG, 'polyline')
  line.setAttribute('vector-effect', 'non-scaling-stroke')
  svg.append(line)
  node.append(el('h2', 'name'), bpm, el('p', 'zone', 'no signal'), el('p', 'points'), el('p', 'kcal'), svg)
  grid.append(node)
  return node
}

function tileFor (m) {
  let t = tiles.get(m.profile_id)
  if (!t) {
    // A tile of the first paint, else a new one.
    const node = [...grid.children].find(n => n.dataset.profileId === m.profile_id) ?? newNode(m.profile_id)
    const $ = s => node.querySelector(s)
    t = { node, name: $('.name'), num: $('.num'), zone: $('.zone'), points: $('.points'), kcal: $('.kcal'), line: $('polyline'), member: { paused: false }, samples: [], timer: undefined, kcalValue: 0, sort: null, effort: 0 }
    tiles.set(m.profile_id, t)
    classTile(t)
    layout()
  }
  for (const [k, v] of Object.entries(m)) if (v !== undefined) t.member[k] = v
  t.name.textContent = t.member.display_name ?? t.member.name ?? 'Member'
  setKcal(t, t.member.calories_today_kcal)
  return t
}

function setKcal (t, v) {
  if (Number.isFinite(v)) t.kcalValue = v
  t.kcal.textContent = t.member.paused ? '' : `${Math.round(t.kcalValue)} kcal today`
}

function blank (t, state, text) {
  clearTimeout(t.timer)
  t.node.dataset.state = state
  delete t.node.dataset.zone
  t.num.textContent = '--'
  t.zone.textContent = text
  t.sort = null
}

function stale (t) { blank(t, 'no-signal', 'no signal'); reorder() }

/** The member hides from room displays: no number, no trend, no calories until the pause ends. */
function paused (t) {
  t.member.paused = true
  pausedIds.add(t.node.dataset.profileId)
  classTile(t)
  blank(t, 'paused', 'paused')
  t.samples = []
  t.line.setAttribute('points', '')
  setKcal(t)
  reorder()
}

/** The bpm with its percent of the member's maximum and its zone. */
function showBpm (t, bpm) {
  const z = zoneOf(bpm, t.member.max_heart_rate, t.member.zones)
  t.node.dataset.state = 'live'
  t.node.dataset.zone = String(z.index)
  t.num.textContent = String(Math.round(bpm))
  t.zone.textContent = `${z.percent}% · ${z.name}`
  t.sort = { bpm, percent: z.percent, zone: z.index }
}

function reading (t, bpm, at) {
  if (t.member.paused) { t.member.paused = false; pausedIds.delete(t.node.dataset.profileId); classTile(t) }
  showBpm(t, bpm)
  setKcal(t)
  if (t.samples.length === 0 || t.samples[t.samples.length - 1][0] < at) t.samples.push([at, bpm])
  skew = Math.max(skew, at - Date.now())
  const now = serverNow()
  while (t.samples.length > 0 && t.samples[0][0] < now - TREND_MS) t.samples.shift()
  t.line.setAttribute('points', trendPoints(t.samples, now, TREND_MS, 300, 60))
  clearTimeout(t.timer)
  t.timer = setTimeout(() => stale(t), Math.max(0, STALE_MS - (now - at)))
  reorder()
}

/** Applies one member of the state (first paint or refresh). */
function adopt (m) {
  const t = tileFor(m)
  if (m.paused) { paused(t); return }
  if (t.member.paused || t.samples.length === 0) {
    t.member.paused = false
    t.samples = [...m.trend]
    if (m.latest && serverNow() - m.latest.measured_at <= STALE_MS) reading(t, m.latest.heart_rate, m.latest.measured_at)
    else stale(t)
  } else if (t.sort !== null) {
    // A live tile: the maximum or the zones may have changed (a new member's tile shows its first readings with
    // the default maximum until this state, which the server resolves, arrives).
    showBpm(t, t.sort.bpm)
  }
}

function removeTile (id) {
  const t = tiles.get(id)
  if (!t) return
  clearTimeout(t.timer)
  t.node.remove()
  tiles.delete(id)
  layout()
}

/** The tile order of ?order= (CSS order, so no tile moves in the DOM). */
function reorder () {
  const all = [...tiles.values()]
  const key = t => ({ name: t.name.textContent, bpm: t.sort?.bpm ?? null, percent: t.sort?.percent ?? 0, zone: t.sort?.zone ?? 0, effort: t.effort })
  all.sort((a, b) => compareMembers(order, key(a), key(b)))
  all.forEach((t, i) => { t.node.style.order = String(i) })
}

/** Columns x rows for the tiles in the space the grid has; the type scales with the tile (room.css). */
function layout () {
  const gap = parseFloat(getComputedStyle(grid).rowGap) || 0
  const shown = [...tiles.values()].filter(t => !t.node.hidden).length
  const { cols, rows } = gridFor(shown, grid.clientWidth, grid.clientHeight, gap)
  grid.style.setProperty('--cols', String(cols))
  grid.style.setProperty('--rows', String(rows))
  root.dataset.grid = `${cols}x${rows}`
}

/** A tile's class data: effort points, alert, hidden by the coach (only while the class runs). */
function classTile (t) {
  const c = view?.state === 'running' && !t.member.paused ? view.members.find(m => m.profile_id === t.node.dataset.profileId) : undefined
  const wasHidden = t.node.hidden
  t.effort = c?.effort_points ?? 0
  t.points.textContent = c === undefined || c.hidden ? '' : pointsText(c.effort_points)
  if (c?.alert === true) t.node.dataset.alert = 'true'
  else delete t.node.dataset.alert
  t.node.hidden = c?.hidden === true
  if (wasHidden !== t.node.hidden) layout()
}

const classParts = classDisplay({ now: serverNow, onEnd: () => applyClass(null) })

/** Follows the class: running (points on the tiles), results (the leaderboard instead of the tiles), or none. */
function applyClass (v) {
  const expired = v?.state === 'results' && v.results_until !== null && v.results_until <= serverNow()
  view = v === null || v === undefined || expired ? null : v
  root.dataset.mode = view === null ? 'room' : view.state === 'running' ? 'class' : 'results'
  for (const t of tiles.values()) classTile(t)
  // On the results: members of this display the coach did not hide and who do not hide from displays.
  const known = new Set(roster.map(m => m.profile_id))
  classParts.show(view, m => !m.hidden && known.has(m.profile_id) && !pausedIds.has(m.profile_id), part)
  reorder()
  layout()
}

/** Takes the room's members from a state: this screen's share gets tiles. */
function adoptState (state) {
  roster = state.members.map(m => ({ profile_id: m.profile_id, display_name: m.display_name }))
  for (const m of state.members) if (m.paused) pausedIds.add(m.profile_id); else pausedIds.delete(m.profile_id)
  const mine = partMembers(state.members, part)
  const seen = new Set()
  for (const m of mine) { seen.add(m.profile_id); adopt(m) }
  for (const id of [...tiles.keys()]) if (!seen.has(id)) removeTile(id)
  applyClass(state.class ?? null)
}

async function refresh () {
  const res = await fetch(`/rooms/${encodeURIComponent(roomId)}/display/state?${q}`, { cache: 'no-store' })
  if (!res.ok) { connEl.textContent = res.status === 404 ? 'This display link is no longer valid.' : 'Cannot load the room.'; return }
  const state = await res.json()
  titleEl.textContent = state.room.name
  adoptState(state)
}

if (initial) adoptState(initial)
reorder()
layout()
new ResizeObserver(() => layout()).observe(grid)

const CONN = { connecting: '', reconnecting: 'reconnecting…', waiting: '', live: '', 'no-signal': '', gone: 'This display link was revoked. Ask the operator for the new link.' }

openLive(wsUrl(`/rooms/${encodeURIComponent(roomId)}/stream?${q}&kinds=heart_rate,room_member_updated,room_member_removed,room_updated,room_class`), {
  staleMs: 0,
  onState (s) { root.dataset.connection = s; connEl.textContent = CONN[s] ?? '' },
  stillValid: async () => (await fetch(`/rooms/${encodeURIComponent(roomId)}/display/state?${q}`, { cache: 'no-store' })).status !== 404,
  onOpen () { refresh().catch(() => {}) },
  onMessage (msg) {
    const at = Date.parse(msg?.timestamp) || serverNow()
    if (msg?.kind === 'heart_rate') {
      const p = msg.heart_rate
      const t = tiles.get(p?.profile_id)
      if (t && Number.isFinite(p.bpm) && p.bpm > 0) reading(t, p.bpm, at)
      return true
    }
    if (msg?.kind === 'room_member_updated') {
      const p = msg.room_member_updated
      if (typeof p?.profile_id !== 'string') return true
      const known = tiles.has(p.profile_id)
      if (p.config?.paused === true) pausedIds.add(p.profile_id)
      else if (p.config?.paused === false) pausedIds.delete(p.profile_id)
      // A split display learns from the state which screen a new member is on.
      if (!known && part !== null) { refresh().catch(() => {}); return true }
      const t = tileFor({ profile_id: p.profile_id, display_name: p.config?.display_name, zones: p.config?.zones })
      // config.paused: the member hid from room displays, or came back (docs/operator.md "Pages the box serves").
      if (p.config?.paused === true) paused(t)
      else if (p.config?.paused === false && t.member.paused) { t.member.paused = false; stale(t); classTile(t) }
      // The server resolves the maximum heart rate (config, user, age, default) and today's calories.
      if (!known || p.config?.max_heart_rate !== undefined) refresh().catch(() => {})
      return true
    }
    if (msg?.kind === 'room_member_removed') {
      removeTile(msg.room_member_removed?.profile_id)
      // The other screens' shares move: each takes its share again.
      if (part !== null) refresh().catch(() => {})
      return true
    }
    if (msg?.kind === 'room_class') { applyClass(msg.room_class ?? null); return true }
    if (msg?.kind === 'room_updated') {
      const name = msg.room_updated?.config?.name
      if (typeof name === 'string') titleEl.textContent = name
      return true
    }
    return false
  }
})

setInterval(() => { refresh().catch(() => {}) }, 30000)
