// Worker: the ws-fanout reference. A bare `ws` server: a publisher connected
// to /publish/<label> sends readings, and the server forwards each message
// as it is to every viewer connected to /view/<label>. No application code.
import { WebSocketServer, type WebSocket } from 'ws'
import { serve } from '../lib/proc.ts'

let wss: WebSocketServer | null = null

async function start (): Promise<number> {
  const rooms = new Map<string, Set<WebSocket>>()
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
        for (const v of rooms.get(label) ?? []) v.send(data)
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
}

serve({ start, stop })
