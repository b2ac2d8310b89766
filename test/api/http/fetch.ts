// Small HTTP and WebSocket helpers for the data API tests (real sockets).
import WebSocket from 'ws'

export interface Answer { status: number, type: string, text: string, json: any }

export async function call (base: string, method: string, path: string, options: { token?: string, body?: unknown, raw?: string, headers?: Record<string, string> } = {}): Promise<Answer> {
  const headers: Record<string, string> = { ...(options.headers ?? {}) }
  if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`
  let body: string | undefined
  if (options.raw !== undefined) { body = options.raw; headers['content-type'] ??= 'application/json' } else if (options.body !== undefined) { body = JSON.stringify(options.body); headers['content-type'] = 'application/json' }
  const res = await fetch(base + path, { method, headers, body })
  const text = await res.text()
  let json: any
  try { json = JSON.parse(text) } catch { json = undefined }
  return { status: res.status, type: res.headers.get('content-type') ?? '', text, json }
}

export function wsUrl (base: string, path: string): string {
  return base.replace(/^http/, 'ws') + path
}

/** Opens a WebSocket; resolves once open, with a queue of received text messages. */
export async function openWs (url: string, headers: Record<string, string> = {}): Promise<{ ws: WebSocket, next (): Promise<string>, closed: Promise<{ code: number, reason: string }> }> {
  const ws = new WebSocket(url, { headers })
  const queue: string[] = []
  const waiters: Array<(s: string) => void> = []
  ws.on('message', data => {
    const s = data.toString()
    const w = waiters.shift()
    if (w !== undefined) w(s)
    else queue.push(s)
  })
  const closed = new Promise<{ code: number, reason: string }>(resolve => { ws.on('close', (code, reason) => { resolve({ code, reason: reason.toString() }) }) })
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => { resolve() })
    ws.once('error', reject)
    ws.once('unexpected-response', (_req, res) => { reject(new Error(`unexpected response ${res.statusCode}`)) })
  })
  return {
    ws,
    closed,
    next: async () => {
      const s = queue.shift()
      if (s !== undefined) return s
      return await new Promise<string>(resolve => waiters.push(resolve))
    }
  }
}

/** Connects expecting the handshake to be refused; returns the HTTP status and JSON body. */
export async function refused (url: string, headers: Record<string, string> = {}): Promise<{ status: number, body: any, type: string }> {
  const ws = new WebSocket(url, { headers })
  return await new Promise((resolve, reject) => {
    ws.once('open', () => { ws.terminate(); reject(new Error('the handshake was accepted')) })
    ws.once('error', err => { reject(err) })
    ws.once('unexpected-response', (_req, res) => {
      let text = ''
      res.setEncoding('utf8')
      res.on('data', (c: string) => { text += c })
      res.on('end', () => {
        ws.terminate()
        try { resolve({ status: res.statusCode ?? 0, body: JSON.parse(text), type: String(res.headers['content-type']) }) } catch (err) { reject(new Error(`non-JSON refusal body: ${text}`, { cause: err })) }
      })
    })
  })
}
