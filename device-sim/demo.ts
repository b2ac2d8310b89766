// The demo behind `npm start`: a simulated gym (eight members in a spinning
// class) feeding the running service, so a new user sees readings within
// seconds without a strap or a config file.
//
// It talks to the product only as an operator and devices would: the admin
// API (users, device pairing, tokens, a room) and a device transport. The
// transport is a function of what the running service offers
// (chooseDemoTransport):
//   mqtt  the embedded broker is listening (server.json has mqtt_port) and the
//         admin API can pair devices: each member's strap is a Wi-Fi device
//         publishing QoS 1 to hr-relay/v1/devices/<id>/heart_rate
//   http  otherwise: each member is an app writing POST /api/v1/data with a
//         token of scope data:heart_rate:write
// BLE (the BlueZ emulator) and serial (socat ptys) need the relay's sources
// pointed at the emulator's bus and the ptys before they start, so the demo
// does not use them; `hr-relay sim ble|serial` covers them (see README).
//
// Idempotent across restarts on the same data directory: members, pairings,
// tokens and the room are recorded in <data_dir>/demo.json (mode 0600) and
// reused; a device whose MQTT password is not on record is paired again.
import { readFile, writeFile } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import type { Logger } from 'pino'
import type { RunningService } from '../relay/main.ts'
import { AdminClient, type DeviceCredentials } from './admin-client.ts'
import { makePerson } from './physiology.ts'
import { personLabel } from './provision.ts'
import { Simulation } from './runner.ts'
import { loadScenario } from './scenario.ts'
import { HttpTransport } from './transports/http.ts'
import { MqttTransport } from './transports/mqtt.ts'
import type { SimDevice, SimTransport } from './transports/transport.ts'

export const DEMO_SEED = 2024
export const DEMO_MEMBERS = 8
const DEMO_TOKEN_SCOPES = 'data:heart_rate:read data:room:read data:statistics:read profile:read'

export type DemoTransport = 'mqtt' | 'http'

/** What the running service offers the demo. */
export interface DemoOffer {
  /** The embedded broker's TCP port, when it listens. */
  mqttPort: number | null
  /** The admin API can pair devices (`device add`). */
  devicePairing: boolean
}

export function chooseDemoTransport (offer: DemoOffer): DemoTransport {
  return offer.mqttPort !== null && offer.devicePairing ? 'mqtt' : 'http'
}

interface DemoMember {
  username: string
  label: string
  profile_id: string
  device_id: string
  mqtt?: DeviceCredentials
  write_token?: string
}

interface DemoState {
  version: 1
  members: DemoMember[]
  token?: string
  room_id?: string
  display_id?: string
}

export interface DemoInfo {
  transport: DemoTransport
  token: string
  room_id: string | null
  display_url: string | null
  curl: string
  members: Array<{ username: string, device_id: string }>
}

export interface DemoHandle {
  info: DemoInfo
  simulation: Simulation
  stop (): Promise<void>
}

async function readState (file: string): Promise<DemoState> {
  try {
    const s = JSON.parse(await readFile(file, 'utf8')) as DemoState
    if (s.version === 1 && Array.isArray(s.members)) return s
  } catch { /* first start */ }
  return { version: 1, members: [] }
}

async function serverMqttPort (dataDir: string): Promise<number | null> {
  try {
    const info = JSON.parse(await readFile(join(dataDir, 'server.json'), 'utf8')) as { mqtt_port?: number | null }
    return typeof info.mqtt_port === 'number' && info.mqtt_port > 0 ? info.mqtt_port : null
  } catch { return null }
}

/** Creates the room and adds the members through the admin API (`room add`, `room member add`), once. */
async function ensureRoom (admin: AdminClient, state: DemoState, log: Logger): Promise<{ room_id: string, display_id: string } | null> {
  if (state.room_id !== undefined && state.display_id !== undefined) return { room_id: state.room_id, display_id: state.display_id }
  if (!AdminClient.has(['room', 'add']) || !AdminClient.has(['room', 'member', 'add'])) { log.info('demo: this hr-relay has no room admin commands; no room created'); return null }
  const r = await admin.command(['room', 'add'], ['Spinning class'])
  const roomId = r.body?.room_id as string | undefined
  const displayId = r.body?.display_id as string | undefined
  if (r.status > 299 || roomId === undefined || displayId === undefined) { log.warn({ status: r.status }, 'demo: could not create the room'); return null }
  for (const m of state.members) {
    const res = await admin.command(['room', 'member', 'add'], [roomId, m.username], { 'display-name': m.label })
    if (res.status > 299) log.warn({ status: res.status, member: m.username }, 'demo: could not add a room member')
  }
  return { room_id: roomId, display_id: displayId }
}

export async function startDemo (service: RunningService, log: Logger): Promise<DemoHandle> {
  const dlog = log.child({ component: 'demo' })
  const dataDir = resolve(service.config.data_dir)
  const stateFile = join(dataDir, 'demo.json')
  const state = await readState(stateFile)
  const adminToken = (await readFile(service.adminTokenFile, 'utf8')).trim()
  const admin = new AdminClient(service.httpUrl, adminToken)
  const save = async (): Promise<void> => { await writeFile(stateFile, JSON.stringify(state, null, 2) + '\n', { mode: 0o600 }) }

  // Members: users with a profile that matches their simulated physiology.
  for (let i = 0; i < DEMO_MEMBERS; i++) {
    const label = personLabel(i)
    const username = `demo-${label.toLowerCase()}`
    const p = makePerson(DEMO_SEED, i)
    const profileId = await admin.ensureUser(username, { display_name: label, age: p.age, weight_kg: p.weight_kg, sex: p.sex, max_heart_rate: p.max_bpm })
    const existing = state.members[i]
    if (existing?.username === username && existing.profile_id === profileId) continue
    state.members[i] = { username, label, profile_id: profileId, device_id: `demo-strap-${i + 1}` }
  }
  state.members.length = DEMO_MEMBERS

  let transportName = chooseDemoTransport({ mqttPort: await serverMqttPort(dataDir), devicePairing: AdminClient.has(['device', 'add']) })
  if (transportName === 'mqtt') {
    try {
      for (const m of state.members) m.mqtt ??= await admin.addDevice(m.device_id, m.username, true, 'mqtt')
    } catch (err) {
      dlog.warn({ err: (err as Error).message }, 'demo: cannot pair MQTT devices; using HTTP writers')
      transportName = 'http'
    }
  }
  if (transportName === 'http') {
    for (const m of state.members) m.write_token ??= await admin.issueToken(m.username, 'data:heart_rate:write')
  }
  state.token ??= await admin.issueToken((state.members[0] as DemoMember).username, DEMO_TOKEN_SCOPES)
  await save()
  const room = await ensureRoom(admin, state, dlog)
  if (room !== null) { state.room_id = room.room_id; state.display_id = room.display_id; await save() }
  const roomId = room?.room_id ?? null

  const members = state.members
  const devices: SimDevice[] = members.map((m, i) => ({ index: i, device_id: transportName === 'mqtt' ? m.device_id : m.username, label: m.label }))
  const mqttPort = await serverMqttPort(dataDir)
  const transport: SimTransport = transportName === 'mqtt'
    ? new MqttTransport({ url: `mqtt://127.0.0.1:${String(mqttPort)}`, credentials: members.map(m => m.mqtt as DeviceCredentials), qos: 1 })
    : new HttpTransport({ url: service.httpUrl, writers: members.map(m => ({ username: m.username, token: m.write_token as string })) })
  await transport.open(devices)

  const ac = new AbortController()
  const simulation = new Simulation({ transport, devices, rateHz: 1, seed: DEMO_SEED, scenario: await loadScenario('spinning-class'), faults: [], signal: ac.signal })
  const running = simulation.run().catch((err: unknown) => { dlog.error({ err }, 'demo simulation failed'); return [] })

  const token = state.token
  const url = service.httpUrl
  const info: DemoInfo = {
    transport: transportName,
    token,
    room_id: roomId,
    display_url: room === null ? null : `${url}/rooms/${room.room_id}/display?display_id=${room.display_id}`,
    curl: `curl -H 'Authorization: Bearer ${token}' ${url}/api/v1/data/heart_rate/latest`,
    members: members.map(m => ({ username: m.username, device_id: devices[members.indexOf(m)]?.device_id ?? m.device_id }))
  }
  // The demo token is for a simulated member on the operator's own box; printing it is the point.
  process.stdout.write([
    '',
    `hr-relay demo: ${DEMO_MEMBERS} members in a spinning class, sending over ${transportName === 'mqtt' ? 'MQTT to the embedded broker' : 'HTTP (POST /api/v1/data)'}`,
    ...(info.display_url === null ? [] : [`  room display:   ${info.display_url}`]),
    `  demo token:     ${token}`,
    `  latest reading: ${info.curl}`,
    '  turn the demo off with: hr-relay start --no-demo',
    ''
  ].join('\n') + '\n')
  dlog.info({ transport: transportName, room_id: roomId, members: DEMO_MEMBERS }, 'demo running')

  let stopped: Promise<void> | undefined
  return {
    info,
    simulation,
    stop () {
      stopped ??= (async () => {
        ac.abort()
        await running
        await transport.close()
      })()
      return stopped
    }
  }
}
