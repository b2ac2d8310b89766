// Worker: WebSocket viewers. Opens one connection per entry, parses each
// message as a heart-rate reading ({measured_at, data: {heart_rate}}) and
// records (label, measured_at, receipt time). Works against hr-relay's
// /api/v1/data/real_time and against the bare `ws` reference alike.
import WebSocket from 'ws'
import { now, serve } from '../lib/proc.ts'

export interface Viewer { url: string, label: number }

export interface Receipts {
  labels: Int32Array
  measuredAt: Float64Array
  heartRates: Float64Array
  times: Float64Array
  /** Connections that closed while recording. */
  closed: number
  /** Messages that did not parse as a reading. */
  garbage: number
}

const sockets: WebSocket[] = []
let labels: number[] = []
let measured: number[] = []
let rates: number[] = []
let times: number[] = []
let closed = 0
let garbage = 0
let recording = false

function openOne (v: Viewer): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(v.url, { perMessageDeflate: false })
    ws.once('unexpected-response', (_req, res) => {
      reject(new Error(`WebSocket ${new URL(v.url).pathname} answered HTTP ${res.statusCode ?? '?'}`))
      ws.terminate()
    })
    ws.once('error', err => { reject(new Error(`WebSocket ${new URL(v.url).pathname}: ${err.message}`)) })
    ws.once('open', () => {
      ws.removeAllListeners('error')
      ws.on('error', () => {})
      ws.on('close', () => { if (recording) closed++ })
      ws.on('message', (data: Buffer) => {
        const t = now()
        if (!recording) return
        let m: any
        try { m = JSON.parse(data.toString('utf8')) } catch { garbage++; return }
        if (typeof m?.measured_at !== 'number' || typeof m?.data?.heart_rate !== 'number') { garbage++; return }
        labels.push(v.label); measured.push(m.measured_at); rates.push(m.data.heart_rate); times.push(t)
      })
      resolve(ws)
    })
  })
}

async function open (viewers: Viewer[], concurrency = 16): Promise<number> {
  let next = 0
  const opened: WebSocket[] = []
  await Promise.all(Array.from({ length: Math.min(concurrency, viewers.length) }, async () => {
    while (next < viewers.length) opened.push(await openOne(viewers[next++] as Viewer))
  }))
  sockets.push(...opened)
  return sockets.length
}

function start (): void {
  labels = []; measured = []; rates = []; times = []; closed = 0; garbage = 0
  recording = true
}

/** Receipts recorded so far (recording goes on): the orchestrator checks for stragglers. */
function peek (): Receipts {
  return { labels: Int32Array.from(labels), measuredAt: Float64Array.from(measured), heartRates: Float64Array.from(rates), times: Float64Array.from(times), closed, garbage }
}

function collect (): Receipts {
  recording = false
  return peek()
}

function count (): number { return times.length }

/** Closes the first `count` connections (all when omitted). */
async function closeSome (count?: number): Promise<number> {
  const victims = sockets.splice(0, count ?? sockets.length)
  await Promise.all(victims.map(async ws => {
    if (ws.readyState === WebSocket.CLOSED) return
    await new Promise<void>(resolve => { ws.once('close', () => { resolve() }); ws.close(1000); setTimeout(() => { ws.terminate(); resolve() }, 3000).unref() })
  }))
  return sockets.length
}

/** Closes every connection and forgets the receipts (the worker is kept for the next scenario). */
async function reset (): Promise<void> {
  recording = false
  await closeSome()
  start(); recording = false
}

serve({ open, start, count, peek, collect, closeSome, reset })
