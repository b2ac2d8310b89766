// The OpenAPI document at /openapi.json over a listening server: it is valid
// OpenAPI 3 (checked by an independent validator), it lists every route the
// real server registers except those named below with their reason, and the
// security it states for each operation is what the server asks for.
import t from 'tap'
import { readFile } from 'node:fs/promises'
import { Validator } from '@seriousme/openapi-schema-validator'
import { startTestService, type TestService } from '../../helpers/service.ts'
import { startRecording } from '../../helpers/routes.ts'
import { ALL_SCOPES } from '../../../api/scopes.ts'
import { TAGS } from '../../../api/http/openapi-operations.ts'
import { call } from './fetch.ts'

/** Every route the server registers and the document leaves out, with the reason. */
const EXCLUDED: Record<string, string[]> = {
  'the API documentation itself': [
    'GET /openapi.json', 'GET /docs', 'GET /docs/static/start.js', 'GET /docs/static/*'
  ],
  'static files of the web pages': ['GET /web/static/*', 'GET /web/vendor/uplot/*'],
  'sign-in and the member\'s account pages (HTML and their forms)': [
    'GET /signin', 'POST /signin', 'POST /signout',
    'GET /account', 'GET /account/tokens', 'POST /account/tokens', 'GET /account/apps', 'POST /account/apps/disconnect'
  ],
  'the consent form of the authorization page (GET /oauth2/authorize is documented)': ['POST /oauth2/authorize'],
  'the device flow\'s page, where a person enters the user code (the verification_uri)': [
    'GET /device', 'POST /device', 'POST /device/decision'
  ],
  'the member pages (HTML and their forms)': [
    'GET /me', 'GET /me/readings/today', 'POST /me/room-visibility', 'GET /me/widgets', 'POST /me/widgets',
    'POST /me/widgets/:widget_id', 'POST /me/widgets/:widget_id/delete', 'GET /me/sessions/:id/export',
    'GET /me/classes/:class_id', 'GET /me/classes/:class_id/readings', 'GET /me/classes/:class_id/export',
    'GET /me/game-mod', 'POST /me/game-mod', 'POST /me/home-assistant', 'POST /me/consent', 'GET /me/export',
    'GET /me/delete', 'POST /me/delete', 'GET /me/invitation/:token', 'POST /me/invitation/:token'
  ],
  'the operator pages (HTML and their forms)': [
    'GET /operator', 'GET /operator/signin', 'POST /operator/signin', 'POST /operator/signout', 'GET /operator/users',
    'GET /operator/clients', 'GET /operator/rooms', 'POST /operator/rooms', 'POST /operator/rooms/:room_id/rename',
    'POST /operator/rooms/:room_id/members', 'POST /operator/rooms/:room_id/members/:profile_id/remove',
    'POST /operator/rooms/:room_id/display/revoke', 'GET /operator/devices', 'POST /operator/devices/pair',
    'POST /operator/devices/:device_id/unpair', 'GET /operator/users/:username/delete', 'POST /operator/users/:username/delete',
    'GET /operator/audit', 'GET /operator/operators', 'POST /operator/operators', 'POST /operator/operators/:name/remove',
    'POST /operator/users', 'GET /operator/users/:username', 'POST /operator/users/:username', 'POST /operator/users/:username/invitation',
    'GET /operator/devices/nearby',
    'GET /operator/coach', 'GET /operator/rooms/:room_id/coach', 'POST /operator/rooms/:room_id/class', 'POST /operator/rooms/:room_id/class/end',
    'POST /operator/rooms/:room_id/class/members/:profile_id/hidden', 'GET /operator/rooms/:room_id/coach/state',
    'GET /operator/rooms/:room_id/coach/members/:profile_id/readings', 'GET /operator/rooms/:room_id/coach/stream'
  ]
}
// And every HEAD route: Fastify adds one for each GET route (exposeHeadRoutes); the GET is documented.

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace']

/** `/a/:id` → `/a/{id}`. */
const openApiPath = (url: string): string => url.replace(/:([A-Za-z0-9_]+)/g, '{$1}')

async function documentOf (svc: TestService): Promise<any> {
  const res = await fetch(svc.url + '/openapi.json')
  if (res.status !== 200) throw new Error(`GET /openapi.json: ${res.status} ${await res.text()}`)
  return await res.json()
}

function operations (doc: any): Map<string, any> {
  const ops = new Map<string, any>()
  for (const [path, item] of Object.entries(doc.paths as Record<string, Record<string, unknown>>)) {
    for (const m of METHODS) if (item[m] !== undefined) ops.set(`${m.toUpperCase()} ${path}`, item[m])
  }
  return ops
}

t.test('GET /openapi.json: a valid OpenAPI 3.1 document of hr-relay, without a token, and no secret in it', async t => {
  const svc = await startTestService(t)
  const res = await fetch(svc.url + '/openapi.json')
  t.equal(res.status, 200)
  t.match(res.headers.get('content-type'), /^application\/json/)
  const text = await res.text()
  const doc = JSON.parse(text)
  t.equal(doc.openapi, '3.1.0')
  t.equal(doc.info.title, 'hr-relay')
  t.equal(doc.info.version, JSON.parse(await readFile(new URL('../../../package.json', import.meta.url), 'utf8')).version)
  t.same(doc.servers, [{ url: svc.url }], 'the server is the public URL (here the listening address)')
  t.same(Object.keys(doc.components.securitySchemes).sort(), ['accessTokenQuery', 'adminToken', 'clientBasic', 'oauth2'])
  const oauth = doc.components.securitySchemes.oauth2
  t.same(Object.keys(oauth.flows).sort(), ['authorizationCode', 'clientCredentials', 'implicit'])
  t.equal(oauth.flows.authorizationCode.authorizationUrl, `${svc.url}/oauth2/authorize`)
  t.equal(oauth.flows.authorizationCode.tokenUrl, `${svc.url}/oauth2/token`)
  t.same(Object.keys(oauth.flows.authorizationCode.scopes).sort(), [...ALL_SCOPES].sort())
  t.match(oauth.description, /device_authorization/, 'the device flow is described')
  t.same(doc.tags.map((tag: { name: string }) => tag.name), TAGS.map(tag => tag.name))
  t.notOk(text.includes(svc.adminToken), 'the admin token is not in the document')

  const validator = new Validator()
  const result = await validator.validate(doc)
  if (result.valid !== true) t.comment(JSON.stringify(result.errors, null, 2))
  t.equal(result.valid, true, 'valid OpenAPI 3.1 (@seriousme/openapi-schema-validator)')
  t.equal(validator.version, '3.1', 'validated against the 3.1 schema')

  const again = await fetch(svc.url + '/openapi.json')
  t.equal(await again.text(), text, 'the same document the second time')
})

t.test('every route the server registers is in the document with its method, or excluded with a reason', async t => {
  const { svc, app, routes } = await startRecording(t)
  t.equal(app, svc.service.app, 'the routes recorded are those of the service\'s server')
  const doc = await documentOf(svc)
  const ops = operations(doc)
  const excluded = new Map(Object.entries(EXCLUDED).flatMap(([reason, keys]) => keys.map(k => [k, reason] as const)))
  const registered = new Set<string>()
  const gets = new Set(routes.filter(r => r.method === 'GET').map(r => r.url))
  for (const { method, url } of routes) {
    if (method === 'HEAD') {
      t.ok(gets.has(url), `HEAD ${url} is the automatic HEAD of a GET route`)
      continue
    }
    const key = `${method} ${url}`
    registered.add(key)
    const documented = ops.get(`${method} ${openApiPath(url)}`)
    if (excluded.has(key)) {
      t.equal(documented, undefined, `${key} is left out: ${excluded.get(key) ?? ''}`)
      continue
    }
    t.ok(documented !== undefined, `${key} is in the document`)
    if (documented === undefined) continue
    t.equal(documented.tags?.length, 1, `${key} has one tag`)
    t.ok(TAGS.some(tag => tag.name === documented.tags[0]), `${key}: its tag is one of the document's`)
    t.type(documented.summary, 'string', `${key} has a summary`)
  }
  t.same([...excluded.keys()].filter(k => !registered.has(k)), [], 'every excluded route exists on the server')
  const documentedKeys = [...registered].filter(k => !excluded.has(k)).map(k => { const [m, u] = k.split(' '); return `${m} ${openApiPath(u ?? '')}` })
  t.same([...ops.keys()].sort(), documentedKeys.sort(), 'the document lists no route the server does not have')
  t.ok(ops.has('GET /api/v1/data/heart_rate/latest'))
  t.equal(ops.get('GET /api/v1/data/real_time')?.responses['101']?.description.startsWith('Switching Protocols'), true, 'a WebSocket route says so')
})

t.test('each operation\'s security is what the server asks for', async t => {
  const svc = await startTestService(t)
  const doc = await documentOf(svc)
  await svc.user('alice')
  // profile:create is for client credentials only: a member's token cannot have it.
  const memberScopes = ALL_SCOPES.filter(s => s !== 'profile:create')
  const fill = (path: string): string => path.replace(/\{[^}]+\}/g, 'no-such-id')
  for (const [key, op] of operations(doc)) {
    const [method = '', path = ''] = key.split(' ')
    const url = fill(path)
    const security = op.security as Array<Record<string, string[]>> | undefined
    t.ok(Array.isArray(security), `${key} states its security`)
    if (security === undefined) continue
    const schemes = security.flatMap(s => Object.keys(s))
    if (security.length === 0) {
      const a = await call(svc.url, method, url)
      t.not(a.json?.error_code, 7009, `${key} is public: no token asked for`)
    } else if (schemes.includes('adminToken')) {
      t.equal((await call(svc.url, method, url)).json?.error_code, 7009, `${key}: without a token, refused`)
      const a = await call(svc.url, method, url, { token: svc.adminToken })
      t.notOk([401, 403].includes(a.status), `${key}: the admin token is let through (${a.status})`)
    } else if (schemes.includes('oauth2')) {
      t.equal((await call(svc.url, method, url)).json?.error_code, 7009, `${key}: without a token, refused`)
      const scopes = security.find(s => s.oauth2 !== undefined)?.oauth2 ?? []
      t.ok(scopes.length <= 1, `${key}: at most one scope`)
      const scope = scopes[0]
      if (scope !== undefined) {
        const others = await svc.token('alice', memberScopes.filter(s => s !== scope).join(' '))
        t.equal((await call(svc.url, method, url, { token: others })).json?.error_code, 7011, `${key}: every scope but ${scope} is refused`)
      }
      const token = await svc.token('alice', scope ?? 'profile:read')
      const a = await call(svc.url, method, url, { token })
      t.notOk([7005, 7009, 7011].includes(a.json?.error_code), `${key}: a token with ${scope ?? 'any scope'} is let through (${a.status})`)
      if (schemes.includes('accessTokenQuery')) {
        const q = await call(svc.url, method, `${url}?access_token=${encodeURIComponent(token)}`)
        t.notOk([7005, 7009, 7011].includes(q.json?.error_code), `${key}: the token as access_token is let through (${q.status})`)
      }
    } else {
      t.same(schemes, ['clientBasic'], `${key}: OAuth client authentication`)
    }
  }
})
