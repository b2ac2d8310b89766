// What the helpers that run a real server as a child process (Mosquitto, PostgreSQL, a hub instance) share:
// a free loopback port, waiting for the line that says it is ready, and stopping it with a signal.
import type { ChildProcess } from 'node:child_process'
import { createServer } from 'node:net'
import type { Readable } from 'node:stream'

/** A TCP port free on 127.0.0.1 at the time of the call. */
export async function freePort (): Promise<number> {
  const server = createServer()
  await new Promise<void>(resolve => { server.listen(0, '127.0.0.1', () => { resolve() }) })
  const addr = server.address()
  await new Promise<void>(resolve => { server.close(() => { resolve() }) })
  if (typeof addr !== 'object' || addr === null) throw new Error('no port')
  return addr.port
}

/**
 * Resolves once `ready` holds for what `stream` has printed so far (every chunk also goes to `onData`); rejects
 * when the child exits first, with its output. `onExit` runs on any exit, also after the child was ready.
 */
export async function untilReady (child: ChildProcess, stream: Readable | null, name: string, ready: (output: string) => boolean, onData: (text: string) => void = () => {}, onExit: () => void = () => {}): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    let buffered = ''
    stream?.on('data', (d: Buffer) => {
      buffered += d.toString()
      onData(d.toString())
      if (ready(buffered)) resolve()
    })
    child.once('exit', code => { onExit(); reject(new Error(`${name} exited with ${String(code)}:\n${buffered}`)) })
    child.once('error', reject)
  })
}

/** Sends `signal` and waits for the exit. */
export async function stopChild (child: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return
  const exited = new Promise<void>(resolve => { child.once('exit', () => { resolve() }) })
  child.kill(signal)
  await exited
}
