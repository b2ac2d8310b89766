// Worker: the reference broker. A bare Aedes instance on a loopback TCP port
// with its default in-memory persistence: no authentication, no storage, no
// API. Whatever hr-relay adds on its MQTT path is measured against this.
//
// start({ durable: true }) makes it "bare Aedes + sync batch": bare Aedes
// plus the least work of any relay that keeps hr-relay's two promises on its
// MQTT path, "acknowledged means stored" and "publish after storage". Each
// reading is written to LevelDB in a sync batch before Aedes acknowledges and
// forwards it: one record per reading (hr-relay writes four: the reading, its
// minute and hour rollups, the latest), grouped as hr-relay groups them
// (../lib/sync-batches.ts). Still no authentication,
// decoding, rollups or API. e2e-latency gives it a subscriber per device, as
// hr-relay sends each reading to its user's own WebSocket (bare Aedes has one
// subscriber for all). Bare Aedes → this is what durability and a connection
// per user cost here; this → hr-relay is hr-relay's own work.
import { createServer, type Server } from 'node:net'
import { Aedes } from 'aedes'
import { serve } from '../lib/proc.ts'
import { runtimeRecorder, type RuntimeWindow } from '../lib/runtime-window.ts'
import { SyncBatches } from '../lib/sync-batches.ts'

let server: Server | null = null
let broker: Aedes | null = null
let store: SyncBatches | null = null

async function start (options: { durable?: boolean } = {}): Promise<number> {
  broker = await Aedes.createBroker()
  const b = broker
  if (options.durable === true) {
    const st = store = await SyncBatches.open()
    b.authorizePublish = (_client, packet, done) => { st.add(packet.topic, packet.payload as Uint8Array, done) }
  }
  server = createServer(socket => { b.handle(socket) })
  await new Promise<void>(resolve => { server?.listen(0, '127.0.0.1', () => { resolve() }) })
  const addr = server.address()
  if (addr === null || typeof addr === 'string') throw new Error('no port')
  return addr.port
}

async function stop (): Promise<void> {
  const b = broker; const s = server; const st = store
  broker = null; server = null; store = null
  if (b !== null) await new Promise<void>(resolve => { b.close(() => { resolve() }) })
  if (s !== null) await new Promise<void>(resolve => { s.close(() => { resolve() }) })
  await st?.close()
}

/** Bare Aedes + sync batch: the sync batches written and readings stored since start (zero for bare Aedes). */
function counts (): { batches: number, stored: number } { return { batches: store?.batches ?? 0, stored: store?.stored ?? 0 } }

// The broker's own stalls in a measured window (GC pauses, event-loop delay), as hr-relay exports them at /metrics.
const runtime = runtimeRecorder()
async function windowStart (): Promise<void> { runtime.start() }
async function windowEnd (): Promise<RuntimeWindow> { return runtime.end() }

/** Clients connected to the broker now. */
function clients (): number { return broker?.connectedClients ?? 0 }

serve({ start, stop, counts, clients, windowStart, windowEnd, reset: stop })
