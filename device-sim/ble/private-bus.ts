// A private dbus-daemon with a system-bus-like, allow-everything policy, so
// the BlueZ emulator can own `org.bluez` and node-ble can talk to it exactly
// as it talks to the real system bus (through DBUS_SYSTEM_BUS_ADDRESS).
import { spawn } from 'node:child_process'
import { reapWithParent } from '../reaper.ts'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

export interface PrivateBus {
  /** e.g. `unix:path=/tmp/hr-relay-bus-XXXX/bus.sock` */
  address: string
  /** Kills the daemon and removes its files. Idempotent. */
  stop (): Promise<void>
}

function busConfig (socketPath: string): string {
  return `<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path=${socketPath}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <allow own="*"/>
    <allow send_type="method_call"/>
    <allow send_type="signal"/>
    <allow send_type="method_return"/>
    <allow send_type="error"/>
    <allow send_destination="*"/>
    <allow receive_type="method_call"/>
    <allow receive_type="signal"/>
    <allow receive_type="method_return"/>
    <allow receive_type="error"/>
    <allow receive_sender="*"/>
  </policy>
</busconfig>
`
}

export interface PrivateBusOptions {
  /**
   * Run the daemon in its own process group, so a Ctrl-C in the terminal
   * reaches only the process that owns it, which then stops it in order
   * (the demo stops it after the relay's BLE source).
   */
  detached?: boolean
}

/**
 * Starts `dbus-daemon --nofork --print-address` in a temporary directory
 * (or `dir` when given; the directory is then left in place on stop).
 * Resolves once the daemon has printed its address, i.e. is listening.
 */
export async function startPrivateBus (dir?: string, options: PrivateBusOptions = {}): Promise<PrivateBus> {
  const ownDir = dir === undefined
  const base = dir ?? await mkdtemp(join(tmpdir(), 'hr-relay-bus-'))
  const socketPath = join(base, 'bus.sock')
  const configPath = join(base, 'bus.conf')
  await writeFile(configPath, busConfig(socketPath))

  const child = spawn('dbus-daemon', [`--config-file=${configPath}`, '--nofork', '--print-address'], {
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: options.detached === true
  })
  const reaper = reapWithParent(child.pid, { detached: options.detached === true })
  let stderr = ''
  child.stderr.setEncoding('utf8')
  child.stderr.on('data', (chunk: string) => { stderr = (stderr + chunk).slice(-4000) })

  const printed = await new Promise<string>((resolve, reject) => {
    let out = ''
    const onData = (chunk: Buffer): void => {
      out += chunk.toString('utf8')
      const nl = out.indexOf('\n')
      if (nl >= 0) { cleanup(); resolve(out.slice(0, nl).trim()) }
    }
    const onExit = (code: number | null): void => {
      cleanup(); reject(new Error(`dbus-daemon exited with ${String(code)} before listening: ${stderr.trim()}`))
    }
    const onError = (err: Error): void => { cleanup(); reject(err) }
    const cleanup = (): void => {
      child.stdout.off('data', onData); child.off('exit', onExit); child.off('error', onError)
    }
    child.stdout.on('data', onData)
    child.once('exit', onExit)
    child.once('error', onError)
  }).catch(async (err: unknown) => {
    reaper.release()
    if (ownDir) await rm(base, { recursive: true, force: true })
    throw err
  })
  child.stdout.resume()

  // dbus-daemon prints `unix:path=...,guid=...`; clients only need the path.
  const address = printed.split(',')[0] ?? `unix:path=${socketPath}`
  let stopping: Promise<void> | undefined

  return {
    address,
    stop () {
      stopping ??= (async () => {
        if (child.exitCode === null && child.signalCode === null) {
          const exited = new Promise<void>(resolve => child.once('exit', () => resolve()))
          child.kill('SIGTERM')
          await exited
        }
        reaper.release()
        if (ownDir) await rm(base, { recursive: true, force: true })
        else await rm(socketPath, { force: true }).then(async () => await rm(configPath, { force: true }))
      })()
      return stopping
    }
  }
}
