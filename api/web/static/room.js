// The room display: one tile per member, live from the room stream (the
// display key in the URL is the capability). Tiles come and go with the
// membership messages; calories are refreshed from the state route.
import { openLive, wsUrl } from './live.js'
import { zoneOf, trendPoints } from './zones.js'

const root = document.getElementById('room')
const grid = document.getElementById('tiles')
const titleEl = document.getElementById('room-name')
const connEl = document.getElementById('connection')
const roomId = root.dataset.roomId
const key = new URLSearchParams(window.location.search).get('display_id') ?? ''
const q = `display_id=${encodeURIComponent(key)}`
const TREND_MS = 5 * 60 * 1000
const STALE_MS = 10000
const SVG = 'http://www.w3.org/2000/svg'
const tiles = new Map()

function el (tag, cls, text) {
  const e = document.createElement(tag)
  if (cls) e.className = cls
  if (text !== undefined) e.textContent = text
  return e
}

function tileFor (m) {
  let t = tiles.get(m.profile_id)
  if (!t) {
    const node = el('article', 'tile')
    node.dataset.profileId = m.profile_id
    node.dataset.state = 'no-signal'
    const name = el('h2', 'name')
    const bpm = el('p', 'bpm')
    const num = el('span', 'num', '--')
    bpm.append(num, el('span', 'unit', ' bpm'))
    const zone = el('p', 'zone', 'no signal')
    const kcal = el('p', 'kcal')
    const svg = document.createElementNS(SVG, 'svg')
    svg.setAttribute('viewBox', '0 0 300 60')
    svg.setAttribute('class', 'trend')
    svg.setAttribute('aria-hidden', 'true')
    svg.setAttribute('preserveAspectRatio', 'none')
    const line = document.createElementNS(SVG, 'polyline')
    line.setAttribute('vector-effect', 'non-scaling-stroke')
    svg.append(line)
    node.append(name, bpm, zone, kcal, svg)
    t = { node, name, num, zone, kcal, line, member: m, samples: [], timer: undefined, kcalValue: 0 }
    tiles.set(m.profile_id, t)
    grid.append(node)
  }
  for (const [k, v] of Object.entries(m)) if (v !== undefined) t.member[k] = v
  t.name.textContent = t.member.display_name ?? t.member.name ?? 'Member'
  setKcal(t, t.member.calories_today_kcal)
  return t
}

function setKcal (t, v) {
  if (Number.isFinite(v)) t.kcalValue = v
  t.kcal.textContent = `${Math.round(t.kcalValue)} kcal today`
}

function stale (t) {
  t.node.dataset.state = 'no-signal'
  t.num.textContent = '--'
  t.zone.textContent = 'no signal'
  t.node.style.removeProperty('--zone')
}

function reading (t, bpm, at) {
  const z = zoneOf(bpm, t.member.max_heart_rate, t.member.zones)
  t.node.dataset.state = 'live'
  t.node.dataset.zone = String(z.index)
  t.node.style.setProperty('--zone', z.color)
  t.num.textContent = String(Math.round(bpm))
  t.zone.textContent = `${z.percent}% · ${z.name}`
  t.samples.push([at, bpm])
  const cut = Date.now() - TREND_MS
  while (t.samples.length > 0 && t.samples[0][0] < cut) t.samples.shift()
  t.line.setAttribute('points', trendPoints(t.samples, Date.now(), TREND_MS, 300, 60))
  clearTimeout(t.timer)
  t.timer = setTimeout(() => stale(t), STALE_MS)
}

function removeTile (id) {
  const t = tiles.get(id)
  if (!t) return
  clearTimeout(t.timer)
  t.node.remove()
  tiles.delete(id)
}

async function refresh () {
  const res = await fetch(`/rooms/${encodeURIComponent(roomId)}/display/state?${q}`, { cache: 'no-store' })
  if (!res.ok) { connEl.textContent = res.status === 404 ? 'This display link is no longer valid.' : 'Cannot load the room.'; return }
  const state = await res.json()
  titleEl.textContent = state.room.name
  const seen = new Set()
  for (const m of state.members) {
    seen.add(m.profile_id)
    const t = tileFor(m)
    if (t.samples.length === 0) {
      for (const s of m.trend) t.samples.push(s)
      if (m.latest && Date.now() - m.latest.measured_at < STALE_MS) reading(t, m.latest.heart_rate, m.latest.measured_at)
    }
  }
  for (const id of [...tiles.keys()]) if (!seen.has(id)) removeTile(id)
}

const CONN = { connecting: 'connecting…', reconnecting: 'reconnecting…', waiting: '', live: '', 'no-signal': '', gone: 'This display link was revoked. Ask the operator for the new link.' }

openLive(wsUrl(`/rooms/${encodeURIComponent(roomId)}/stream?${q}&kinds=heart_rate,room_member_updated,room_member_removed,room_updated`), {
  staleMs: 0,
  onState (s) { root.dataset.connection = s; connEl.textContent = CONN[s] ?? '' },
  stillValid: async () => (await fetch(`/rooms/${encodeURIComponent(roomId)}/display/state?${q}`, { cache: 'no-store' })).status !== 404,
  onOpen () { refresh().catch(() => {}) },
  onMessage (msg) {
    const at = Date.parse(msg?.timestamp) || Date.now()
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
      tileFor({ profile_id: p.profile_id, display_name: p.config?.display_name, zones: p.config?.zones })
      // The server resolves the maximum heart rate (config, user, age, default) and today's calories.
      if (!known || p.config?.max_heart_rate !== undefined) refresh().catch(() => {})
      return true
    }
    if (msg?.kind === 'room_member_removed') { removeTile(msg.room_member_removed?.profile_id); return true }
    if (msg?.kind === 'room_updated') {
      const name = msg.room_updated?.config?.name
      if (typeof name === 'string') titleEl.textContent = name
      return true
    }
    return false
  }
})

setInterval(() => { refresh().catch(() => {}) }, 30000)
