// A plain aedes broker on a loopback port for simulator tests: accepts every
// client, and records what arrives on device topics.
import { createServer, type Server } from 'node:net'
import { Aedes } from 'aedes'
import { parseDeviceTopic } from '../../firmware-protocol/mqtt.ts'

interface Tap { teardown (fn: () => unknown): void }

export interface Received { device_id: string, payload: Buffer }

export interface TestBroker {
  url: string
  received: Received[]
  /** CONNECTs accepted, by client id. */
  connects: Map<string, number>
  /** Resolves once `n` device publishes have arrived. */
  waitFor (n: number, timeoutMs?: number): Promise<void>
}

export async function startBroker (t: Tap): Promise<TestBroker> {
  const aedes = await Aedes.createBroker({ heartbeatInterval: 3_600_000 })
  const received: Received[] = []
  const connects = new Map<string, number>()
  const waiters: Array<{ n: number, resolve: () => void }> = []
  aedes.on('client', client => { connects.set(client.id, (connects.get(client.id) ?? 0) + 1) })
  aedes.on('publish', (packet, client) => {
    if (client === null || client === undefined) return
    const parsed = parseDeviceTopic(packet.topic)
    if (parsed === null) return
    received.push({ device_id: parsed.device_id, payload: Buffer.from(packet.payload as Buffer) })
    for (const w of waiters.splice(0)) {
      if (received.length >= w.n) w.resolve()
      else waiters.push(w)
    }
  })
  const server: Server = createServer(socket => { aedes.handle(socket) })
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', () => resolve()))
  const addr = server.address()
  const port = typeof addr === 'object' && addr !== null ? addr.port : 0
  t.teardown(async () => {
    await new Promise<void>(resolve => aedes.close(() => resolve()))
    await new Promise<void>(resolve => server.close(() => resolve()))
  })
  return {
    url: `mqtt://127.0.0.1:${port}`,
    received,
    connects,
    waitFor (n, timeoutMs = 30_000) {
      if (received.length >= n) return Promise.resolve()
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`only ${received.length} of ${n} publishes arrived`)), timeoutMs)
        waiters.push({ n, resolve: () => { clearTimeout(timer); resolve() } })
      })
    }
  }
}
