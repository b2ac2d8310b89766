// Worker: the reference broker. A bare Aedes instance on a loopback TCP port
// with its default in-memory persistence: no authentication, no storage, no
// API. Whatever hr-relay adds on its MQTT path is measured against this.
import { createServer, type Server } from 'node:net'
import { Aedes } from 'aedes'
import { serve } from '../lib/proc.ts'
import { runtimeRecorder, type RuntimeWindow } from '../lib/runtime-window.ts'

let server: Server | null = null
let broker: Aedes | null = null

async function start (): Promise<number> {
  broker = await Aedes.createBroker()
  const b = broker
  server = createServer(socket => { b.handle(socket) })
  await new Promise<void>(resolve => { server?.listen(0, '127.0.0.1', () => { resolve() }) })
  const addr = server.address()
  if (addr === null || typeof addr === 'string') throw new Error('no port')
  return addr.port
}

async function stop (): Promise<void> {
  const b = broker; const s = server
  broker = null; server = null
  if (b !== null) await new Promise<void>(resolve => { b.close(() => { resolve() }) })
  if (s !== null) await new Promise<void>(resolve => { s.close(() => { resolve() }) })
}

// The broker's own stalls in a measured window (GC pauses, event-loop delay), as hr-relay exports them at /metrics.
const runtime = runtimeRecorder()
async function windowStart (): Promise<void> { runtime.start() }
async function windowEnd (): Promise<RuntimeWindow> { return runtime.end() }

serve({ start, stop, windowStart, windowEnd, reset: stop })
