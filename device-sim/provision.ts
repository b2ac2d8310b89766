// Who the simulated devices are, and the credentials they use: people's
// labels, device ids per transport, users and pairings created through the
// admin API (when the simulator is given a data directory), or credentials
// read from a JSON file (when the operator created them).
import { readFile } from 'node:fs/promises'
import type { AdminClient, DeviceCredentials } from './admin-client.ts'
import { SimError } from './errors.ts'
import { strapAddress } from './transports/ble.ts'
import { simAntDeviceNumber } from './transports/ant.ts'
import { antDeviceId } from '../firmware-protocol/ant.ts'
import type { HttpWriter } from './transports/http.ts'
import type { SimDevice, TransportName } from './transports/transport.ts'

const NAMES = ['Ana', 'Ben', 'Chloe', 'Dev', 'Eva', 'Femi', 'Gus', 'Hana', 'Ines', 'Jon', 'Kai', 'Lea', 'Milo', 'Nia', 'Omar', 'Pia']

export function personLabel (i: number): string {
  return NAMES[i] ?? `P${i + 1}`
}

export function simUsername (prefix: string, i: number): string {
  return `${prefix}-${i + 1}`
}

/** The device id of simulated device i on a transport (MQTT and HTTP may take theirs from credentials). */
export function simDeviceId (transport: TransportName, prefix: string, seed: number, i: number): string {
  switch (transport) {
    case 'ble': return strapAddress(seed, i)
    case 'serial': return `${prefix}-serial-${i + 1}`
    case 'mqtt': return `${prefix}-mqtt-${i + 1}`
    case 'http': return simUsername(prefix, i)
    case 'ant': return antDeviceId(simAntDeviceNumber(seed, i))
  }
}

export function simDevices (transport: TransportName, prefix: string, seed: number, count: number, ids?: string[]): SimDevice[] {
  return Array.from({ length: count }, (_v, i) => ({ index: i, device_id: ids?.[i] ?? simDeviceId(transport, prefix, seed, i), label: personLabel(i) }))
}

async function readJson (path: string): Promise<unknown> {
  try {
    return JSON.parse(await readFile(path, 'utf8'))
  } catch (err) {
    throw new SimError('bad_option', `cannot read ${path} as JSON: ${(err as Error).message}`, { cause: err })
  }
}

/** `[{device_id, mqtt_username, mqtt_password}, ...]` or `{"devices": [...]}` (what `hr-relay admin device add --json` prints, collected). */
export async function readCredentialsFile (path: string): Promise<DeviceCredentials[]> {
  const v = await readJson(path)
  const list = Array.isArray(v) ? v : (v as { devices?: unknown })?.devices
  if (!Array.isArray(list) || !list.every(c => typeof c?.device_id === 'string' && typeof c?.mqtt_username === 'string' && typeof c?.mqtt_password === 'string')) {
    throw new SimError('bad_option', `${path}: expected [{"device_id", "mqtt_username", "mqtt_password"}, ...]`)
  }
  return list as DeviceCredentials[]
}

/** `[{username, token}, ...]`, `{"writers": [...]}` or a list of token strings. */
export async function readTokensFile (path: string): Promise<HttpWriter[]> {
  const v = await readJson(path)
  const list = Array.isArray(v) ? v : (v as { writers?: unknown })?.writers
  if (!Array.isArray(list)) throw new SimError('bad_option', `${path}: expected [{"username", "token"}, ...]`)
  return list.map((w: unknown, i) => {
    if (typeof w === 'string') return { username: `writer-${i + 1}`, token: w }
    const o = w as { username?: unknown, token?: unknown }
    if (typeof o?.token !== 'string') throw new SimError('bad_option', `${path}: entry ${i} has no token`)
    return { username: typeof o.username === 'string' ? o.username : `writer-${i + 1}`, token: o.token }
  })
}

/** Creates users `<prefix>-N` and pairs device i to user i; returns the MQTT credentials. */
export async function pairDevices (admin: AdminClient, devices: SimDevice[], prefix: string, kind: 'ble' | 'serial' | 'mqtt' | 'ant' = 'mqtt', userExtra: (i: number) => Record<string, unknown> = () => ({})): Promise<DeviceCredentials[]> {
  const out: DeviceCredentials[] = []
  for (const d of devices) {
    const username = simUsername(prefix, d.index)
    await admin.ensureUser(username, userExtra(d.index))
    out.push(await admin.addDevice(d.device_id, username, true, kind))
  }
  return out
}

/** Creates users `<prefix>-N` with write tokens for the HTTP transport. */
export async function provisionWriters (admin: AdminClient, count: number, prefix: string): Promise<HttpWriter[]> {
  const out: HttpWriter[] = []
  for (let i = 0; i < count; i++) {
    const username = simUsername(prefix, i)
    await admin.ensureUser(username, { display_name: personLabel(i) })
    out.push({ username, token: await admin.issueToken(username, 'data:heart_rate:write') })
  }
  return out
}
