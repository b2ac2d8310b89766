// Every failure is clean: a plain GET to a WebSocket endpoint, headers too
// large, an oversized body still being uploaded, a full disk and slow or
// half-open connections each get the JSON error body (or a prompt close),
// over real sockets.
import t from 'tap'
import { connect, type Socket } from 'node:net'
import { startTestService } from '../../helpers/service.ts'
import { until } from '../../helpers/wait.ts'

interface RawResult { status: number, headers: string, body: string, error: string | null }

/** Parses one HTTP/1.1 answer with a content-length out of raw bytes (null until complete). */
function parseAnswer (buf: Buffer): { status: number, headers: string, body: string } | null {
  const text = buf.toString('latin1')
  const end = text.indexOf('\r\n\r\n')
  if (end < 0) return null
  const headers = text.slice(0, end)
  const length = Number(/content-length: *(\d+)/i.exec(headers)?.[1] ?? NaN)
  const body = buf.subarray(end + 4)
  if (!Number.isFinite(length) || body.length < length) return null
  return { status: Number(headers.slice(9, 12)), headers, body: body.subarray(0, length).toString('utf8') }
}

/**
 * Writes `head` and then `body` on a raw socket as fast as the peer takes it,
 * and reads until the server closes. `error` is the first socket error
 * (EPIPE, ECONNRESET) the sender saw.
 */
function rawExchange (port: number, head: string, body: Buffer | null): Promise<RawResult> {
  return new Promise(resolve => {
    const socket = connect({ host: '127.0.0.1', port })
    const chunks: Buffer[] = []
    let error: string | null = null
    socket.on('data', c => chunks.push(c))
    socket.on('error', err => { error ??= (err as NodeJS.ErrnoException).code ?? err.message })
    socket.on('close', () => {
      const answer = parseAnswer(Buffer.concat(chunks))
      resolve({ status: answer?.status ?? 0, headers: answer?.headers ?? '', body: answer?.body ?? Buffer.concat(chunks).toString('latin1'), error })
    })
    socket.write(head)
    // The body in 16 KiB pieces, each after the previous one reached the kernel: an uploading client, still
    // sending when the server answers (one big write would sit in the loopback buffers before any answer).
    let offset = 0
    const next = (): void => {
      if (body === null || offset >= body.length || socket.destroyed) return
      const piece = body.subarray(offset, offset + 16 * 1024)
      offset += piece.length
      socket.write(piece, err => { if (err == null) setImmediate(next) })
    }
    next()
  })
}

t.test('a plain GET to a WebSocket endpoint is 426 with the JSON error body', async t => {
  const svc = await startTestService(t)
  await svc.user('ana')
  const token = await svc.token('ana', 'data:heart_rate:read')
  const room = await svc.admin('POST', '/admin/rooms', { name: 'Spin' })
  const widget = await (await fetch(svc.url + '/api/v1/widgets', {
    method: 'POST',
    headers: { authorization: `Bearer ${await svc.token('ana', 'widgets:update')}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'w', meta_id: 'bf6bdf21-10a7-4a28-97ec-a239e6c77f8b', configuration: {} })
  })).json() as { widget: { id: string } }
  const paths = [
    `/api/v1/data/real_time?access_token=${token}`,
    `/widgets/${widget.widget.id}/stream`,
    `/rooms/${room.room_id}/stream?display_id=${room.display_id}`,
    '/mqtt'
  ]
  for (const path of paths) {
    const res = await fetch(svc.url + path)
    t.equal(res.status, 426, path)
    t.match(res.headers.get('content-type'), /^application\/json/, path)
    t.equal(res.headers.get('upgrade'), 'websocket', path)
    t.match(await res.json(), { error_code: 9426, error_message: 'upgrade_required' }, path)
  }
  // The endpoint's own checks still come first: no token is 403 7009.
  const noToken = await fetch(svc.url + '/api/v1/data/real_time')
  t.equal(noToken.status, 403)
  t.equal((await noToken.json() as { error_code: number }).error_code, 7009)
})

t.test('headers too large: 431 with the JSON error body', async t => {
  const svc = await startTestService(t)
  const port = Number(new URL(svc.url).port)
  const r = await rawExchange(port, `GET /health HTTP/1.1\r\nhost: x\r\nx-big: ${'a'.repeat(20_000)}\r\n\r\n`, null)
  t.equal(r.status, 431, r.body)
  t.match(r.headers, /content-type: application\/json/)
  t.same(JSON.parse(r.body), { error_code: 9431, error_message: 'request_header_fields_too_large' })
  t.equal(r.error, null, 'the client read the answer without a reset')
})

t.test('a 1 MiB body still being uploaded gets a complete 413 (lingering close, no EPIPE)', async t => {
  const svc = await startTestService(t)
  await svc.user('ana')
  const token = await svc.token('ana', 'widgets:update data:heart_rate:write')
  const port = Number(new URL(svc.url).port)
  const mib = Buffer.alloc(1024 * 1024, 0x61)
  for (const path of ['/api/v1/widgets', '/api/v1/data']) {
    const head = `POST ${path} HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${token}\r\ncontent-type: application/json\r\ncontent-length: ${mib.length}\r\n\r\n`
    const r = await rawExchange(port, head, mib)
    t.equal(r.error, null, `${path}: no EPIPE/ECONNRESET for the sender`)
    t.equal(r.status, 413, path)
    t.same(JSON.parse(r.body), { error_code: 9413, error_message: 'payload_too_large' }, path)
    // Chunked, so the limit is found while reading.
    const chunked = `POST ${path} HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${token}\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n`
    const c = await rawExchange(port, chunked, Buffer.concat([Buffer.from(mib.length.toString(16) + '\r\n'), mib, Buffer.from('\r\n0\r\n\r\n')]))
    t.equal(c.error, null, `${path} chunked: no EPIPE/ECONNRESET`)
    t.equal(c.status, 413, `${path} chunked`)
    t.same(JSON.parse(c.body), { error_code: 9413, error_message: 'payload_too_large' })
  }
  // The oversized body to a GET-only endpoint (the case): the same complete 413, no reset.
  const r = await rawExchange(port, `POST /api/v1/data/heart_rate/latest HTTP/1.1\r\nhost: x\r\nconnection: close\r\nauthorization: Bearer ${token}\r\ncontent-type: application/json\r\ncontent-length: ${mib.length}\r\n\r\n`, mib)
  t.equal(r.error, null)
  t.equal(r.status, 413)
  t.same(JSON.parse(r.body), { error_code: 9413, error_message: 'payload_too_large' })
})

t.test('a write while the disk is full answers 500 6001 saying so, and stores nothing', async t => {
  const svc = await startTestService(t)
  await svc.user('ana')
  const token = await svc.token('ana', 'data:heart_rate:write data:heart_rate:read')
  const store = svc.service.services.store
  const batch = store.batch.bind(store)
  // The error classic-level raises when the log file cannot grow (seen on a full tmpfs).
  store.batch = async () => { throw Object.assign(new Error('IO error: /data/db/000003.log: No space left on device'), { code: 'LEVEL_IO_ERROR' }) }
  t.teardown(() => { store.batch = batch })
  const write = (hr: number): Promise<Response> => fetch(svc.url + '/api/v1/data', {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ measured_at: Date.now(), data: { heart_rate: hr } })
  })
  const full = await write(80)
  t.equal(full.status, 500)
  t.match(await full.json(), { error_code: 6001, error_message: 'error_storage_full', detail: /no space left/ })
  store.batch = async () => { throw Object.assign(new Error('IO error: /data/db/000003.log: Input/output error'), { code: 'LEVEL_IO_ERROR' }) }
  const io = await write(81)
  t.equal(io.status, 500)
  t.match(await io.json(), { error_code: 6001, error_message: 'error_storage_write_failed' })
  store.batch = batch
  const latest = await fetch(svc.url + '/api/v1/data/heart_rate/latest', { headers: { authorization: `Bearer ${token}` } })
  t.equal(latest.status, 412, 'nothing was stored')
})

t.test('slowloris: trickling sockets are capped per address and closed by the headers timeout; /health still answers', async t => {
  const limit = 300
  const svc = await startTestService(t, { http: { headers_timeout_ms: 3000, request_timeout_ms: 6000, max_connections_loopback: limit } })
  const port = Number(new URL(svc.url).port)
  const total = 4000
  const sockets: Array<{ socket: Socket, data: Buffer[], closed: boolean }> = []
  const trickle = setInterval(() => {
    for (const s of sockets) if (!s.closed && s.socket.writable) s.socket.write('x-slow: 1\r\n')
  }, 250)
  t.teardown(() => { clearInterval(trickle); for (const s of sockets) s.socket.destroy() })
  // From 127.0.0.2: another loopback address than the legitimate client's below.
  for (let i = 0; i < total; i += 200) {
    await Promise.all(Array.from({ length: Math.min(200, total - i) }, async () => {
      const entry = { socket: connect({ host: '127.0.0.1', port, localAddress: '127.0.0.2' }), data: [] as Buffer[], closed: false }
      // Queued before the trickle's writes; sent once connected.
      entry.socket.write('GET /health HTTP/1.1\r\nhost: x\r\n')
      sockets.push(entry)
      entry.socket.on('data', c => entry.data.push(c))
      entry.socket.on('error', () => { /* refused ones are reset */ })
      entry.socket.on('close', () => { entry.closed = true })
      await new Promise<void>(resolve => {
        entry.socket.once('connect', () => { resolve() })
        entry.socket.once('close', () => { resolve() })
      })
    }))
  }
  const started = performance.now()
  const health = await fetch(svc.url + '/health')
  const elapsed = performance.now() - started
  t.equal(health.status, 200)
  t.ok(elapsed < 5000, `GET /health answered in ${Math.round(elapsed)} ms (issue: under 1 s; bound 5 s for a loaded CI machine) beside ${total} slow sockets`)
  const open = await new Promise<number>((resolve, reject) => { svc.service.app.server.getConnections((err, n) => { if (err !== null) reject(err); else resolve(n) }) })
  t.ok(open <= limit + 1, `at most the per-address limit (${limit}) of slow sockets held open (saw ${open})`)

  // Every trickling socket is closed by the server (the headers timeout), none left hanging.
  await until('every slow socket closed', () => sockets.every(s => s.closed), 60_000)
  const answered = sockets.filter(s => s.data.length > 0)
  t.ok(answered.length >= limit, `the accepted ones (${answered.length}) were answered before the close`)
  for (const s of answered) {
    const a = parseAnswer(Buffer.concat(s.data))
    if (a?.status !== 408 || a.body !== '{"error_code":9408,"error_message":"request_timeout"}') { t.fail(`unexpected answer ${Buffer.concat(s.data).toString('latin1')}`); break }
  }
})
