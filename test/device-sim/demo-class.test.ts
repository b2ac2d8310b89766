// The demo's class (device-sim/demo-class.ts): the request it sends to the
// admin API, over a real socket to a small server that records it, and what
// the demo does with each answer: 201 started, 409 already running, 404 (a
// service without class mode) a warning and on, an unreachable service too.
import t from 'tap'
import { createServer, type IncomingMessage } from 'node:http'
import { once } from 'node:events'
import type { AddressInfo } from 'node:net'
import { Writable } from 'node:stream'
import pino from 'pino'
import { AdminClient } from '../../device-sim/admin-client.ts'
import { DEMO_CLASS_MINUTES, demoClassRequest, startDemoClass } from '../../device-sim/demo-class.ts'

interface Seen { method: string | undefined, url: string | undefined, authorization: string | undefined, type: string | undefined, body: unknown }

async function adminApi (t: Tap, answer: { status: number, body: unknown }): Promise<{ url: string, seen: Seen[] }> {
  const seen: Seen[] = []
  const server = createServer((req: IncomingMessage, res) => {
    let text = ''
    req.setEncoding('utf8')
    req.on('data', (c: string) => { text += c })
    req.on('end', () => {
      seen.push({ method: req.method, url: req.url, authorization: req.headers.authorization, type: req.headers['content-type'], body: JSON.parse(text) })
      res.writeHead(answer.status, { 'content-type': 'application/json' }).end(JSON.stringify(answer.body))
    })
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  t.teardown(async () => { server.close(); await once(server, 'close') })
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen }
}

interface Tap { teardown (fn: () => unknown): void }

function capture (): { log: pino.Logger, lines: Array<{ level: number, msg: string, status?: number }> } {
  const lines: Array<{ level: number, msg: string }> = []
  const sink = new Writable({ write (chunk: Buffer, _enc, done) { lines.push(JSON.parse(chunk.toString())); done() } })
  return { log: pino({ level: 'info' }, sink), lines }
}

const ROOM = '5b0c9c8e-4c35-4a7e-9f44-3f0d1f0c2a11'

t.test('the request: POST /admin/rooms/<room_id>/class with the demo class name and length', async t => {
  t.equal(DEMO_CLASS_MINUTES, 3)
  t.same(demoClassRequest(ROOM), { method: 'POST', path: `/admin/rooms/${ROOM}/class`, body: { name: 'Demo class', minutes: 3 } })
  t.same(demoClassRequest('a/b', 5).path, '/admin/rooms/a%2Fb/class')
})

t.test('201: the class is started with the admin token', async t => {
  const api = await adminApi(t, { status: 201, body: { class_id: 'c1', room_id: ROOM, name: 'Demo class' } })
  const { log, lines } = capture()
  t.equal(await startDemoClass(new AdminClient(api.url, 'the-admin-token'), ROOM, log), 'started')
  t.same(api.seen, [{ method: 'POST', url: `/admin/rooms/${ROOM}/class`, authorization: 'Bearer the-admin-token', type: 'application/json', body: { name: 'Demo class', minutes: 3 } }])
  t.match(lines, [{ level: 30, msg: 'demo: class started', class_id: 'c1', minutes: 3 }])
})

t.test('409: a class already runs (a restarted demo); 404: no class mode, a warning, the demo goes on', async t => {
  const running = await adminApi(t, { status: 409, body: { error_code: 9409, error_message: 'conflict' } })
  const a = capture()
  t.equal(await startDemoClass(new AdminClient(running.url, 'tok'), ROOM, a.log, 4), 'running')
  t.same(running.seen.map(s => s.body), [{ name: 'Demo class', minutes: 4 }])
  t.match(a.lines, [{ level: 30, msg: 'demo: a class is already running in the demo room' }])

  const missing = await adminApi(t, { status: 404, body: { error_code: 9404, error_message: 'not_found' } })
  const b = capture()
  t.equal(await startDemoClass(new AdminClient(missing.url, 'tok'), ROOM, b.log), 'unavailable')
  t.equal(missing.seen.length, 1)
  t.match(b.lines, [{ level: 40, msg: /^demo: this hr-relay has no class mode/ }])

  const broken = await adminApi(t, { status: 500, body: {} })
  const c = capture()
  t.equal(await startDemoClass(new AdminClient(broken.url, 'tok'), ROOM, c.log), 'failed')
  t.match(c.lines, [{ level: 40, msg: 'demo: could not start the demo class', status: 500 }])
})

t.test('an unreachable service: a warning, no throw', async t => {
  const { log, lines } = capture()
  // The port of a server that has closed.
  const closed = createServer()
  closed.listen(0, '127.0.0.1')
  await once(closed, 'listening')
  const port = (closed.address() as AddressInfo).port
  closed.close()
  await once(closed, 'close')
  t.equal(await startDemoClass(new AdminClient(`http://127.0.0.1:${port}`, 'tok'), ROOM, log), 'failed')
  t.match(lines, [{ level: 40, msg: 'demo: could not start the demo class', err: { type: 'SimError', message: /cannot reach http:\/\/127\.0\.0\.1:\d+/ } }])
})
