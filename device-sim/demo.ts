// The demo behind `npm start`: a simulated gym (eleven members in a spinning
// class) feeding the running service, so a new user sees readings within
// seconds without a strap or a config file.
//
// It talks to the product only as an operator and devices would: the admin
// API (users, device pairing, tokens, a room, a class in the room: demo-class.ts) and device transports, the ones
// real hardware uses wherever this machine can provide them:
//   ble     members 0..3 wear straps on the BlueZ emulator, read by the
//           relay's BLE source over a private D-Bus (demo-hardware.ts, set up
//           before the sources start), paired with kind 'ble'
//   serial  members 4 and 5 have serial sensors on socat pty pairs read by
//           the relay's serial sources (one framed with `$ID`, one plain
//           text), paired with kind 'serial'
//   ant     members 8..10 wear ANT+ straps heard by a simulated ANT USB stick
//           on a socat pty pair, read by the relay's ANT source, paired
//           with kind 'ant'
// and for every member without such hardware, a function of what the running
// service offers (chooseDemoTransport):
//   mqtt  the embedded broker is listening (server.json has mqtt_port) and the
//         admin API can pair devices: the member's strap is a Wi-Fi device
//         publishing QoS 1 to hr-relay/v1/devices/<id>/heart_rate
//   http  otherwise: the member is an app writing POST /api/v1/data with a
//         token of scope data:heart_rate:write
// One Simulation runs all members through a MixedTransport.
//
// Idempotent across restarts on the same data directory: members, pairings,
// tokens and the room are recorded in <data_dir>/demo.json (mode 0600) and
// reused (strap addresses and serial ids come from the demo seed); a device
// whose MQTT password is not on record is paired again.
import { readFile, writeFile } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import type { Logger } from 'pino'
import { AdminClient, type DeviceCredentials } from './admin-client.ts'
import { DEMO_CLASS_MINUTES, DEMO_CLASS_NAME, startDemoClass, type DemoClassResult } from './demo-class.ts'
import { DEMO_SEED, type DemoHardware, type DemoSerialPort } from './demo-hardware.ts'
import { AntTransport } from './transports/ant.ts'
import { makePerson } from './physiology.ts'
import { personLabel } from './provision.ts'
import { Simulation } from './runner.ts'
import { loadScenario } from './scenario.ts'
import { BleTransport } from './transports/ble.ts'
import { HttpTransport } from './transports/http.ts'
import { MixedTransport, type MixedPart } from './transports/mixed.ts'
import { MqttTransport } from './transports/mqtt.ts'
import { SerialTransport } from './transports/serial.ts'
import type { SimDevice } from './transports/transport.ts'

export { DEMO_SEED }
export const DEMO_MEMBERS = 11
const DEMO_TOKEN_SCOPES = 'data:heart_rate:read data:room:read data:statistics:read profile:read'

/**
 * What the demo uses of a running service: what an operator on the box has,
 * its URL, the admin token file and the data directory (server.json).
 */
export interface DemoService {
  config: { data_dir: string, home_assistant?: { enabled: boolean } }
  /** e.g. http://127.0.0.1:8080 */
  httpUrl: string
  adminTokenFile: string
}

/** How members without BLE or serial hardware send. */
export type DemoTransport = 'mqtt' | 'http'
export type MemberTransport = 'ble' | 'serial' | 'ant' | DemoTransport

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
  /** The member's MQTT device id. */
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
  /** How members without BLE or serial hardware send. */
  transport: DemoTransport
  token: string
  room_id: string | null
  display_url: string | null
  /** What became of the demo's class (demo-class.ts), null without a room. */
  class: DemoClassResult | null
  curl: string
  members: Array<{ username: string, label: string, transport: MemberTransport, device_id: string, detail: string }>
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

/** A member's device on the demo's hardware, when it has one. */
type Assigned = { kind: 'ble', device_id: string } | { kind: 'serial', device_id: string, port: DemoSerialPort } | { kind: 'ant', device_id: string, path: string }

function hardwareOf (i: number, hw: DemoHardware | null): Assigned | null {
  const strap = hw?.ble?.straps.find(s => s.member === i)
  if (strap !== undefined) return { kind: 'ble', device_id: strap.address }
  const ant = hw?.ant?.straps.find(s => s.member === i)
  if (ant !== undefined && hw?.ant !== null && hw?.ant !== undefined) return { kind: 'ant', device_id: ant.device_id, path: hw.ant.pair.relayPath }
  const port = hw?.serial.find(p => p.member === i)
  return port === undefined ? null : { kind: 'serial', device_id: port.device_id, port }
}

function describeMember (kind: MemberTransport, deviceId: string, a: Assigned | null): string {
  switch (kind) {
    case 'ble': return `BLE strap ${deviceId} on the BlueZ emulator (private D-Bus)`
    case 'serial': return `serial ${a?.kind === 'serial' ? a.port.format : ''} sensor ${deviceId} on ${a?.kind === 'serial' ? a.port.pair.relayPath : '?'}`
    case 'ant': return `ANT+ strap ${deviceId} on the simulated ANT stick ${a?.kind === 'ant' ? a.path : '?'}`
    case 'mqtt': return `MQTT device ${deviceId} to the embedded broker`
    case 'http': return 'HTTP writer (POST /api/v1/data)'
  }
}

/** Device id (upper case) → "<username> <kind>" of every pairing the relay has. */
async function currentPairings (admin: AdminClient): Promise<Map<string, string>> {
  const r = await admin.request('GET', '/admin/devices')
  const list = r.status === 200 && Array.isArray(r.body?.devices) ? r.body.devices as Array<{ device_id: string, username: string, kind: string }> : []
  return new Map(list.map(d => [String(d.device_id).toUpperCase(), `${d.username} ${d.kind}`]))
}

/**
 * Starts the simulated gym on a running service. `hardware` is what
 * prepareDemo (demo-hardware.ts) set up before the relay's sources started;
 * without it, every member uses MQTT (or HTTP).
 */
/** How the demo runs: the planned length of the class it starts (default DEMO_CLASS_MINUTES). */
export interface DemoOptions { classMinutes?: number }

export async function startDemo (service: DemoService, log: Logger, hardware: DemoHardware | null = null, options: DemoOptions = {}): Promise<DemoHandle> {
  const dlog = log.child({ component: 'demo' })
  const dataDir = resolve(service.config.data_dir)
  const stateFile = join(dataDir, 'demo.json')
  const state = await readState(stateFile)
  const adminToken = (await readFile(service.adminTokenFile, 'utf8')).trim()
  const admin = new AdminClient(service.httpUrl, adminToken)
  const save = async (): Promise<void> => { await writeFile(stateFile, JSON.stringify(state, null, 2) + '\n', { mode: 0o600 }) }

  // Members: users with a profile that matches their simulated physiology.
  const added: string[] = []
  for (let i = 0; i < DEMO_MEMBERS; i++) {
    const label = personLabel(i)
    const username = `demo-${label.toLowerCase()}`
    const p = makePerson(DEMO_SEED, i)
    const profileId = await admin.ensureUser(username, { display_name: label, age: p.age, weight_kg: p.weight_kg, sex: p.sex, max_heart_rate: p.max_bpm })
    const existing = state.members[i]
    if (existing?.username === username && existing.profile_id === profileId) continue
    if (existing?.username !== username) added.push(username)
    state.members[i] = { username, label, profile_id: profileId, device_id: `demo-strap-${i + 1}` }
  }
  state.members.length = DEMO_MEMBERS
  const members = state.members

  // Members with hardware: their strap or sensor paired with the matching kind,
  // unless the relay already has exactly that pairing (a restart).
  const canPair = AdminClient.has(['device', 'add'])
  if (!canPair && hardware !== null) dlog.info('demo: this hr-relay cannot pair devices; the BLE straps and serial sensors stay unused')
  const assigned: Array<Assigned | null> = members.map((_m, i) => canPair ? hardwareOf(i, hardware) : null)
  const pairings = assigned.some(a => a !== null) ? await currentPairings(admin) : new Map<string, string>()
  for (const [i, a] of assigned.entries()) {
    const m = members[i] as DemoMember
    if (a === null || pairings.get(a.device_id.toUpperCase()) === `${m.username} ${a.kind}`) continue
    try {
      await admin.addDevice(a.device_id, m.username, true, a.kind)
    } catch (err) {
      dlog.warn({ err: (err as Error).message, code: (err as { code?: unknown }).code, member: m.username }, `demo: cannot pair the ${a.kind} device; this member sends over MQTT`)
      assigned[i] = null
    }
  }

  // Everyone else: MQTT when the broker listens, else HTTP.
  const rest = members.filter((_m, i) => assigned[i] === null)
  let transportName = chooseDemoTransport({ mqttPort: await serverMqttPort(dataDir), devicePairing: canPair })
  if (transportName === 'mqtt') {
    try {
      for (const m of rest) m.mqtt ??= await admin.addDevice(m.device_id, m.username, true, 'mqtt')
    } catch (err) {
      dlog.warn({ err: (err as Error).message, code: (err as { code?: unknown }).code }, 'demo: cannot pair MQTT devices; using HTTP writers')
      transportName = 'http'
    }
  }
  if (transportName === 'http') {
    for (const m of rest) m.write_token ??= await admin.issueToken(m.username, 'data:heart_rate:write')
  }
  state.token ??= await admin.issueToken((members[0] as DemoMember).username, DEMO_TOKEN_SCOPES)
  await save()
  const roomBefore = state.room_id
  const room = await ensureRoom(admin, state, dlog)
  // A room made by an earlier demo with fewer members: the new members join it.
  if (room !== null && roomBefore !== undefined) {
    for (const username of added) {
      const m = members.find(x => x.username === username) as DemoMember
      const res = await admin.command(['room', 'member', 'add'], [room.room_id, username], { 'display-name': m.label })
      if (res.status > 299) dlog.warn({ status: res.status, member: username }, 'demo: could not add a room member')
    }
  }
  if (room !== null) { state.room_id = room.room_id; state.display_id = room.display_id; await save() }
  const roomId = room?.room_id ?? null
  // With Home Assistant discovery on, the demo's members opt in, so they appear there without a click each.
  if (service.config.home_assistant?.enabled === true) {
    for (const m of members) {
      const r = await admin.command(['user', 'set'], [m.username], { 'home-assistant': 'on' })
      if (r.status > 299) dlog.warn({ status: r.status, member: m.username }, 'demo: could not opt the member in to Home Assistant')
    }
  }

  const kinds: MemberTransport[] = assigned.map(a => a?.kind ?? transportName)
  const devices: SimDevice[] = members.map((m, i) => ({
    index: i,
    device_id: assigned[i]?.device_id ?? (transportName === 'mqtt' ? m.device_id : m.username),
    label: m.label
  }))
  const of = (kind: MemberTransport): SimDevice[] => devices.filter(d => kinds[d.index] === kind)
  const parts: MixedPart[] = []
  const ble = hardware?.ble
  if (ble !== undefined && ble !== null && of('ble').length > 0) parts.push({ transport: new BleTransport({ emulator: { bluez: ble.bluez, busAddress: ble.busAddress } }), devices: of('ble') })
  for (const [i, a] of assigned.entries()) {
    if (a?.kind !== 'serial') continue
    const transport = new SerialTransport({ format: a.port.format, pairs: [a.port.pair], firmwareVersion: 'demo-1.0', ...(a.port.format === 'text' ? { textVariant: 'plain' as const } : {}) })
    parts.push({ transport, devices: devices.filter(d => d.index === i) })
  }
  const sendingOver = (kind: DemoTransport): DemoMember[] => members.filter((_m, i) => kinds[i] === kind)
  const ant = hardware?.ant
  if (ant !== undefined && ant !== null && of('ant').length > 0) parts.push({ transport: new AntTransport({ pair: ant.pair }), devices: of('ant') })
  if (of('mqtt').length > 0) {
    const url = `mqtt://127.0.0.1:${String(await serverMqttPort(dataDir))}`
    parts.push({ transport: new MqttTransport({ url, credentials: sendingOver('mqtt').map(m => m.mqtt as DeviceCredentials), qos: 1 }), devices: of('mqtt') })
  }
  if (of('http').length > 0) {
    parts.push({ transport: new HttpTransport({ url: service.httpUrl, writers: sendingOver('http').map(m => ({ username: m.username, token: m.write_token as string })) }), devices: of('http') })
  }
  const transport = new MixedTransport(parts)
  await transport.open(devices)

  const ac = new AbortController()
  const simulation = new Simulation({ transport, devices, rateHz: 1, seed: DEMO_SEED, scenario: await loadScenario('spinning-class'), faults: [], signal: ac.signal })
  const running = simulation.run().catch((err: unknown) => { dlog.error({ err }, 'demo simulation failed'); return [] })
  // The class starts with the simulated gym, so its minutes are the demo's first minutes.
  const classMinutes = options.classMinutes ?? DEMO_CLASS_MINUTES
  const classResult: DemoClassResult | null = roomId === null ? null : await startDemoClass(admin, roomId, dlog, classMinutes)

  const token = state.token
  const url = service.httpUrl
  const info: DemoInfo = {
    transport: transportName,
    token,
    room_id: roomId,
    display_url: room === null ? null : `${url}/rooms/${room.room_id}/display?display_id=${room.display_id}`,
    class: classResult,
    curl: `curl -H 'Authorization: Bearer ${token}' ${url}/api/v1/data/heart_rate/latest`,
    members: members.map((m, i) => {
      const kind = kinds[i] as MemberTransport
      const deviceId = (devices[i] as SimDevice).device_id
      return { username: m.username, label: m.label, transport: kind, device_id: deviceId, detail: describeMember(kind, deviceId, assigned[i] ?? null) }
    })
  }
  const counts = (['ble', 'serial', 'ant', 'mqtt', 'http'] as const).map(k => [k, kinds.filter(x => x === k).length] as const).filter(([, n]) => n > 0)
  const width = Math.max(...info.members.map(m => m.username.length))
  // The demo token is for a simulated member on the operator's own box; printing it is the point.
  process.stdout.write([
    '',
    `hr-relay demo: ${DEMO_MEMBERS} members in a spinning class, sending over ${counts.map(([k, n]) => `${k === 'ble' ? 'BLE' : k === 'serial' ? 'serial' : k === 'ant' ? 'ANT+' : k.toUpperCase()} (${n})`).join(', ')}`,
    ...info.members.map(m => `  ${m.username.padEnd(width)}  ${m.transport.padEnd(6)}  ${m.detail}`),
    ...(info.display_url === null ? [] : [`  room display:   ${info.display_url}`]),
    ...(classResult === 'started' ? [`  class:          "${DEMO_CLASS_NAME}", ${classMinutes} minutes: effort points on the display, then the results`] : []),
    `  demo token:     ${token}  (${(members[0] as DemoMember).username})`,
    `  latest reading: ${info.curl}`,
    '  turn the demo off with: hr-relay start --no-demo',
    ''
  ].join('\n') + '\n')
  dlog.info({ transports: Object.fromEntries(counts), room_id: roomId, members: DEMO_MEMBERS }, 'demo running')

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
