// The admin API and the operator pages answer loopback peers only, whatever
// http.host is: with the service on 0.0.0.0, a request from one of this
// machine's own non-loopback addresses (a LAN peer as far as the socket
// knows) is refused even with the right admin token; http.admin_remote opens it.
import t from 'tap'
import { request as httpRequest } from 'node:http'
import { networkInterfaces } from 'node:os'
import { startTestService } from '../../helpers/service.ts'
import { isLoopback } from '../../../api/http/connections.ts'

interface Answer { status: number, type: string, body: string }

function get (port: number, path: string, localAddress: string, headers: Record<string, string> = {}): Promise<Answer> {
  const host = localAddress.includes(':') ? '::1' : '127.0.0.1'
  // To the non-loopback address itself when coming from it (the kernel routes it locally).
  const target = isLoopback(localAddress) ? host : localAddress
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: target, port, path, localAddress, headers }, res => {
      const chunks: Buffer[] = []
      res.on('data', c => chunks.push(c))
      res.on('end', () => { resolve({ status: res.statusCode ?? 0, type: String(res.headers['content-type'] ?? ''), body: Buffer.concat(chunks).toString('utf8') }) })
    })
    req.on('error', reject)
    req.end()
  })
}

/** A non-loopback IPv4 address of this machine, if it has one. */
function lanAddress (): string | undefined {
  for (const list of Object.values(networkInterfaces())) {
    for (const a of list ?? []) if (a.family === 'IPv4' && !a.internal) return a.address
  }
  return undefined
}

t.test('isLoopback: 127.0.0.0/8, ::1 and the mapped forms only', async t => {
  for (const a of ['127.0.0.1', '127.1.2.3', '::1', '::ffff:127.0.0.1']) t.ok(isLoopback(a), a)
  for (const a of ['192.0.2.2', '::ffff:192.0.2.2', '10.0.0.1', 'fd00::2', '0.0.0.0', '::', '', undefined]) t.notOk(isLoopback(a), String(a))
})

const lan = lanAddress()

t.test('on 0.0.0.0, /admin and /operator refuse a LAN peer and answer loopback', { skip: lan === undefined ? 'no non-loopback address (the inject test below covers the check)' : false }, async t => {
  const svc = await startTestService(t, { http: { host: '0.0.0.0' } })
  const port = Number(new URL(svc.url).port)
  const auth = { authorization: `Bearer ${svc.adminToken}` }

  const local = await get(port, '/admin/users', '127.0.0.1', auth)
  t.equal(local.status, 200, local.body)
  t.same(JSON.parse(local.body), { users: [] })

  const remote = await get(port, '/admin/users', lan!, auth)
  t.equal(remote.status, 403)
  t.match(remote.type, /^application\/json/)
  t.match(JSON.parse(remote.body), { error_code: 9403, error_message: 'forbidden', detail: /loopback/ })

  // Refused before the token is looked at: no answer tells a LAN peer whether a token is right.
  const noToken = await get(port, '/admin/users', lan!)
  t.equal(noToken.status, 403)
  t.equal(JSON.parse(noToken.body).error_code, 9403)

  // A path the router decodes or folds to /admin is refused the same way.
  for (const path of ['/%61dmin/users', '/%2561dmin/users', '//admin/users']) {
    const odd = await get(port, path, lan!)
    t.not(odd.status, 200, `${path} is no way in`)
    if (odd.status !== 404) t.equal(JSON.parse(odd.body).error_code, 9403, `${path}: refused as /admin`)
  }

  const page = await get(port, '/operator/signin', lan!)
  t.equal(page.status, 403)
  t.match(page.type, /^text\/html/)
  t.match(page.body, /only on the relay box itself/)
  const localPage = await get(port, '/operator/signin', '127.0.0.1')
  t.equal(localPage.status, 200)

  // The public API is not affected.
  const health = await get(port, '/health', lan!)
  t.equal(health.status, 200)
})

t.test('http.admin_remote: true opens the admin API to LAN peers', { skip: lan === undefined ? 'no non-loopback address' : false }, async t => {
  const svc = await startTestService(t, { http: { host: '0.0.0.0', admin_remote: true } })
  const port = Number(new URL(svc.url).port)
  const remote = await get(port, '/admin/users', lan!, { authorization: `Bearer ${svc.adminToken}` })
  t.equal(remote.status, 200, remote.body)
  const wrong = await get(port, '/admin/users', lan!, { authorization: 'Bearer not-the-token' })
  t.equal(wrong.status, 401, 'the admin token is still required')
})

t.test('the check reads the socket address (inject with a non-loopback remoteAddress)', async t => {
  const svc = await startTestService(t)
  const app = svc.service.app
  const auth = { authorization: `Bearer ${svc.adminToken}` }
  const remote = await app.inject({ method: 'GET', url: '/admin/users', headers: { ...auth, 'x-forwarded-for': '127.0.0.1' }, remoteAddress: '192.0.2.77' })
  t.equal(remote.statusCode, 403)
  t.equal(remote.json().error_code, 9403)
  const mapped = await app.inject({ method: 'POST', url: '/admin/users', headers: auth, payload: { username: 'x', password: 'password123' }, remoteAddress: '::ffff:10.1.2.3' })
  t.equal(mapped.statusCode, 403)
  t.same(await svc.admin('GET', '/admin/users'), { users: [] }, 'nothing was created')
  const local = await app.inject({ method: 'GET', url: '/admin/users', headers: auth, remoteAddress: '127.0.0.1' })
  t.equal(local.statusCode, 200)
})
