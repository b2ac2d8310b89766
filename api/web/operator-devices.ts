// /operator/devices: paired devices with their live state, battery and last
// reading; straps and devices seen but not paired, strongest signal first, the
// one clearly nearest the box marked (api/store/device-sightings.ts
// nearbyUnpaired, the admin API's GET /admin/devices/nearby), each with a
// "pair with member" form, refreshed live by static/desk-devices.js from
// GET /operator/devices/nearby; unpairing. Uses the device registry
// (api/store/devices.ts).
import type { FastifyInstance, FastifyReply } from 'fastify'
import { DEVICE_KINDS, DeviceExistsError, InvalidAntDeviceIdError, InvalidDeviceIdError, type DeviceKind } from '../store/devices.ts'
import type { ReadingSource } from '../pipeline/reading.ts'
import type { Session } from '../oauth/session.ts'
import { NEAREST_FRESH_MS, NEAREST_MARGIN_DB, NEAREST_MIN_RSSI, nearbyUnpaired, type NearbyDevice } from '../store/device-sightings.ts'
import { esc, hidden, notice, postForm, sendPage, table, when } from './html.ts'
import { one } from './guard.ts'
import { operatorNav } from './nav.ts'
import { operatorForm, operatorPage, type OperatorUses } from './operator-auth.ts'
import type { Services } from '../services.ts'

/** What the devices page uses: the device registry, the accounts to pair with, the sources' health, the log, and operator sign-in. */
export type OperatorDevicesUses = OperatorUses & Pick<Services, 'devices' | 'users' | 'health' | 'log'>

/** The device registry; undefined only for a server built without one. */
export function devicesOf (uses: Pick<Services, 'devices'>): Services['devices'] | undefined {
  return uses.devices as Services['devices'] | undefined
}

/** The pairing kind for a device seen by a source: readings of other sources then do not count as its. */
export function kindFor (source: ReadingSource): DeviceKind {
  return source === 'ble' || source === 'serial' || source === 'mqtt' || source === 'ant' ? source : 'any'
}

function battery (v: number | undefined): string {
  return v === undefined ? '—' : `${v}%`
}

/** What the live list reads of an unpaired device (GET /operator/devices/nearby). */
function nearbyView (d: NearbyDevice): Record<string, unknown> {
  return { device_id: d.device_id, name: d.name ?? null, source: d.source, kind: kindFor(d.source), rssi: d.rssi ?? null, battery_percent: d.battery_percent ?? null, seen_at: d.seen_at, nearest: d.nearest }
}

/**
 * One row of the nearby list; static/desk-devices.js builds the same markup for the rows it adds. `member` is the
 * member chosen (preselected), `back` where the pairing returns ('member': to the member's page).
 */
function nearbyRow (d: NearbyDevice, i: number, csrf: string, options: string, back: string): string {
  const id = esc(d.device_id)
  return `<tr class="nearby-row${d.nearest ? ' nearest' : ''}" data-device-id="${id}"><td><code>${id}</code>${d.name === undefined ? '' : `<br>${esc(d.name)}`}</td>
<td>${esc(d.source)}</td><td class="signal">${esc(d.rssi === undefined ? 'signal unknown' : `${d.rssi} dBm`)}</td><td class="battery">${esc(battery(d.battery_percent))}</td>
<td class="seen">${esc(when(d.seen_at))}</td><td class="near">${d.nearest ? '<strong class="nearest-mark">Nearest the box</strong>' : ''}</td>
<td>${postForm('/operator/devices/pair', csrf, `${hidden('device_id', d.device_id)}${hidden('kind', kindFor(d.source))}${d.name === undefined ? '' : hidden('name', d.name)}${back === '' ? '' : hidden('back', back)}
<label for="pair-${i}">Member for ${id}</label> <select id="pair-${i}" name="username" required>${options}</select>
<button type="submit">Pair with member</button>`, `class="pair-form" data-device-id="${id}"`)}</td></tr>`
}

export async function deviceRoutes (app: FastifyInstance, uses: OperatorDevicesUses): Promise<void> {
  const page = async (reply: FastifyReply, session: Session, status: number, message?: string, error?: string, extra = '', chosen = ''): Promise<FastifyReply> => {
    const devices = devicesOf(uses)
    if (devices === undefined) return await sendPage(reply, 503, 'Devices', '<p class="notice error">This relay has no device registry.</p>', operatorNav(session.csrf, '/operator/devices'))
    const users = await uses.users.list()
    const names = new Map(users.map(u => [u.profile_id, u.username]))
    const options = (chosen: string): string => `<option value="">Choose a member</option>${users.map(u => `<option value="${esc(u.username)}"${u.username === chosen ? ' selected' : ''}>${esc(u.username)}</option>`).join('')}`
    const paired = devices.list().map(d => {
      const s = devices.stateOf(d.device_id)
      const state = s === undefined ? 'not seen' : s.connected ? 'connected' : 'seen'
      return [
        `<code>${esc(d.device_id)}</code>${d.name === undefined ? '' : `<br>${esc(d.name)}`}`, esc(d.kind), esc(names.get(d.profile_id) ?? d.profile_id),
        `<span class="device-state">${esc(state)}</span>${s?.connected === true && s.adapter !== undefined ? ` <span class="device-adapter">via ${esc(s.adapter)}</span>` : ''}${s === undefined ? '' : `<br><span class="muted">${esc(when(s.seen_at))}</span>`}`,
        esc(battery(s?.battery_percent)),
        s?.last_reading === undefined ? '—' : `<span class="last-bpm">${esc(s.last_reading.heart_rate)}</span> bpm<br><span class="muted">${esc(when(s.last_reading.measured_at))}</span>`,
        postForm(`/operator/devices/${encodeURIComponent(d.device_id)}/unpair`, session.csrf, `<button type="submit" class="danger" aria-label="Unpair ${esc(d.device_id)}">Unpair</button>`, 'class="inline"')
      ]
    })
    const member = users.some(u => u.username === chosen) ? chosen : ''
    const back = member === '' ? '' : 'member'
    const nearby = nearbyUnpaired(devices.unpaired(), Date.now())
    const rows = nearby.map((d, i) => nearbyRow(d, i, session.csrf, options(member), back)).join('\n')
    const unpaired = `<section aria-labelledby="nearby-title"><h2 id="nearby-title">Pair a strap: hold it near the box</h2>
<p>Straps heard but not paired, from Bluetooth and ANT+, strongest signal first. Hold the member's strap (worn or wetted, so that it
sends) next to the box: it moves to the top and is marked <strong>Nearest the box</strong> once it is clearly the closest
(${NEAREST_MARGIN_DB} dB stronger than any other strap heard in the last ${NEAREST_FRESH_MS / 1000} s, at ${NEAREST_MIN_RSSI} dBm or more).
A source that gives no signal strength lists its straps last, "signal unknown".</p>
<div class="field"><label for="desk-member">Pair with member</label><select id="desk-member">${options(member)}</select></div>
<p id="desk-live" class="muted" aria-live="polite" data-state="static">Refreshed when the page loads.</p>
<table id="desk-nearby" data-csrf="${esc(session.csrf)}" data-back="${esc(back)}"><caption>Unpaired devices in range, strongest signal first</caption><thead><tr>${['Device', 'Source', 'Signal', 'Battery', 'Last seen', 'Nearest', 'Pair'].map(h => `<th scope="col">${h}</th>`).join('')}</tr></thead>
<tbody>${rows === '' ? '<tr class="desk-empty"><td colspan="7">nothing unpaired in range right now</td></tr>' : rows}</tbody></table></section>`
    const health = uses.health()
    const sources = health.map(h => [esc(h.id), esc(h.state), esc(h.detail ?? '')])
    // Several Bluetooth adapters: every configured one, a missing one included.
    const adapters = health.flatMap(h => (h.adapters ?? []).map(a => [`<code>${esc(a.name)}</code>`, `<span class="adapter-state">${esc(a.state)}</span>`,
      `<span class="adapter-connections">${esc(a.connections)}</span>`, esc(a.limit), esc(a.silent_total), esc(a.refused_total)]))
    const adapterTable = adapters.length === 0 ? '' : `\n${table('Bluetooth adapters', ['Adapter', 'State', 'Connected straps', 'Limit', 'Silent links', 'Refused connections'], adapters)}`
    const body = `${notice(message)}${notice(error, 'error')}${extra}
${table('Paired devices', ['Device', 'Kind', 'Member', 'State', 'Battery', 'Last reading', ''], paired, 'no paired devices')}
${unpaired}
${table('Relay sources', ['Source', 'State', 'Detail'], sources, 'no sources are configured')}${adapterTable}`
    return await sendPage(reply, status, 'Devices', body, { ...operatorNav(session.csrf, '/operator/devices'), scripts: ['/web/static/desk-devices.js'] })
  }

  app.get<{ Querystring: { done?: unknown, member?: unknown } }>('/operator/devices', async (request, reply) => {
    const session = await operatorPage(uses, request, reply)
    if (session === null) return reply
    const done = request.query.done
    const member = typeof request.query.member === 'string' ? request.query.member : ''
    return await page(reply, session, 200, done === 'unpaired' ? 'Device unpaired.' : done === 'paired' ? 'Device paired.' : undefined, undefined, '', member)
  })

  // The live list of static/desk-devices.js: what GET /admin/devices/nearby answers, with each device's pairing kind.
  app.get('/operator/devices/nearby', async (request, reply) => {
    const session = await operatorPage(uses, request, reply)
    if (session === null) return reply
    const devices = devicesOf(uses)
    if (devices === undefined) return await reply.code(503).header('cache-control', 'no-store').send({ devices: [] })
    const list = nearbyUnpaired(devices.unpaired(), Date.now())
    return await reply.header('cache-control', 'no-store').send({ devices: list.map(nearbyView), nearest: list.find(d => d.nearest)?.device_id ?? null })
  })

  app.post('/operator/devices/pair', async (request, reply) => {
    const f = await operatorForm(uses, request, reply)
    if (f === null) return reply
    const devices = devicesOf(uses)
    if (devices === undefined) return await page(reply, f.session, 503)
    const user = await uses.users.byUsername(one(f.form, 'username'))
    if (user === undefined) return await page(reply, f.session, 400, undefined, 'No such user.')
    const kind = one(f.form, 'kind')
    if (!(DEVICE_KINDS as readonly string[]).includes(kind)) return await page(reply, f.session, 400, undefined, 'Unknown device kind.')
    try {
      // The name the strap advertised, kept with the pairing (as `device add --name` does).
      const name = one(f.form, 'name').trim().slice(0, 100)
      const added = await devices.add({ device_id: one(f.form, 'device_id'), profile_id: user.profile_id, kind: kind as DeviceKind, ...(name === '' ? {} : { name }) })
      uses.log.child({ component: 'web' }).info({ device_id: added.device.device_id, profile_id: user.profile_id }, 'device paired from the operator page')
      if (added.mqtt_password === null) {
        // Started from the member's page ("pair a strap"): back there, where the strap is now listed.
        return await reply.redirect(one(f.form, 'back') === 'member' ? `/operator/users/${encodeURIComponent(user.username)}?done=paired` : '/operator/devices?done=paired', 303)
      }
      // Shown once: the device's MQTT password (only its scrypt hash is kept).
      return await page(reply, f.session, 201, `Device ${added.device.device_id} paired with ${user.username}.`, undefined,
        `<p>MQTT username <code>${esc(added.device.mqtt_username ?? '')}</code>, password (shown once): <code class="token">${esc(added.mqtt_password)}</code></p>`)
    } catch (err) {
      if (err instanceof DeviceExistsError || err instanceof InvalidDeviceIdError || err instanceof InvalidAntDeviceIdError) return await page(reply, f.session, 400, undefined, err.message)
      throw err
    }
  })

  app.post<{ Params: { device_id: string } }>('/operator/devices/:device_id/unpair', async (request, reply) => {
    const f = await operatorForm(uses, request, reply)
    if (f === null) return reply
    const devices = devicesOf(uses)
    if (devices === undefined) return await page(reply, f.session, 503)
    const { device_id: id } = request.params
    if (await devices.remove(id) === undefined) return await page(reply, f.session, 404, undefined, 'No such device.')
    return await reply.redirect('/operator/devices?done=unpaired', 303)
  })
}
