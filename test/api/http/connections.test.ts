// The connection handling below Fastify's routing (api/http/connections.ts),
// over raw sockets: a request Node's parser refuses gets the JSON answer on a
// connection whose earlier answers are done, and the connection is closed
// without a word when an answer is still being written on it; an answer ready
// before the request's body was read waits for that body, so that the client
// reads it and the connection goes on.
import t, { type Test } from 'tap'
import { connect, type Socket } from 'node:net'
import type { FastifyInstance } from 'fastify'
import { buildServer } from '../../../api/http/server.ts'
import { startTestService } from '../../helpers/service.ts'

/** A raw client: everything it received, whether the server closed, and the first socket error it saw. */
interface Client { socket: Socket, text: () => string, received: (s: string) => Promise<void>, closed: Promise<string | null> }

function client (t: Test, port: number): Client {
  const socket = connect(port, '127.0.0.1')
  t.teardown(() => { socket.destroy() })
  let text = ''
  let error: string | null = null
  const waiters: Array<{ s: string, resolve: () => void }> = []
  socket.setEncoding('latin1')
  socket.on('data', (chunk: string) => {
    text += chunk
    for (const w of [...waiters]) if (text.includes(w.s)) { waiters.splice(waiters.indexOf(w), 1); w.resolve() }
  })
  socket.on('error', err => { error ??= (err as NodeJS.ErrnoException).code ?? err.message })
  return {
    socket,
    text: () => text,
    received: async s => { if (!text.includes(s)) await new Promise<void>(resolve => waiters.push({ s, resolve })) },
    closed: new Promise(resolve => { socket.on('close', () => { resolve(error) }) })
  }
}

/** The service's Fastify server with one more route, /slow, whose answer stays half written until `finish`. */
async function withSlowRoute (t: Test): Promise<{ port: number, finish: () => void }> {
  const svc = await startTestService(t)
  let finish = (): void => {}
  const app: FastifyInstance = await buildServer(svc.service.services, {
    features: [async app => {
      app.get('/slow', (_request, reply) => {
        reply.hijack()
        reply.raw.writeHead(200, { 'content-type': 'text/plain', 'content-length': '10' })
        reply.raw.write('12345')
        finish = () => { reply.raw.end('67890') }
      })
    }]
  })
  t.teardown(async () => { finish(); await app.close() })
  await app.listen({ host: '127.0.0.1', port: 0 })
  return { port: (app.server.address() as { port: number }).port, finish: () => { finish() } }
}

const BAD_REQUEST = '{"error_code":7013,"error_message":"invalid_request"}'

t.test('answers on one connection: after a finished one, a malformed request gets the JSON 400', async t => {
  const svc = await startTestService(t)
  const c = client(t, Number(new URL(svc.url).port))
  c.socket.write('GET /health HTTP/1.1\r\nhost: x\r\n\r\n')
  await c.received('"status":"ok"')
  const before = c.text()
  c.socket.write('NOT A REQUEST\r\n\r\n')
  t.equal(await c.closed, null, 'closed without a reset')
  t.equal(c.text().slice(before.length), 'HTTP/1.1 400 Bad Request\r\nconnection: close\r\ncontent-type: application/json; charset=utf-8\r\n' +
    `content-length: ${BAD_REQUEST.length}\r\nx-content-type-options: nosniff\r\n\r\n${BAD_REQUEST}`)
})

t.test('a malformed request while an answer is being written: closed at once, nothing written into that answer', async t => {
  const { port } = await withSlowRoute(t)
  const c = client(t, port)
  c.socket.write('GET /slow HTTP/1.1\r\nhost: x\r\n\r\n')
  await c.received('12345')
  const written = c.text()
  t.match(written, /^HTTP\/1\.1 200 OK\r\nx-content-type-options: nosniff\r\ncontent-type: text\/plain\r\ncontent-length: 10\r\n[^]*\r\n\r\n12345$/)
  // Pipelined behind the unfinished answer: Node's parser refuses it while /slow is still being written.
  c.socket.write('NOT A REQUEST\r\n\r\n')
  await c.closed
  t.equal(c.text(), written, 'no 400 inside the half-written answer: the client sees a truncated answer and a close')
})

t.test('a refusal before the body is read: the body is read first, the answer is whole, the connection goes on', async t => {
  const svc = await startTestService(t)
  const c = client(t, Number(new URL(svc.url).port))
  const body = Buffer.alloc(1024 * 1024, 0x61)
  c.socket.write(`POST /api/v1/data HTTP/1.1\r\nhost: x\r\nauthorization: Bearer 11111111-2222-3333-4444-555555555555\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n`)
  // In 16 KiB pieces, each after the previous one reached the kernel: a client still uploading when refused.
  let offset = 0
  const next = (): void => {
    if (offset >= body.length || c.socket.destroyed) return
    const piece = body.subarray(offset, offset + 16 * 1024)
    offset += piece.length
    c.socket.write(piece, err => { if (err == null) setImmediate(next) })
  }
  next()
  const refused = '{"error_code":7005,"error_message":"token_not_found"}'
  await c.received(refused)
  t.equal(offset, body.length, 'the whole body was sent before the answer came')
  t.match(c.text(), /^HTTP\/1\.1 401 Unauthorized\r\n/)
  t.match(c.text(), /\r\nConnection: keep-alive\r\n/)
  const before = c.text().length
  c.socket.write('GET /health HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n')
  t.equal(await c.closed, null, 'no EPIPE or reset')
  t.match(c.text().slice(before), /^HTTP\/1\.1 200 OK\r\n[^]*"status":"ok"/, 'the next request on the connection is answered')
})
