// Starts the whole service in-process on loopback with a fresh data directory
// (port 0), and gives tests small helpers to create users, clients and tokens
// through the admin API, as the operator would.
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pino from 'pino'
import { validateConfig } from '../../relay/config.ts'
import { startService, type RunningService } from '../../relay/main.ts'

export interface TestService {
  url: string
  dataDir: string
  adminToken: string
  service: RunningService
  /** Calls the admin API; throws on a non-2xx answer. */
  admin (method: string, path: string, body?: unknown): Promise<any>
  /** Creates a user (password 'password123') and returns its profile id. */
  user (username: string, extra?: Record<string, unknown>): Promise<string>
  /** Issues a manual token with the given scopes for a user. */
  token (username: string, scope: string, expiresIn?: number): Promise<string>
  /** Registers a client; returns id and secret. */
  client (redirectUris: string[], extra?: Record<string, unknown>): Promise<{ client_id: string, client_secret: string | null }>
  stop (): Promise<void>
}

interface Tap { teardown (fn: () => unknown): void }

export async function startTestService (t: Tap, config: Record<string, any> = {}): Promise<TestService> {
  const dataDir = config.data_dir ?? await mkdtemp(join(tmpdir(), 'hr-relay-test-'))
  const cfg = validateConfig({
    demo: false,
    log_level: 'silent',
    ...config,
    data_dir: dataDir,
    data: { ...(config.data ?? {}) },
    http: { host: '127.0.0.1', port: 0, rate_limit_per_second: 0, ...(config.http ?? {}) },
    mqtt: { port: 0, ...(config.mqtt ?? {}) },
    ble: { enabled: false, ...(config.ble ?? {}) }
  })
  const service = await startService(cfg, { logger: pino({ level: process.env.HR_RELAY_TEST_LOG ?? 'silent' }) })
  const adminToken = (await readFile(service.adminTokenFile, 'utf8')).trim()
  let stopped = false
  const stop = async (): Promise<void> => {
    if (stopped) return
    stopped = true
    await service.close()
  }
  t.teardown(async () => {
    await stop()
    if (config.data_dir === undefined) await rm(dataDir, { recursive: true, force: true })
  })
  const admin = async (method: string, path: string, body?: unknown): Promise<any> => {
    const res = await fetch(service.httpUrl + path, {
      method,
      headers: { authorization: `Bearer ${adminToken}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body)
    })
    const text = await res.text()
    if (!res.ok) throw new Error(`admin ${method} ${path}: ${res.status} ${text}`)
    return text === '' ? undefined : JSON.parse(text)
  }
  return {
    url: service.httpUrl,
    dataDir,
    adminToken,
    service,
    admin,
    stop,
    user: async (username, extra = {}) => (await admin('POST', '/admin/users', { username, password: 'password123', ...extra })).profile_id,
    token: async (username, scope, expiresIn) => (await admin('POST', '/admin/tokens', { username, scope, ...(expiresIn === undefined ? {} : { expires_in: expiresIn }) })).access_token,
    client: async (redirectUris, extra = {}) => {
      const r = await admin('POST', '/admin/clients', { name: 'Test App', redirect_uris: redirectUris, ...extra })
      return { client_id: r.client_id, client_secret: r.client_secret }
    }
  }
}
