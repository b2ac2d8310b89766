// Worker: publishers for the ws-fanout reference. One WebSocket per label to
// /publish/<label>, each sending one reading per period (spread evenly), the
// send time of every message recorded by `${label}:${measured_at}` as the
// MQTT generator does.
import WebSocket from 'ws'
import { now, serve } from '../lib/proc.ts'

let sockets: WebSocket[] = []

async function open (port: number, labels: number): Promise<void> {
  sockets = await Promise.all(Array.from({ length: labels }, (_, i) => new Promise<WebSocket>((resolve, reject) => {
    const ws = new WebSocket(`ws://127.0.0.1:${port}/publish/${i}`, { perMessageDeflate: false })
    ws.once('open', () => { resolve(ws) })
    ws.once('error', reject)
  })))
}

async function publish (hz: number, durationMs: number): Promise<{ sends: Map<string, number> }> {
  const sends = new Map<string, number>()
  const n = sockets.length
  const interval = 1000 / (hz * n)
  const total = Math.floor(durationMs / interval)
  const last = sockets.map(() => 0)
  const start = now()
  await new Promise<void>(resolve => {
    let j = 0
    const tick = (): void => {
      const due = Math.min(total, Math.floor((now() - start) / interval) + 1)
      while (j < due) {
        const i = j++ % n
        const at = Math.max(Date.now(), (last[i] as number) + 1)
        last[i] = at
        sends.set(`${i}:${at}`, now())
        sockets[i]?.send(JSON.stringify({ measured_at: at, data: { heart_rate: 60 + (j % 120) } }))
      }
      if (j >= total) { resolve(); return }
      setTimeout(tick, Math.max(1, Math.min(5, j * interval - (now() - start))))
    }
    tick()
  })
  return { sends }
}

function close (): void {
  for (const s of sockets) s.terminate()
  sockets = []
}

serve({ open, publish, close, reset: close })
