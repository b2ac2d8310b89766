// Starts a real hr-relay server for a scenario: `node bin/hr-relay.cjs start`
// on loopback with a fresh data directory, ports 0, no demo, BLE off unless
// asked. Reads <data-dir>/server.json for the URL and MQTT port.
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { BenchFailure, DependencyMissing } from './errors.ts'

export const ROOT = fileURLToPath(new URL('../../', import.meta.url))

export interface StartOptions {
  /** Use this data directory (already populated); default: a fresh temp dir removed on stop. */
  dataDir?: string
  /** Remove `dataDir` on stop too (default: only a directory this module created). */
  removeDataDir?: boolean
  /** Written as the --config file. */
  config?: Record<string, unknown>
  /** Extra environment (e.g. DBUS_SYSTEM_BUS_ADDRESS, HR_RELAY_BLE=1). */
  env?: Record<string, string>
  /** Write a V8 CPU profile into this directory when the server exits. */
  cpuProfileDir?: string
  /** Run this compiled entry (bench/lib/build.ts) instead of bin/hr-relay.cjs running the sources. */
  compiledEntry?: string
  /** Run the server pinned to these CPUs (`taskset -c LIST node ...`), e.g. "0" for the pi-profile. */
  cpus?: string
  /** Extra node options before the script, e.g. --max-old-space-size=256. */
  nodeOptions?: string[]
}

export interface BenchServer {
  url: string
  mqttPort: number | null
  pid: number
  dataDir: string
  adminToken: string
  admin<T = any> (method: string, path: string, body?: unknown): Promise<T>
  /** Resident set size of the server process (bytes). */
  rss (): Promise<number>
  stop (): Promise<void>
}

export async function tempDir (prefix: string): Promise<string> {
  return await mkdtemp(join(tmpdir(), `hr-relay-bench-${prefix}-`))
}

export async function rssOf (pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8')
  const m = /^VmRSS:\s+(\d+)\s+kB$/m.exec(status)
  if (m === null) throw new BenchFailure(`no VmRSS for pid ${pid}`)
  return Number(m[1]) * 1024
}

/** Waits until `file` holds complete JSON (the server writes it once it listens). */
async function waitForJson (file: string, child: ChildProcess, timeoutMs: number, stderr: () => string): Promise<any> {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new BenchFailure(`hr-relay exited with code ${child.exitCode} before it was ready:\n${stderr()}`)
    try { return JSON.parse(await readFile(file, 'utf8')) } catch { /* not yet, or half written */ }
    await new Promise(resolve => setTimeout(resolve, 50))
  }
  throw new BenchFailure(`hr-relay did not write ${file} within ${timeoutMs} ms:\n${stderr()}`)
}

export async function startServer (options: StartOptions = {}): Promise<BenchServer> {
  const own = options.dataDir === undefined || options.removeDataDir === true
  const dataDir = options.dataDir ?? await tempDir('data')
  const launcher = options.compiledEntry === undefined ? ['bin/hr-relay.cjs'] : ['bench/lib/compiled-server.mjs', options.compiledEntry]
  const args = [...launcher, 'start', '--data-dir', dataDir, '--host', '127.0.0.1', '--http-port', '0', '--mqtt-port', '0', '--no-demo']
  if (options.config !== undefined) {
    const file = join(dataDir, 'bench-config.json')
    await writeFile(file, JSON.stringify(options.config))
    args.push('--config', file)
  }
  const execArgv = [...(options.nodeOptions ?? []), ...(options.cpuProfileDir === undefined ? [] : ['--cpu-prof', '--cpu-prof-dir', options.cpuProfileDir])]
  // taskset execs node, so the child's pid is the server's (for /proc/<pid>/stat and RSS).
  const [cmd, ...cmdArgs] = options.cpus === undefined ? [process.execPath, ...execArgv, ...args] : ['taskset', '-c', options.cpus, process.execPath, ...execArgv, ...args]
  const child = spawn(cmd as string, cmdArgs, {
    cwd: ROOT,
    env: { ...process.env, HR_RELAY_BLE: '0', HR_RELAY_LOG_LEVEL: 'warn', HR_RELAY_DATA_DIR: dataDir, ...options.env },
    stdio: ['ignore', 'ignore', 'pipe']
  })
  let err = ''
  child.stderr?.on('data', (c: Buffer) => { err = (err + c.toString('utf8')).slice(-8000) })
  const exited = new Promise<void>(resolve => { child.once('exit', () => { resolve() }) })
  let info: { url: string, pid: number, mqtt_port: number | null }
  try {
    info = await waitForJson(join(dataDir, 'server.json'), child, 60_000, () => err)
  } catch (e) {
    child.kill('SIGKILL')
    await exited
    if (own) await rm(dataDir, { recursive: true, force: true })
    throw e
  }
  const adminToken = (await readFile(join(dataDir, 'admin-token'), 'utf8')).trim()
  const admin = async <T>(method: string, path: string, body?: unknown): Promise<T> => {
    const res = await fetch(info.url + path, {
      method,
      headers: { authorization: `Bearer ${adminToken}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body)
    })
    const text = await res.text()
    if (!res.ok) throw new BenchFailure(`admin ${method} ${path}: HTTP ${res.status} ${text.slice(0, 300)}`)
    return (text === '' ? undefined : JSON.parse(text)) as T
  }
  let stopped = false
  return {
    url: info.url,
    mqttPort: info.mqtt_port,
    pid: child.pid ?? info.pid,
    dataDir,
    adminToken,
    admin,
    rss: async () => await rssOf(child.pid ?? info.pid),
    stop: async () => {
      if (stopped) return
      stopped = true
      if (child.exitCode === null) {
        child.kill('SIGTERM')
        const timer = setTimeout(() => { child.kill('SIGKILL') }, 20_000)
        await exited
        clearTimeout(timer)
      }
      if (own) await rm(dataDir, { recursive: true, force: true })
    }
  }
}

/** Fails with DependencyMissing when the server answers 404 "route not found" for a path. */
export async function requireRoute (server: BenchServer, path: string, headers: Record<string, string> = {}): Promise<Response> {
  const res = await fetch(server.url + path, { headers })
  if (res.status === 404) {
    const text = await res.text()
    if (/Route .* not found/i.test(text)) throw new DependencyMissing(`route ${path.split('?')[0] ?? path}`, `hr-relay answers 404 ${text.slice(0, 120)}`)
  }
  return res
}

export function requireMqtt (server: BenchServer): number {
  if (server.mqttPort === null) throw new DependencyMissing('embedded MQTT broker', 'server.json has mqtt_port null (the broker is not wired into relay/main.ts)')
  return server.mqttPort
}
