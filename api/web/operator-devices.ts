// /operator/devices: paired devices with their live state, battery and last
// reading; straps and devices seen but not paired, each with a "pair with
// member" form; unpairing. Uses the device registry (api/store/devices.ts).
import type { FastifyInstance, FastifyReply } from 'fastify'
import { DEVICE_KINDS, DeviceExistsError, InvalidAntDeviceIdError, InvalidDeviceIdError, type DeviceKind } from '../store/devices.ts'
import type { ReadingSource } from '../pipeline/reading.ts'
import type { Session } from '../oauth/session.ts'
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

export async function deviceRoutes (app: FastifyInstance, uses: OperatorDevicesUses): Promise<void> {
  const page = async (reply: FastifyReply, session: Session, status: number, message?: string, error?: string, extra = ''): Promise<FastifyReply> => {
    const devices = devicesOf(uses)
    if (devices === undefined) return await sendPage(reply, 503, 'Devices', '<p class="notice error">This relay has no device registry.</p>', operatorNav(session.csrf, '/operator/devices'))
    const users = await uses.users.list()
    const names = new Map(users.map(u => [u.profile_id, u.username]))
    const options = users.map(u => `<option value="${esc(u.username)}">${esc(u.username)}</option>`).join('')
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
    const unpaired = devices.unpaired().map((s, i) => [
      `<code>${esc(s.device_id)}</code>${s.name === undefined ? '' : `<br>${esc(s.name)}`}`, esc(s.source),
      esc(s.rssi === undefined ? '—' : `${s.rssi} dBm`), esc(battery(s.battery_percent)), esc(when(s.seen_at)),
      postForm('/operator/devices/pair', session.csrf, `${hidden('device_id', s.device_id)}${hidden('kind', kindFor(s.source))}
<label for="pair-${i}">Member for ${esc(s.device_id)}</label> <select id="pair-${i}" name="username" required>${options}</select>
<button type="submit">Pair with member</button>`, `class="pair-form" data-device-id="${esc(s.device_id)}"`)
    ])
    const health = uses.health()
    const sources = health.map(h => [esc(h.id), esc(h.state), esc(h.detail ?? '')])
    // Several Bluetooth adapters: every configured one, a missing one included.
    const adapters = health.flatMap(h => (h.adapters ?? []).map(a => [`<code>${esc(a.name)}</code>`, `<span class="adapter-state">${esc(a.state)}</span>`,
      `<span class="adapter-connections">${esc(a.connections)}</span>`, esc(a.limit), esc(a.silent_total), esc(a.refused_total)]))
    const adapterTable = adapters.length === 0 ? '' : `\n${table('Bluetooth adapters', ['Adapter', 'State', 'Connected straps', 'Limit', 'Silent links', 'Refused connections'], adapters)}`
    const body = `${notice(message)}${notice(error, 'error')}${extra}
${table('Paired devices', ['Device', 'Kind', 'Member', 'State', 'Battery', 'Last reading', ''], paired, 'no paired devices')}
${table('Unpaired devices in range', ['Device', 'Source', 'Signal', 'Battery', 'Last seen', 'Pair'], unpaired, 'nothing unpaired in range right now (reload to refresh)')}
${table('Relay sources', ['Source', 'State', 'Detail'], sources, 'no sources are configured')}${adapterTable}`
    return await sendPage(reply, status, 'Devices', body, operatorNav(session.csrf, '/operator/devices'))
  }

  app.get<{ Querystring: { done?: unknown } }>('/operator/devices', async (request, reply) => {
    const session = await operatorPage(uses, request, reply)
    if (session === null) return reply
    const done = request.query.done
    return await page(reply, session, 200, done === 'unpaired' ? 'Device unpaired.' : done === 'paired' ? 'Device paired.' : undefined)
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
      const added = await devices.add({ device_id: one(f.form, 'device_id'), profile_id: user.profile_id, kind: kind as DeviceKind })
      uses.log.child({ component: 'web' }).info({ device_id: added.device.device_id, profile_id: user.profile_id }, 'device paired from the operator page')
      if (added.mqtt_password === null) return await reply.redirect('/operator/devices?done=paired', 303)
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
