// The front desk's nearby list on /operator/devices, kept live: every second it
// reads GET /operator/devices/nearby (strongest signal first, the strap clearly
// nearest the box marked) and brings the table in line, in place: rows are
// updated, added, removed and reordered without touching the member chosen in
// a row, so a pairing form is never reset under the operator's hand. The
// "Pair with member" choice above the table is copied into every row. A failed
// read says "not live" and the next second tries again.
const PERIOD_MS = 1000

const table = document.getElementById('desk-nearby')
const chooser = document.getElementById('desk-member')
const live = document.getElementById('desk-live')

/** The pages' time format (api/web/html.ts `when`). */
function when (ms) {
  return new Date(ms).toISOString().replace('T', ' ').replace(/\.\d+Z$/, ' UTC')
}

function el (tag, attrs = {}, text) {
  const e = document.createElement(tag)
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v)
  if (text !== undefined) e.textContent = text
  return e
}

let rowCount = 0

/** A new row, the markup of api/web/operator-devices.ts nearbyRow. */
function newRow (d) {
  const tr = el('tr', { class: 'nearby-row', 'data-device-id': d.device_id })
  const first = el('td')
  first.append(el('code', {}, d.device_id))
  if (d.name !== null) first.append(el('br'), d.name)
  const form = el('form', { method: 'post', action: '/operator/devices/pair', class: 'pair-form', 'data-device-id': d.device_id })
  form.append(el('input', { type: 'hidden', name: 'csrf', value: table.dataset.csrf }))
  form.append(el('input', { type: 'hidden', name: 'device_id', value: d.device_id }))
  form.append(el('input', { type: 'hidden', name: 'kind', value: d.kind }))
  if (d.name !== null) form.append(el('input', { type: 'hidden', name: 'name', value: d.name }))
  if (table.dataset.back !== '') form.append(el('input', { type: 'hidden', name: 'back', value: table.dataset.back }))
  const id = `pair-live-${rowCount++}`
  const select = el('select', { id, name: 'username', required: '' })
  for (const o of chooser.options) select.append(el('option', { value: o.value }, o.textContent))
  select.value = chooser.value
  form.append(el('label', { for: id }, `Member for ${d.device_id}`), ' ', select, ' ', el('button', { type: 'submit' }, 'Pair with member'))
  const pair = el('td')
  pair.append(form)
  tr.append(first, el('td', {}, d.source), el('td', { class: 'signal' }), el('td', { class: 'battery' }), el('td', { class: 'seen' }), el('td', { class: 'near' }), pair)
  return tr
}

/** The row's changing cells: signal, battery, last seen, the nearest mark. */
function fill (tr, d) {
  const set = (cls, text) => { const c = tr.querySelector(`td.${cls}`); if (c.textContent !== text) c.textContent = text }
  set('signal', d.rssi === null ? 'signal unknown' : `${d.rssi} dBm`)
  set('battery', d.battery_percent === null ? '—' : `${d.battery_percent}%`)
  set('seen', when(d.seen_at))
  const near = tr.querySelector('td.near')
  const marked = near.querySelector('.nearest-mark') !== null
  if (d.nearest !== marked) {
    near.replaceChildren(...(d.nearest ? [el('strong', { class: 'nearest-mark' }, 'Nearest the box')] : []))
    tr.classList.toggle('nearest', d.nearest)
  }
}

function render (devices) {
  const body = table.tBodies[0]
  const rows = new Map([...body.querySelectorAll('tr.nearby-row')].map(tr => [tr.dataset.deviceId, tr]))
  const wanted = devices.map(d => {
    const tr = rows.get(d.device_id) ?? newRow(d)
    rows.delete(d.device_id)
    fill(tr, d)
    return tr
  })
  for (const gone of rows.values()) gone.remove()
  const empty = body.querySelector('tr.desk-empty')
  if (wanted.length === 0 && empty === null) {
    const tr = el('tr', { class: 'desk-empty' })
    tr.append(el('td', { colspan: '7' }, 'nothing unpaired in range right now'))
    body.append(tr)
  } else if (wanted.length > 0 && empty !== null) empty.remove()
  // Reordered only when the order changed: moving a row would take the focus from its controls.
  const current = [...body.querySelectorAll('tr.nearby-row')]
  if (current.length !== wanted.length || current.some((tr, i) => tr !== wanted[i])) body.append(...wanted)
}

function state (s, text) {
  live.dataset.state = s
  live.textContent = text
}

async function refresh () {
  try {
    const res = await fetch('/operator/devices/nearby', { headers: { accept: 'application/json' }, cache: 'no-store', redirect: 'error' })
    if (!res.ok || !(res.headers.get('content-type') ?? '').startsWith('application/json')) throw new Error(`HTTP ${res.status}`)
    const body = await res.json()
    render(body.devices)
    state('live', `Live: updated ${when(Date.now())}.`)
  } catch (err) {
    state('error', `Not live (${err.message}); trying again.`)
  } finally {
    setTimeout(refresh, PERIOD_MS)
  }
}

if (table !== null && chooser !== null && live !== null) {
  chooser.addEventListener('change', () => {
    for (const s of table.querySelectorAll('select[name=username]')) s.value = chooser.value
  })
  void refresh()
}
