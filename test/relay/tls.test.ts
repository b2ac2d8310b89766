// TLS on the LAN (issue 41 §4) over real sockets: the whole service with
// http.tls, http.redirect_port, mqtt.tls and mqtt.plain false, met by real TLS
// clients (node:https, ws, mqtt.js, node:tls) that trust the box's self-signed
// certificate as their CA, and by clients that do not, which the handshake refuses.
import t from 'tap'
import { connect as tcpConnect, createServer as createTcpServer } from 'node:net'
import { connect as tlsConnect } from 'node:tls'
import { request as httpRequest } from 'node:http'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Writable } from 'node:stream'
import pino from 'pino'
import WebSocket from 'ws'
import mqtt, { type IClientOptions, type MqttClient } from 'mqtt'
import { startTestService } from '../helpers/service.ts'
import { makeCert, httpsCall, type TestCert } from '../helpers/tls.ts'
import { validateConfig, ConfigError } from '../../relay/config.ts'
import { startService } from '../../relay/main.ts'
import { ApiError } from '../../api/errors.ts'

async function tempDir (t: Tap.Test, prefix: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix))
  t.teardown(async () => { await rm(dir, { recursive: true, force: true }) })
  return dir
}

namespace Tap { export type Test = { teardown (fn: () => unknown): void } }

/** A TCP port nothing listens on now (listened on, then closed). */
async function freePort (): Promise<number> {
  const server = createTcpServer()
  await new Promise<void>(resolve => { server.listen({ host: '127.0.0.1', port: 0 }, resolve) })
  const port = (server.address() as { port: number }).port
  await new Promise<void>(resolve => { server.close(() => { resolve() }) })
  return port
}

/** The error a TLS client gets at the handshake when it does not trust the certificate. */
async function handshakeError (port: number, ca?: Buffer): Promise<string | undefined> {
  return await new Promise(resolve => {
    const socket = tlsConnect({ host: '127.0.0.1', port, servername: 'localhost', ...(ca === undefined ? {} : { ca }) })
    socket.once('secureConnect', () => { socket.destroy(); resolve(undefined) })
    socket.once('error', err => { resolve((err as NodeJS.ErrnoException).code) })
  })
}

async function mqttConnect (t: Tap.Test, url: string, options: IClientOptions): Promise<MqttClient> {
  const client = mqtt.connect(url, { protocolVersion: 4, reconnectPeriod: 0, ...options })
  t.teardown(() => { client.end(true) })
  await new Promise<void>((resolve, reject) => {
    client.once('connect', () => { resolve() })
    client.once('error', reject)
    client.once('close', () => { reject(new Error('closed before CONNACK')) })
  })
  return client
}

const SELF_SIGNED = 'DEPTH_ZERO_SELF_SIGNED_CERT'

t.test('the whole service over TLS: HTTPS, WSS and MQTTS for clients that trust the certificate, nothing for the others', async t => {
  const certDir = await tempDir(t, 'hr-relay-cert-')
  const cert: TestCert = await makeCert(certDir)
  const files = { cert_file: cert.cert_file, key_file: cert.key_file }
  const plainPort = await freePort()
  const svc = await startTestService(t, { http: { tls: files, redirect_port: 0 }, mqtt: { port: plainPort, plain: false, tls: { port: 0, ...files } } })
  const base = svc.url
  const port = Number(new URL(base).port)
  const admin = async (method: string, path: string, body?: unknown): Promise<any> => {
    const r = await httpsCall(base, method, path, { ca: cert.ca, token: svc.adminToken, ...(body === undefined ? {} : { body }) })
    if (r.status >= 300) throw new Error(`${method} ${path}: ${r.status} ${r.text}`)
    return r.json
  }
  t.equal(base, `https://127.0.0.1:${port}`, 'the service URL is https')
  const info = JSON.parse(await readFile(join(svc.dataDir, 'server.json'), 'utf8'))
  t.equal(info.url, base)
  t.equal(info.mqtt_port, null, 'no plain MQTT listener')
  t.type(info.mqtts_port, 'number')
  t.equal(info.tls_fingerprint256, cert.fingerprint256, 'server.json pins the served certificate for the admin CLI')
  const mqttsPort = info.mqtts_port as number
  const redirectPort = svc.service.redirectPort as number

  await t.test('/health lists the listeners', async t => {
    const health = await httpsCall(base, 'GET', '/health', { ca: cert.ca })
    t.equal(health.status, 200)
    t.same(health.json, {
      status: 'ok',
      sources: [
        { id: 'http', state: 'running', detail: `listening on 127.0.0.1:${port} (https), 127.0.0.1:${redirectPort} (http, redirects to https)` },
        { id: 'mqtt', state: 'running', detail: `listening on 127.0.0.1:${mqttsPort} (mqtts)`, connected: 0 }
      ]
    })
  })

  await admin('POST', '/admin/users', { username: 'alice', password: 'password123' })
  const write = (await admin('POST', '/admin/tokens', { username: 'alice', scope: 'data:heart_rate:write' })).access_token as string
  const read = (await admin('POST', '/admin/tokens', { username: 'alice', scope: 'data:heart_rate:read' })).access_token as string

  await t.test('HTTPS: a reading written and read back through the API', async t => {
    const measuredAt = Date.now() - 10_000
    const w = await httpsCall(base, 'POST', '/api/v1/data', { ca: cert.ca, token: write, body: { measured_at: measuredAt, data: { heart_rate: 71 } } })
    t.equal(w.status, 200)
    const r = await httpsCall(base, 'GET', '/api/v1/data/heart_rate/latest', { ca: cert.ca, token: read })
    t.equal(r.status, 200)
    t.same(r.json, { measured_at: measuredAt, data: { heart_rate: 71 } })
  })

  await t.test('a client that does not trust the certificate is refused at the handshake', async t => {
    await t.rejects(httpsCall(base, 'GET', '/health'), { code: SELF_SIGNED }, 'HTTPS without the CA')
    t.equal(await handshakeError(port), SELF_SIGNED, 'TLS to the HTTP port without the CA')
    t.equal(await handshakeError(port, cert.ca), undefined, 'the same with the CA: accepted')
    const ws = new WebSocket(`wss://localhost:${port}/api/v1/data/real_time?access_token=${read}`)
    const wsError = await new Promise<NodeJS.ErrnoException>(resolve => { ws.once('error', resolve) })
    t.equal(wsError.code, SELF_SIGNED, 'WSS without the CA')
    t.equal(await handshakeError(mqttsPort), SELF_SIGNED, 'MQTTS without the CA')
    const device = mqtt.connect(`mqtts://localhost:${mqttsPort}`, { reconnectPeriod: 0, username: 'x', password: 'y' })
    t.teardown(() => { device.end(true) })
    const mqttError = await new Promise<Error>(resolve => { device.once('error', err => { resolve(err) }) }) as Error & { code?: unknown }
    t.equal(mqttError.code, SELF_SIGNED, 'mqtt.js over mqtts:// without the CA')
  })

  await t.test('WSS: the real-time stream receives a reading', async t => {
    const ws = new WebSocket(`wss://localhost:${port}/api/v1/data/real_time?access_token=${read}`, { ca: cert.ca })
    t.teardown(() => { ws.terminate() })
    await new Promise((resolve, reject) => { ws.once('open', resolve); ws.once('error', reject) })
    const message = new Promise<string>(resolve => { ws.once('message', data => { resolve(data.toString()) }) })
    const measuredAt = Date.now() - 5000
    t.equal((await httpsCall(base, 'POST', '/api/v1/data', { ca: cert.ca, token: write, body: { measured_at: measuredAt, data: { heart_rate: 93 } } })).status, 200)
    t.same(JSON.parse(await message), { measured_at: measuredAt, data: { heart_rate: 93 } })
  })

  await t.test('MQTTS: a device\'s QoS 1 reading is acknowledged and stored; MQTT over WSS on the HTTP port too', async t => {
    const cred = await admin('POST', '/admin/devices', { device_id: 'esp32-tls', username: 'alice' })
    const device = await mqttConnect(t, `mqtts://localhost:${mqttsPort}`, { ca: cert.ca, username: cred.mqtt_username, password: cred.mqtt_password })
    const measuredAt = Date.now() - 3000
    const acks: number[] = []
    device.on('packetreceive', packet => { if (packet.cmd === 'puback') acks.push(packet.messageId as number) })
    const sent = await device.publishAsync('hr-relay/v1/devices/esp32-tls/heart_rate', JSON.stringify({ measured_at: measuredAt, heart_rate: 81 }), { qos: 1 })
    t.same(acks, [sent?.messageId], 'the PUBACK of that publish arrived')
    const r = await httpsCall(base, 'GET', '/api/v1/data/heart_rate/latest', { ca: cert.ca, token: read })
    t.same(r.json, { measured_at: measuredAt, data: { heart_rate: 81 } }, 'stored once acknowledged')
    const health = await httpsCall(base, 'GET', '/health', { ca: cert.ca })
    t.match(health.json.sources, [{ id: 'http' }, { id: 'mqtt', connected: 1 }])

    const overWss = await mqttConnect(t, `wss://localhost:${port}/mqtt`, { ca: cert.ca, username: cred.mqtt_username, password: cred.mqtt_password })
    const later = measuredAt + 1000
    const wssAcks: number[] = []
    overWss.on('packetreceive', packet => { if (packet.cmd === 'puback') wssAcks.push(packet.messageId as number) })
    const sentOverWss = await overWss.publishAsync('hr-relay/v1/devices/esp32-tls/heart_rate', JSON.stringify({ measured_at: later, heart_rate: 82 }), { qos: 1 })
    t.same(wssAcks, [sentOverWss?.messageId])
    t.same((await httpsCall(base, 'GET', '/api/v1/data/heart_rate/latest', { ca: cert.ca, token: read })).json, { measured_at: later, data: { heart_rate: 82 } })
  })

  await t.test('mqtt.plain false: the plain MQTT port refuses connections', async t => {
    const code = await new Promise<string | undefined>(resolve => {
      const socket = tcpConnect({ host: '127.0.0.1', port: plainPort })
      socket.once('connect', () => { socket.destroy(); resolve(undefined) })
      socket.once('error', err => { resolve((err as NodeJS.ErrnoException).code) })
    })
    t.equal(code, 'ECONNREFUSED')
  })

  await t.test('http.redirect_port answers 308 to the same host, path and query on the https port', async t => {
    const plain = async (method: string, path: string, host: string, body?: string): Promise<{ status: number, headers: Record<string, unknown>, text: string }> => await new Promise((resolve, reject) => {
      const req = httpRequest({ host: '127.0.0.1', port: redirectPort, method, path, headers: { host, ...(body === undefined ? {} : { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) }) }, agent: false }, res => {
        let text = ''
        res.setEncoding('utf8')
        res.on('data', (c: string) => { text += c })
        res.on('end', () => { resolve({ status: res.statusCode ?? 0, headers: res.headers, text }) })
      })
      req.on('error', reject)
      req.end(body)
    })
    let r = await plain('GET', '/rooms/abc/display?display_id=d%201&x=2', `gym.lan:${redirectPort}`)
    t.equal(r.status, 308)
    t.equal(r.headers.location, `https://gym.lan:${port}/rooms/abc/display?display_id=d%201&x=2`)
    t.equal(r.text, '')
    r = await plain('POST', '/api/v1/data', '192.168.1.5', JSON.stringify({ measured_at: 1, data: { heart_rate: 60 } }))
    t.equal(r.status, 308, 'a request with a body: 308 keeps its method')
    t.equal(r.headers.location, `https://192.168.1.5:${port}/api/v1/data`)
    r = await plain('GET', '/', '[fe80::1]:80')
    t.equal(r.headers.location, `https://[fe80::1]:${port}/`)
    r = await plain('GET', '/x', 'evil.example/x?')
    t.equal(r.status, 400, 'a Host that is not a host')
    t.same(JSON.parse(r.text), { error_code: 7013, error_message: 'invalid_request', detail: 'the Host header is missing or not a host name' })
  })

  await t.test('a malformed request over TLS gets the JSON 400, then a clean close', async t => {
    const body = JSON.stringify(new ApiError('invalid_request').body())
    const got = await new Promise<{ text: string, error: string | undefined }>(resolve => {
      const socket = tlsConnect({ host: '127.0.0.1', port, servername: 'localhost', ca: cert.ca }, () => { socket.write('NOT A REQUEST\r\n\r\n') })
      let text = ''
      let error: string | undefined
      socket.setEncoding('utf8')
      socket.on('data', (c: string) => { text += c })
      socket.on('error', err => { error = (err as NodeJS.ErrnoException).code })
      socket.on('close', () => { resolve({ text, error }) })
    })
    t.equal(got.error, undefined, 'no reset')
    t.equal(got.text, 'HTTP/1.1 400 Bad Request\r\nconnection: close\r\ncontent-type: application/json; charset=utf-8\r\n' +
      `content-length: ${body.length}\r\nx-content-type-options: nosniff\r\n\r\n${body}`)
  })

  await t.test('public URLs follow the scheme: device flow verification_uri; the sign-in cookie is Secure', async t => {
    const client = await admin('POST', '/admin/clients', { name: 'TV app', redirect_uris: ['https://app.example/cb'], public: true })
    const r = await httpsCall(base, 'POST', '/oauth2/device_authorization', { ca: cert.ca, form: { client_id: client.client_id, scope: 'data:heart_rate:read' } })
    t.equal(r.status, 200)
    t.equal(r.json.verification_uri, `https://127.0.0.1:${port}/device`)
    t.equal(r.json.verification_uri_complete, `https://127.0.0.1:${port}/device?user_code=${encodeURIComponent(r.json.user_code as string)}`)
    const signin = await httpsCall(base, 'GET', '/signin', { ca: cert.ca })
    t.equal(signin.status, 200)
    const cookie = signin.headers['set-cookie']
    t.equal(Array.isArray(cookie) ? cookie.length : 0, 1)
    t.match((cookie as string[])[0], /^hr_session=[^;]+; Path=\/; HttpOnly; SameSite=Lax; Max-Age=43200; Secure$/)
  })
})

t.test('the private key is never logged, while the handshakes and the start are', async t => {
  const dir = await tempDir(t, 'hr-relay-tls-log-')
  const cert = await makeCert(dir)
  let logged = ''
  const sink = new Writable({ write (chunk: Buffer, _enc, done) { logged += chunk.toString(); done() } })
  const config = validateConfig({ demo: false, data_dir: join(dir, 'data'), log_level: 'trace', http: { host: '127.0.0.1', port: 0, tls: { cert_file: cert.cert_file, key_file: cert.key_file } }, mqtt: { port: 0, plain: false, tls: { port: 0, cert_file: cert.cert_file, key_file: cert.key_file } }, ble: { enabled: false } })
  const service = await startService(config, { logger: pino({ level: 'trace' }, sink) })
  t.teardown(async () => { await service.close() })
  const port = Number(new URL(service.httpUrl).port)
  t.equal(await handshakeError(port), SELF_SIGNED)
  t.equal((await httpsCall(service.httpUrl, 'GET', '/health', { ca: cert.ca })).status, 200)
  await service.close()
  t.match(logged, `"fingerprint256":"${cert.fingerprint256}"`, 'the start logs the certificate\'s fingerprint')
  t.match(logged, '"msg":"TLS handshake failed"', 'the refused handshake is logged (debug)')
  const keyBody = cert.keyPem.split('\n').filter(l => l !== '' && !l.startsWith('-----'))
  t.ok(keyBody.length > 0)
  for (const line of keyBody) t.notOk(logged.includes(line), 'no line of the key in the log')
  t.notOk(logged.includes('PRIVATE KEY'), 'no PEM private key in the log')
})

t.test('certificate problems are configuration errors that name the key; nothing is left listening', async t => {
  const dir = await tempDir(t, 'hr-relay-tls-bad-')
  const a = await makeCert(join(dir, 'a'))
  const b = await makeCert(join(dir, 'b'), { hostname: 'other.lan' })
  const start = async (http: Record<string, unknown>, mqtt: Record<string, unknown> = {}): Promise<ConfigError> => {
    const config = validateConfig({ demo: false, data_dir: join(dir, 'data'), log_level: 'silent', http: { host: '127.0.0.1', port: 0, ...http }, mqtt: { port: 0, ...mqtt }, ble: { enabled: false } })
    const err = await startService(config, { logger: pino({ level: 'silent' }) }).then(async s => { await s.close(); throw new Error('started') }, (e: unknown) => e)
    if (!(err instanceof ConfigError)) throw err
    return err
  }
  let err = await start({ tls: { cert_file: join(dir, 'missing.pem'), key_file: a.key_file } })
  t.same(err.problems, [`http.tls.cert_file: cannot read ${join(dir, 'missing.pem')}: no such file [ENOENT]`])
  t.equal(err.code, 'HR_CONFIG_INVALID')
  err = await start({ tls: { cert_file: a.cert_file, key_file: b.key_file } })
  t.same(err.problems, [`http.tls.key_file: the key in ${b.key_file} does not belong to the certificate in ${a.cert_file} (http.tls.cert_file)`])
  t.notOk(err.message.includes(b.keyPem.split('\n')[1] as string), 'the message quotes no key material')
  err = await start({ tls: { cert_file: a.key_file, key_file: a.cert_file } })
  t.same(err.problems, [
    `http.tls.cert_file: ${a.key_file} is not a PEM certificate`,
    `http.tls.key_file: ${a.cert_file} is not a PEM private key, or it is encrypted (remove the passphrase)`
  ])
  err = await start({}, { tls: { cert_file: a.cert_file, key_file: join(dir, 'a') } })
  t.same(err.problems, [`mqtt.tls.key_file: cannot read ${join(dir, 'a')}: a directory, not a file [EISDIR]`])
  // The data directory is not left locked: a good configuration starts on it.
  const ok = validateConfig({ demo: false, data_dir: join(dir, 'data'), log_level: 'silent', http: { host: '127.0.0.1', port: 0, tls: { cert_file: a.cert_file, key_file: a.key_file } }, mqtt: { port: 0 }, ble: { enabled: false } })
  const service = await startService(ok, { logger: pino({ level: 'silent' }) })
  t.teardown(async () => { await service.close() })
  t.match(service.httpUrl, /^https:\/\/127\.0\.0\.1:\d+$/)
})

t.test('configuration rules beyond the schema', async t => {
  const files = { cert_file: '/c.pem', key_file: '/k.pem' }
  const problems = (input: Record<string, unknown>): string[] => {
    try { validateConfig(input); return [] } catch (err) { return (err as ConfigError).problems }
  }
  t.same(problems({ http: { redirect_port: 8080, port: 8443 } }), ['http.redirect_port: needs http.tls (it redirects plain HTTP to HTTPS)'])
  t.same(problems({ http: { tls: files, port: 8443, redirect_port: 8443 } }), ['http.redirect_port: must differ from http.port'])
  t.same(problems({ http: { tls: files, public_url: 'http://gym.lan:8080' } }), ['http.public_url: must start with https:// when http.tls is set'])
  t.same(problems({ mqtt: { tls: { ...files, port: 1883 } } }), ['mqtt.tls.port: must differ from mqtt.port while mqtt.plain is on'])
  t.same(problems({ http: { tls: { cert_file: '/c.pem' } } }), ["http.tls: must have required property 'key_file'"])
  const config = validateConfig({ mqtt: { tls: files } })
  t.same(config.mqtt.tls, { port: 8883, ...files }, 'mqtt.tls.port defaults to 8883')
  t.equal(config.mqtt.plain, true, 'mqtt.plain defaults to true')
  t.equal(config.http.tls, undefined, 'TLS is off by default')
})
