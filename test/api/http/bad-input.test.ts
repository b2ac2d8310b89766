// A sweep of malformed requests over every JSON endpoint: none may produce a
// 5xx, a non-JSON body or a half-written record.
import t from 'tap'
import { request as httpRequest } from 'node:http'
import { startTestService } from '../../helpers/service.ts'

interface Raw { status: number, type: string, body: string }

/** Sends bytes exactly as given (fetch would normalise URLs and bodies). */
function raw (url: string, method: string, path: string, headers: Record<string, string>, body?: Buffer | string): Promise<Raw> {
  const u = new URL(url)
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: u.hostname, port: u.port, method, path, headers }, res => {
      const chunks: Buffer[] = []
      res.on('data', c => chunks.push(c))
      res.on('end', () => { resolve({ status: res.statusCode ?? 0, type: String(res.headers['content-type'] ?? ''), body: Buffer.concat(chunks).toString('utf8') }) })
    })
    req.on('error', reject)
    if (body !== undefined) req.end(body)
    else req.end()
  })
}

t.test('malformed requests get a 4xx with the JSON error body, and store nothing', async t => {
  const svc = await startTestService(t)
  await svc.user('mallory')
  const token = await svc.token('mallory', 'data:heart_rate:read data:heart_rate:write widgets:read widgets:update profile:read data:statistics:read game_mod:configuration:read game_mod:configuration:write')
  const auth = { authorization: `Bearer ${token}` }
  const json = { ...auth, 'content-type': 'application/json' }
  const bodies: Array<[string, Buffer | string]> = [
    ['bad JSON', '{"measured_at": '],
    ['non-UTF-8', Buffer.from([0xff, 0xfe, 0x7b, 0x7d])],
    ['array', '[1,2]'],
    ['string', '"hello"'],
    ['null', 'null'],
    ['number', '1e999'],
    ['deep nesting', '['.repeat(5000) + ']'.repeat(5000)],
    ['prototype pollution', '{"__proto__":{"admin":true},"constructor":{"prototype":{"x":1}}}'],
    ['oversized', JSON.stringify({ measured_at: 1, data: { heart_rate: 70 }, pad: 'x'.repeat(200_000) })],
    ['wrong types', '{"measured_at":"yesterday","data":{"heart_rate":"fast"},"configuration":5,"meta_id":7,"name":[]}']
  ]
  const writes = ['/api/v1/data', '/api/v1/widgets', '/api/v1/game-mod/configuration']
  for (const path of writes) {
    for (const [what, body] of bodies) {
      const res = await raw(svc.url, 'POST', path, json, body)
      t.ok(res.status >= 400 && res.status < 500, `${path} ${what}: ${res.status}`)
      t.match(res.type, /^application\/json/, `${path} ${what}: JSON`)
      t.type(JSON.parse(res.body).error_code, 'number', `${path} ${what}: error_code`)
    }
    for (const type of ['text/plain', 'application/xml', 'multipart/form-data; boundary=x', 'application/json; charset=latin-1']) {
      const res = await raw(svc.url, 'POST', path, { ...auth, 'content-type': type }, '{}')
      t.ok(res.status >= 400 && res.status < 500, `${path} as ${type}: ${res.status}`)
      t.type(JSON.parse(res.body).error_code, 'number')
    }
  }
  const gets = [
    '/api/v1/data/heart_rate/latest?response_mode=json&response_mode=json',
    '/api/v1/data/heart_rate/latest?response_mode[]=json',
    '/api/v1/statistics?time_range=24h&time_range=7d',
    '/api/v1/statistics?time_range=%FF',
    '/api/v1/%ff',
    '/api/v1/features/%00',
    '/api/v1/features/' + 'x'.repeat(5000),
    '/api/v1/widgets/../../admin/users'
  ]
  for (const path of gets) {
    const res = await raw(svc.url, 'GET', path, auth)
    t.ok(res.status >= 400 && res.status < 500, `GET ${path}: ${res.status}`)
    t.type(JSON.parse(res.body).error_code, 'number', `GET ${path}: JSON error body`)
  }
  const latest = await raw(svc.url, 'GET', '/api/v1/data/heart_rate/latest', auth)
  t.equal(latest.status, 412, 'nothing was stored by any malformed write')
  t.same(JSON.parse(latest.body), { error_code: 9412, error_message: 'no_heart_rate_data' })
  const widgets = await raw(svc.url, 'GET', '/api/v1/widgets', auth)
  t.same(JSON.parse(widgets.body).widgets, [], 'no widget was half-created')
  const gm = await raw(svc.url, 'GET', '/api/v1/game-mod/configuration', auth)
  t.equal(gm.status, 404, 'no game-mod configuration was half-written')
  const health = await raw(svc.url, 'GET', '/health', {})
  t.equal(health.status, 200, 'the service is still up')
})
