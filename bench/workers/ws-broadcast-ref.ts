// Worker: the ws-fanout reference. A bare `ws` server: a publisher connected
// to /publish/<label> sends readings, and the server forwards each message
// as it is to every viewer connected to /view/<label>. No application code.
//
// start({ durable: true }) makes it "bare ws + sync batch": each message is
// first stored in a LevelDB sync batch, grouped as hr-relay groups readings
// (../lib/sync-batches.ts), and forwarded once it is durable, as hr-relay
// publishes a reading only after storing it. Bare ws → this is what
// durability costs the fan-out here; this → hr-relay is hr-relay's own work.
import { WebSocketServer, type WebSocket } from 'ws'
import { serve } from '../lib/proc.ts'
import { SyncBatches } from '../lib/sync-batches.ts'

let wss: WebSocketServer | null = null
let store: SyncBatches | null = null

async function start (options: { durable?: boolean } = {}): Promise<number> {
  const rooms = new Map<string, Set<WebSocket>>()
  const st = options.durable === true ? store = await SyncBatches.open() : null
  const forward = (label: string, data: Buffer): void => { for (const v of rooms.get(label) ?? []) v.send(data) }
  wss = new WebSocketServer({ host: '127.0.0.1', port: 0, perMessageDeflate: false })
  wss.on('connection', (ws, req) => {
    const [, kind, label] = (req.url ?? '').split('/')
    if (label === undefined) { ws.close(1008); return }
    if (kind === 'view') {
      let set = rooms.get(label)
      if (set === undefined) rooms.set(label, set = new Set())
      set.add(ws)
      ws.on('close', () => { set?.delete(ws) })
    } else if (kind === 'publish') {
      ws.on('message', (data: Buffer) => {
        if (st === null) forward(label, data)
        else st.add(label, data, err => { if (err === null) forward(label, data) })
      })
    } else ws.close(1008)
  })
  await new Promise<void>(resolve => { wss?.once('listening', () => { resolve() }) })
  const addr = wss.address()
  if (addr === null || typeof addr === 'string') throw new Error('no port')
  return addr.port
}

async function stop (): Promise<void> {
  for (const c of wss?.clients ?? []) c.terminate()
  await new Promise<void>(resolve => { wss?.close(() => { resolve() }) })
  const st = store
  store = null
  await st?.close()
}

/** Bare ws + sync batch: the sync batches written and messages stored since start (zero for bare ws). */
function counts (): { batches: number, stored: number } { return { batches: store?.batches ?? 0, stored: store?.stored ?? 0 } }

serve({ start, stop, counts })
