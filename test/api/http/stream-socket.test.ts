// A stream (api/http/stream-socket.ts) sends through ws's public send: what a
// client reads off the socket is exactly the text frames a server sends, at
// each length form of the frame header, in order, then the close frame with
// the stream's code; one message encoded once reaches every viewer.
import t, { type Test } from 'tap'
import { connect, type Socket } from 'node:net'
import { randomBytes } from 'node:crypto'
import { WebSocketServer, WebSocket } from 'ws'
import { encodedOnce, openStream } from '../../../api/http/stream-socket.ts'

t.test('encodedOnce: one encoding per message object, the same Buffer for every call', async t => {
  let calls = 0
  const bytes = encodedOnce<{ bpm: number }>(m => { calls++; return JSON.stringify(m) })
  const a = { bpm: 71 }
  const first = bytes(a)
  t.equal(first.toString(), '{"bpm":71}')
  t.equal(bytes(a), first, 'the same Buffer')
  t.equal(calls, 1, 'encoded once')
  const b = { bpm: 71 }
  t.not(bytes(b), first, 'another message object is encoded anew')
  t.equal(calls, 2)
})

/** A WebSocket server on loopback; resolves the server side of each connection. */
async function server (t: Test): Promise<{ port: number, next: () => Promise<WebSocket> }> {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 })
  t.teardown(async () => {
    for (const c of wss.clients) c.terminate()
    await new Promise<void>(resolve => { wss.close(() => { resolve() }) })
  })
  await new Promise<void>(resolve => { wss.once('listening', resolve) })
  const waiting: Array<(ws: WebSocket) => void> = []
  wss.on('connection', ws => { waiting.shift()?.(ws) })
  return { port: (wss.address() as { port: number }).port, next: async () => await new Promise<WebSocket>(resolve => waiting.push(resolve)) }
}

/** A client that completes the upgrade and then only collects the raw bytes the server sends. */
async function rawClient (t: Test, port: number): Promise<{ socket: Socket, bytes: () => Buffer, received: (n: number) => Promise<void> }> {
  const socket = connect(port, '127.0.0.1')
  t.teardown(() => { socket.destroy() })
  socket.write(`GET / HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: ${randomBytes(16).toString('base64')}\r\nSec-WebSocket-Version: 13\r\n\r\n`)
  let data = Buffer.alloc(0)
  let head: { resolve: () => void, reject: (err: Error) => void } | undefined
  let waiter: { n: number, resolve: () => void } | undefined
  socket.on('data', (chunk: Buffer) => {
    data = Buffer.concat([data, chunk])
    if (head !== undefined) {
      const end = data.indexOf('\r\n\r\n')
      if (end < 0) return
      const status = data.subarray(0, end).toString('latin1').split('\r\n')[0]
      data = data.subarray(end + 4)
      if (status === 'HTTP/1.1 101 Switching Protocols') head.resolve()
      else head.reject(new Error(`upgrade refused: ${status}`))
      head = undefined
    }
    if (waiter !== undefined && data.length >= waiter.n) waiter.resolve()
  })
  const upgraded = new Promise<void>((resolve, reject) => { head = { resolve, reject } })
  await upgraded
  return {
    socket,
    bytes: () => data,
    received: async n => { if (data.length >= n) return; await new Promise<void>(resolve => { waiter = { n, resolve } }) }
  }
}

t.test('the bytes on the wire: one unmasked text frame per message at each header length, then the close frame', async t => {
  const { port, next } = await server(t)
  const serverSide = next()
  const client = await rawClient(t, port)
  const stream = openStream(await serverSide)
  const small = Buffer.from('{"heart_rate":71}')
  const mid = 'x'.repeat(300)
  const big = Buffer.alloc(70_000, 0x79)
  t.equal(stream.send(small), true)
  t.equal(stream.send(mid), true, 'a string goes the same way')
  t.equal(stream.send(big), true)
  stream.close(1013, 'client too slow')
  t.equal(stream.send(small), false, 'nothing after close')
  const expected = Buffer.concat([
    Buffer.from([0x81, 17]), small,
    Buffer.from([0x81, 126, 0x01, 0x2c]), Buffer.from(mid),
    Buffer.from([0x81, 127, 0, 0, 0, 0, 0, 0x01, 0x11, 0x70]), big,
    Buffer.from([0x88, 17, 0x03, 0xf5]), Buffer.from('client too slow')
  ])
  await client.received(expected.length)
  t.equal(client.bytes().length, expected.length, 'nothing else')
  t.ok(client.bytes().equals(expected), 'FIN + text opcode, unmasked, each length form, then close 1013 with its reason')
})

t.test('one Buffer sent to many viewers: each reads it as a text message, in order with the others', async t => {
  const { port, next } = await server(t)
  const viewers = await Promise.all([0, 1, 2].map(async () => {
    const serverSide = next()
    const ws = new WebSocket(`ws://127.0.0.1:${port}/`)
    t.teardown(() => { ws.terminate() })
    const got: Array<{ text: string, binary: boolean }> = []
    const closed = new Promise<{ code: number, reason: string }>(resolve => { ws.on('close', (code, reason) => { resolve({ code, reason: reason.toString() }) }) })
    ws.on('message', (data: Buffer, binary: boolean) => { got.push({ text: data.toString(), binary }) })
    await new Promise<void>((resolve, reject) => { ws.once('open', resolve); ws.once('error', reject) })
    return { stream: openStream(await serverSide), got, closed }
  }))
  const bytes = encodedOnce<{ bpm: number }>(m => JSON.stringify(m))
  const messages = [{ bpm: 70 }, { bpm: 71 }, { bpm: 72 }]
  for (const m of messages) for (const v of viewers) t.equal(v.stream.send(bytes(m)), true)
  for (const v of viewers) v.stream.close(1000, 'done')
  for (const v of viewers) {
    t.same(await v.closed, { code: 1000, reason: 'done' })
    t.same(v.got, messages.map(m => ({ text: JSON.stringify(m), binary: false })))
  }
})
