// A real UDP receiver on 127.0.0.1 (port 0) that decodes every datagram with
// osc-min, an OSC implementation independent of firmware-protocol/osc.ts.
import { createSocket } from 'node:dgram'
import { fromBuffer, type OscArgOutputOrArray } from 'osc-min'

export interface Received { address: string, args: OscArgOutputOrArray[] }

export interface OscReceiver {
  port: number
  messages: Received[]
  /** Resolves with the first n messages once that many have arrived. */
  waitFor (n: number): Promise<Received[]>
  close (): Promise<void>
}

export async function oscReceiver (): Promise<OscReceiver> {
  const socket = createSocket('udp4')
  const messages: Received[] = []
  const waiters = new Set<() => void>()
  socket.on('message', buf => {
    const packet = fromBuffer(buf)
    if (packet.oscType !== 'message') throw new Error('expected an OSC message, got a bundle')
    messages.push({ address: packet.address, args: packet.args })
    for (const w of [...waiters]) w()
  })
  await new Promise<void>(resolve => socket.bind(0, '127.0.0.1', resolve))
  return {
    port: socket.address().port,
    messages,
    waitFor: n => new Promise(resolve => {
      const check = (): void => { if (messages.length >= n) { waiters.delete(check); resolve(messages.slice(0, n)) } }
      waiters.add(check)
      check()
    }),
    close: () => new Promise(resolve => { socket.close(() => { resolve() }) })
  }
}

/** A manual clock for the output's timers: nothing fires until advance(). */
export class FakeTimers {
  private now = 0
  private nextId = 1
  private readonly pending = new Map<number, { at: number, fn: () => void }>()

  setTimeout = (fn: () => void, ms: number): unknown => {
    const id = this.nextId++
    this.pending.set(id, { at: this.now + ms, fn })
    return id
  }

  clearTimeout = (handle: unknown): void => { this.pending.delete(handle as number) }

  get size (): number { return this.pending.size }

  /** Runs every timer due within ms, in time order (timers set while running count too). */
  advance (ms: number): void {
    const end = this.now + ms
    for (;;) {
      let first: [number, { at: number, fn: () => void }] | undefined
      for (const e of this.pending) if (e[1].at <= end && (first === undefined || e[1].at < first[1].at)) first = e
      if (first === undefined) break
      this.pending.delete(first[0])
      this.now = first[1].at
      first[1].fn()
    }
    this.now = end
  }
}
