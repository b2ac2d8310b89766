// A hub instance as a separate process (`hr-relay hub start --config FILE`), as an operator runs it, so that a
// test or a benchmark can kill it with SIGKILL. Its JSON log lines are kept; it is ready once it has subscribed.
import { spawn, type ChildProcess } from 'node:child_process'
import { setTimeout as delay } from 'node:timers/promises'
import { BIN } from './cli.ts'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Mosquitto } from './mosquitto.ts'
import { Postgres } from './postgres.ts'
import { stopChild, untilReady } from './processes.ts'

export class HubProcess {
  child: ChildProcess | null = null
  url = ''
  lines: string[] = []
  stderr = ''

  /** `env` is added to this process's environment; by default the hub runs from the TypeScript sources. */
  constructor (readonly configFile: string, readonly clientId: string, private readonly env: Record<string, string> = { HR_RELAY_FROM_SOURCE: '1' }) {}

  get pid (): number { return this.child?.pid ?? -1 }

  /**
   * Starts the instance; resolves once it has subscribed at the broker and its HTTP server listens (its own log
   * lines, which come in either order: the broker's answer may arrive before or after the listen).
   */
  async start (): Promise<void> {
    const child = spawn(process.execPath, [BIN, 'hub', 'start', '--config', this.configFile], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...this.env } })
    this.child = child
    child.stderr.on('data', d => { this.stderr += String(d) })
    let pending = ''
    const from = this.lines.length
    this.url = ''
    await untilReady(child, child.stdout, `hub ${this.clientId}`, () => this.url !== '' && this.lines.slice(from).some(l => l.includes('"msg":"subscribed at the broker"')), text => {
      const parts = (pending + text).split('\n')
      pending = parts.pop() ?? ''
      for (const line of parts) {
        this.lines.push(line)
        const started = /"msg":"hub instance started"/.test(line) ? (JSON.parse(line) as { url?: string }).url : undefined
        if (typeof started === 'string') this.url = started
      }
    }, () => { if (this.child === child) this.child = null })
  }

  kill (): void { this.child?.kill('SIGKILL'); this.child = null }

  async stop (): Promise<void> {
    const child = this.child
    if (child === null) return
    this.child = null
    await stopChild(child, 'SIGTERM')
  }

  /** Waits for the next 'subscribed at the broker' line after `from` lines (a reconnection). */
  async subscribedAgain (from: number, ms = 60_000): Promise<void> {
    const end = Date.now() + ms
    while (!this.lines.slice(from).some(l => l.includes('"subscribed at the broker"'))) {
      if (Date.now() > end) throw new Error(`hub ${this.clientId} did not subscribe again:\n${this.lines.slice(from).join('\n')}`)
      await delay(50)
    }
  }
}

interface Tap { teardown (fn: () => unknown): void }

export interface HubChainOptions {
  instances: number
  /** Instance i's mqtt.client_id is `<clientIdPrefix>-<i>`. */
  clientIdPrefix: string
  topicRoot: string
  /** Extra keys of each instance's `mqtt` configuration. */
  mqtt?: Record<string, unknown>
  /** The instances' environment (HubProcess's default: the TypeScript sources). */
  env?: Record<string, string>
}

/**
 * What a hub runs on, for a test or a benchmark: a temporary PostgreSQL with a `hub` database, a Mosquitto with
 * persistence, and `instances` hub instances configured on them, all started together (the migrations' advisory
 * lock lets one apply them). Everything stops and is removed at `t`'s teardown.
 */
export async function startHubChain (t: Tap, o: HubChainOptions): Promise<{ postgres: Postgres, dbUrl: string, broker: Mosquitto, hubs: HubProcess[] }> {
  const postgres = await Postgres.create(t)
  await postgres.start()
  const dbUrl = await postgres.createDatabase('hub')
  const broker = await Mosquitto.create(t)
  await broker.start()
  const dir = await mkdtemp(join(tmpdir(), 'hr-relay-hubcfg-'))
  t.teardown(async () => { await rm(dir, { recursive: true, force: true }) })
  const hubs: HubProcess[] = []
  for (let i = 0; i < o.instances; i++) {
    const file = join(dir, `hub-${i}.json`)
    const clientId = `${o.clientIdPrefix}-${i}`
    await writeFile(file, JSON.stringify({ log_level: 'info', postgres: { url: dbUrl }, mqtt: { url: broker.url, client_id: clientId, topic_root: o.topicRoot, ...o.mqtt }, http: { port: 0 } }))
    hubs.push(o.env === undefined ? new HubProcess(file, clientId) : new HubProcess(file, clientId, o.env))
  }
  t.teardown(async () => { for (const h of hubs) await h.stop() })
  await Promise.all(hubs.map(async h => { await h.start() }))
  return { postgres, dbUrl, broker, hubs }
}
