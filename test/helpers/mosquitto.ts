// A real Mosquitto (Debian package) on a loopback port chosen by the test,
// with on-disk persistence so that a subscriber's persistent session and its
// queued QoS 1 messages survive a stop/start of the broker.
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir, userInfo } from 'node:os'
import { join } from 'node:path'
import { freePort, stopChild, untilReady } from './processes.ts'

interface Tap { teardown (fn: () => unknown): void }

export const MOSQUITTO = '/usr/sbin/mosquitto'

export class Mosquitto {
  private child: ChildProcess | null = null
  private log = ''

  private constructor (readonly port: number, readonly dir: string, private readonly conf: string) {}

  /**
   * A broker in a temporary folder. `settings` replaces the anonymous access (for a configuration under test:
   * its own logins and ACL); `{dir}` in them is that folder.
   */
  static async create (t: Tap, settings?: (dir: string) => string[]): Promise<Mosquitto> {
    const dir = await mkdtemp(join(tmpdir(), 'hr-relay-mosquitto-'))
    const port = await freePort()
    const conf = join(dir, 'mosquitto.conf')
    await writeFile(conf, [
      `listener ${port} 127.0.0.1`,
      ...(settings === undefined ? ['allow_anonymous true'] : settings(dir)),
      // Run as root, mosquitto switches to the user 'mosquitto', which cannot write our temp dir.
      `user ${userInfo().username}`,
      'persistence true',
      `persistence_location ${dir}/`,
      'autosave_interval 0',
      'log_dest stderr',
      'log_type error',
      'log_type warning',
      'log_type notice',
      'log_type information',
      'max_inflight_messages 0',
      'max_queued_messages 0',
      ''
    ].join('\n'))
    const m = new Mosquitto(port, dir, conf)
    t.teardown(async () => {
      await m.stop()
      await rm(dir, { recursive: true, force: true })
    })
    return m
  }

  get url (): string { return `mqtt://127.0.0.1:${this.port}` }
  get running (): boolean { return this.child !== null }
  get output (): string { return this.log }

  /** Starts the broker; resolves once it is listening (its own log line). */
  async start (): Promise<void> {
    if (this.child !== null) return
    const child = spawn(MOSQUITTO, ['-c', this.conf], { stdio: ['ignore', 'ignore', 'pipe'] })
    this.child = child
    await untilReady(child, child.stderr, 'mosquitto',
      out => /Opening ipv4 listen socket on port \d+/.test(out) && /mosquitto version [\d.]+ running/.test(out),
      text => { this.log += text }, () => { if (this.child === child) this.child = null })
  }

  /** Stops the broker with SIGTERM (it saves its persistence file) and waits for the exit. */
  async stop (): Promise<void> {
    const child = this.child
    if (child === null) return
    this.child = null
    await stopChild(child, 'SIGTERM')
  }
}
