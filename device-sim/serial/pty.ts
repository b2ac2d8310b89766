// A pseudo-terminal pair for tests and demos: socat joins two ptys back to back
// and links them at stable names, `<dir>/dev` (the simulated device opens it)
// and `<dir>/relay` (the relay's serial source opens it), so whatever one side
// writes the other side reads, through the real tty layer.
//
// unplug() ends socat: both pty masters close, so a reader on either slave
// gets EIO and serialport reports a disconnect, as when a USB adapter is
// pulled. plug() starts socat again with the same link names, so the relay can
// reopen the very same path, as when the adapter is put back. (Closing only
// the device end is not an unplug: socat keeps both pty slaves open itself, so
// the relay end just goes quiet. A device sim must reopen devicePath after
// plug(), since it is a new pty.)
import { reapWithParent, type Reaper } from '../reaper.ts'
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtemp, rm, unlink, realpath } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

export interface PtyPair {
  /** Path the simulated device opens. */
  readonly devicePath: string
  /** Path the relay opens. Stays the same across unplug()/plug(). */
  readonly relayPath: string
  /** True while socat runs and both ends exist. */
  readonly plugged: boolean
  /** Ends socat so both ends disappear; resolves when it has exited and the links are gone. */
  unplug (): Promise<void>
  /** Recreates the pair at the same link names; resolves when both ends are ready. */
  plug (): Promise<void>
  /** unplug() and remove the temporary directory. Idempotent. */
  close (): Promise<void>
}

export interface PtyPairOptions {
  /** Directory for the links; a fresh temporary one by default (removed by close()). */
  dir?: string
  /** How long to wait for socat to report both ends ready. Default 10 s. */
  readyTimeoutMs?: number
  /**
   * Run socat in its own process group, so a Ctrl-C in the terminal reaches
   * only the process that owns the pair, which closes it in order.
   */
  detached?: boolean
}

// socat -d -d prints "N starting data transfer loop ..." once both addresses
// are open (the pty links are created while opening each address).
const READY_LINE = /starting data transfer loop/

export async function openPtyPair (options: PtyPairOptions = {}): Promise<PtyPair> {
  const ownDir = options.dir === undefined
  const dir = options.dir ?? await mkdtemp(join(tmpdir(), 'hr-relay-pty-'))
  const devicePath = join(dir, 'dev')
  const relayPath = join(dir, 'relay')
  const readyTimeoutMs = options.readyTimeoutMs ?? 10_000
  let child: ChildProcess | undefined
  let reaper: Reaper | undefined
  let closed = false

  async function removeLinks (): Promise<void> {
    await unlink(devicePath).catch(() => {})
    await unlink(relayPath).catch(() => {})
  }

  async function start (): Promise<void> {
    await removeLinks()
    const proc = spawn('socat', [
      '-d', '-d',
      `pty,raw,echo=0,link=${devicePath}`,
      `pty,raw,echo=0,link=${relayPath}`
    ], { stdio: ['ignore', 'ignore', 'pipe'], detached: options.detached === true })
    child = proc
    reaper = reapWithParent(proc.pid, { detached: options.detached === true })
    await new Promise<void>((resolve, reject) => {
      let log = ''
      const timer = setTimeout(() => finish(new Error(`socat not ready after ${readyTimeoutMs} ms: ${log}`)), readyTimeoutMs)
      function finish (err?: Error): void {
        clearTimeout(timer)
        proc.stderr?.off('data', onData)
        proc.off('exit', onExit)
        proc.off('error', onError)
        if (err !== undefined) {
          proc.kill('SIGKILL')
          reaper?.release()
          reaper = undefined
          reject(err)
        } else {
          resolve()
        }
      }
      function onData (chunk: Buffer): void {
        log += chunk.toString('utf8')
        if (READY_LINE.test(log)) finish()
      }
      function onExit (code: number | null, sig: string | null): void {
        finish(new Error(`socat exited before ready (code ${String(code)}, signal ${String(sig)}): ${log}`))
      }
      function onError (err: Error): void { finish(err) }
      proc.stderr?.on('data', onData)
      proc.once('exit', onExit)
      proc.once('error', onError)
    })
    // Keep draining stderr so socat never blocks on a full pipe.
    proc.stderr?.resume()
    // Both links must resolve to live pty slaves before anyone opens them.
    await realpath(devicePath)
    await realpath(relayPath)
  }

  async function stopSocat (): Promise<void> {
    const proc = child
    child = undefined
    if (proc !== undefined && proc.exitCode === null && proc.signalCode === null) {
      await new Promise<void>(resolve => {
        proc.once('exit', () => resolve())
        proc.kill('SIGTERM')
      })
    }
    reaper?.release()
    reaper = undefined
    // socat removes its links on SIGTERM; make sure, in case it died harder.
    await removeLinks()
  }

  await start()

  return {
    devicePath,
    relayPath,
    get plugged () { return child !== undefined && child.exitCode === null && child.signalCode === null },
    unplug: stopSocat,
    async plug () {
      if (closed) throw new Error('pty pair is closed')
      if (child !== undefined) return
      await start()
    },
    async close () {
      if (closed) return
      closed = true
      await stopSocat()
      if (ownDir) await rm(dir, { recursive: true, force: true })
    }
  }
}
