// The simulator's client of hr-relay's admin API: creating simulated people
// (users), pairing their devices, issuing tokens, creating a room. It talks
// HTTP to a running service with the admin token, as `hr-relay admin` does,
// and knows the admin API only by its wire format: ADMIN_CALLS below is the
// table of the requests it makes, the same ones the service's own CLI sends
// for those commands (test/device-sim/admin-client.test.ts holds the two
// tables to each other).
import { readFile } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import { SimError } from './errors.ts'

export interface DeviceCredentials { device_id: string, mqtt_username: string, mqtt_password: string }

export class AdminHttpError extends SimError {
  constructor (readonly status: number, readonly body: unknown, what: string) {
    super('admin_failed', `${what}: HTTP ${status} ${typeof body === 'string' ? body : JSON.stringify(body)}`)
  }
}

type Method = 'GET' | 'POST' | 'DELETE' | 'PATCH' | 'PUT'
type Flags = Record<string, string | boolean | string[] | undefined>

/** One admin API request: method, path and JSON body. */
export interface AdminRequest { method: Method, path: string, body?: unknown }

const seg = (s: string | undefined): string => encodeURIComponent(s ?? '')

/**
 * The admin commands the simulator runs, by the words of `hr-relay admin`,
 * each with the request it is on the wire (docs/operator.md "Users, apps and tokens").
 */
export const ADMIN_CALLS: Record<string, (args: string[], flags: Flags) => AdminRequest> = {
  'device add': ([deviceId], f) => ({ method: 'POST', path: '/admin/devices', body: { device_id: deviceId, username: f.user, kind: f.kind, name: f.name } }),
  'device remove': ([deviceId]) => ({ method: 'DELETE', path: `/admin/devices/${seg(deviceId)}` }),
  'room add': ([name]) => ({ method: 'POST', path: '/admin/rooms', body: { name } }),
  'room member add': ([roomId, username], f) => ({ method: 'POST', path: `/admin/rooms/${seg(roomId)}/members`, body: { username, display_name: f['display-name'] } }),
  'user set': ([username], f) => ({ method: 'PUT', path: `/admin/users/${seg(username)}/home-assistant`, body: { enabled: f['home-assistant'] === 'on' } })
}

export class AdminClient {
  constructor (readonly url: string, private readonly token: string) {}

  /** From a data directory of a running service (server.json + admin-token). */
  static async forDataDir (dataDir: string): Promise<AdminClient> {
    const dir = resolve(dataDir)
    let url: string
    let token: string
    try {
      url = (JSON.parse(await readFile(join(dir, 'server.json'), 'utf8')) as { url: string }).url
      token = (await readFile(join(dir, 'admin-token'), 'utf8')).trim()
    } catch (err) {
      throw new SimError('admin_failed', `no running hr-relay for data directory ${dir}: ${(err as Error).message}`, { cause: err })
    }
    return new AdminClient(url, token)
  }

  async request (method: Method, path: string, body?: unknown): Promise<{ status: number, body: any }> {
    let res: Response
    try {
      res = await fetch(new URL(path, this.url), {
        method,
        headers: { authorization: `Bearer ${this.token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body)
      })
    } catch (err) {
      throw new SimError('admin_failed', `cannot reach ${this.url}: ${(err as Error).message}`, { cause: err })
    }
    const text = await res.text()
    let parsed: unknown = text
    try { parsed = text === '' ? undefined : JSON.parse(text) } catch { /* keep text */ }
    return { status: res.status, body: parsed }
  }

  private async ok (method: Method, path: string, body: unknown, what: string): Promise<any> {
    const r = await this.request(method, path, body)
    if (r.status < 200 || r.status > 299) throw new AdminHttpError(r.status, r.body, what)
    return r.body
  }

  /** True when this client knows the admin command `words` (e.g. ['device', 'add']). */
  static has (words: string[]): boolean {
    return ADMIN_CALLS[words.join(' ')] !== undefined
  }

  /** Runs an admin command by its words, as `hr-relay admin <words> <args> --flags` would. */
  async command (words: string[], args: string[], flags: Flags = {}): Promise<{ status: number, body: any }> {
    const call = ADMIN_CALLS[words.join(' ')]
    if (call === undefined) throw new SimError('admin_failed', `the simulator has no admin command "${words.join(' ')}"`)
    const req = call(args, flags)
    return await this.request(req.method, req.path, req.body)
  }

  /** Creates the user, or finds the existing one; returns the profile id. */
  async ensureUser (username: string, extra: Record<string, unknown> = {}): Promise<string> {
    const created = await this.request('POST', '/admin/users', { username, password: `sim-${username}-password`, ...extra })
    if (created.status === 201) return created.body.profile_id as string
    if (created.status !== 409) throw new AdminHttpError(created.status, created.body, `create user ${username}`)
    const list = await this.ok('GET', '/admin/users', undefined, 'list users')
    const user = (list.users as Array<{ username: string, profile_id: string }>).find(u => u.username === username)
    if (user === undefined) throw new SimError('admin_failed', `user ${username} exists but is not listed`)
    return user.profile_id
  }

  async issueToken (username: string, scope: string): Promise<string> {
    return (await this.ok('POST', '/admin/tokens', { username, scope }, `token for ${username}`)).access_token as string
  }

  /**
   * Pairs `deviceId` with `username` and returns its MQTT credentials.
   * An existing pairing is removed and added again when `replace` (its
   * password is stored hashed and cannot be read back).
   */
  async addDevice (deviceId: string, username: string, replace = false, kind: 'ble' | 'serial' | 'mqtt' | 'ant' | 'any' = 'mqtt'): Promise<DeviceCredentials> {
    const flags = { user: username, kind, json: true }
    let r = await this.command(['device', 'add'], [deviceId], flags)
    if (r.status === 409 && replace) {
      await this.removeDevice(deviceId)
      r = await this.command(['device', 'add'], [deviceId], flags)
    }
    if (r.status < 200 || r.status > 299) throw new AdminHttpError(r.status, r.body, `device add ${deviceId}`)
    const b = r.body as Partial<DeviceCredentials>
    return { device_id: String(b.device_id ?? deviceId), mqtt_username: String(b.mqtt_username ?? ''), mqtt_password: String(b.mqtt_password ?? '') }
  }

  async removeDevice (deviceId: string): Promise<void> {
    const r = await this.command(['device', 'remove'], [deviceId], { json: true })
    if ((r.status < 200 || r.status > 299) && r.status !== 404) throw new AdminHttpError(r.status, r.body, `device remove ${deviceId}`)
  }
}
