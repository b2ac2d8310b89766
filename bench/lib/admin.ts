// Provisioning through the operator's own paths: users and tokens through the
// admin API, devices through the `hr-relay admin device add` command's request
// (taken from the CLI's command table, so the bench follows whatever route the
// device registry exposes).
import type { BenchServer } from './server.ts'
import { DependencyMissing } from './errors.ts'

export interface BenchUser { username: string, profile_id: string, token: string }
export interface BenchDevice { device_id: string, username: string, mqtt_username: string, mqtt_password: string }

/** Runs fn over items with at most `limit` in flight; results in input order. */
export async function pool<T, R> (items: readonly T[], limit: number, fn: (item: T, i: number) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length)
  let next = 0
  const lane = async (): Promise<void> => {
    while (next < items.length) {
      const i = next++
      out[i] = await fn(items[i] as T, i)
    }
  }
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane))
  return out
}

export const READ_SCOPES = 'data:heart_rate:read data:heart_rate:write data:statistics:read'

/**
 * Requests in flight while provisioning: each user costs the server one scrypt on its libuv pool (4 threads),
 * so 8 keeps the pool busy while the other requests' HTTP and store work runs.
 */
const IN_FLIGHT = 8

async function createUser (server: BenchServer, username: string): Promise<BenchUser> {
  const u = await server.admin<{ profile_id: string }>('POST', '/admin/users', { username, password: 'bench-password-1' })
  const t = await server.admin<{ access_token: string }>('POST', '/admin/tokens', { username, scope: READ_SCOPES })
  return { username, profile_id: u.profile_id, token: t.access_token }
}

/** Users `${prefix}${i}` with one token each (read, write, statistics). */
export async function createUsers (server: BenchServer, count: number, prefix = 'u'): Promise<BenchUser[]> {
  const names = Array.from({ length: count }, (_, i) => `${prefix}${i}`)
  return await pool(names, IN_FLIGHT, async username => await createUser(server, username))
}

interface AdminRequest { method: string, path: string, body?: unknown }
type Build = (args: string[], flags: Record<string, unknown>) => AdminRequest

let deviceAdd: Build | undefined
async function deviceAddRequest (): Promise<Build> {
  if (deviceAdd !== undefined) return deviceAdd
  await import('../../relay/cli-entry.ts')
  const { ADMIN_COMMANDS } = await import('../../relay/cli-admin.ts')
  const cmd = ADMIN_COMMANDS.find(c => c.words.join(' ') === 'device add')
  if (cmd === undefined) throw new DependencyMissing('hr-relay admin device add', 'the device registry has not registered its admin command (relay/cli-admin.ts ADMIN_COMMANDS)')
  deviceAdd = (args, flags) => cmd.request(args, flags as any)
  return deviceAdd
}

function findPassword (body: any): { username: string, password: string } | undefined {
  const pw = body?.mqtt_password ?? body?.mqtt?.password ?? body?.password
  const user = body?.mqtt_username ?? body?.mqtt?.username ?? body?.device?.mqtt_username ?? body?.device_id ?? body?.device?.device_id
  return typeof pw === 'string' && typeof user === 'string' ? { username: user, password: pw } : undefined
}

/** Pairs device `device_id` with `username` (kind mqtt) and returns its MQTT credentials. */
export async function addDevice (server: BenchServer, deviceId: string, username: string, kind = 'mqtt'): Promise<BenchDevice> {
  const build = await deviceAddRequest()
  const req = build([deviceId], { user: username, kind, json: true })
  const body = await server.admin(req.method, req.path, req.body)
  const creds = findPassword(body)
  if (creds === undefined) {
    if (kind !== 'mqtt') return { device_id: deviceId, username, mqtt_username: deviceId, mqtt_password: '' }
    throw new DependencyMissing('device add response', `no MQTT credentials in ${JSON.stringify(body).slice(0, 200)}`)
  }
  return { device_id: deviceId, username, mqtt_username: creds.username, mqtt_password: creds.password }
}

/** N users, each with one MQTT device `${prefix}dev${i}`. */
export async function createFleet (server: BenchServer, count: number, prefix = 'u'): Promise<{ users: BenchUser[], devices: BenchDevice[] }> {
  await deviceAddRequest() // the CLI's command table, loaded once before the lanes start
  const made = await pool(Array.from({ length: count }, (_, i) => i), IN_FLIGHT, async i => {
    const user = await createUser(server, `${prefix}${i}`)
    return { user, device: await addDevice(server, `${prefix}dev${i}`, user.username) }
  })
  return { users: made.map(m => m.user), devices: made.map(m => m.device) }
}
