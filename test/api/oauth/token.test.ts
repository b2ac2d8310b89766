// Client credentials, revoke, validate, the 70xx authentication codes and bad
// input at the token endpoints, over a listening server.
import t from 'tap'
import { request as httpRequest } from 'node:http'
import { startTestService } from '../../helpers/service.ts'
import { basic, call, post, validate } from './helpers.ts'
import { buildServer } from '../../../api/http/server.ts'
import { requireAuth } from '../../../api/http/auth.ts'

t.test('client credentials grant (HTTP Basic; profile:create only; no refresh token; null profile)', async t => {
  const svc = await startTestService(t)
  const { client_id: id, client_secret: secret } = await svc.client(['https://app.example/cb'])
  const token = `${svc.url}/oauth2/token`
  const ok = await post(token, { grant_type: 'client_credentials', scope: 'profile:create' }, { authorization: basic(id, secret ?? '') })
  t.equal(ok.status, 200)
  t.equal(ok.headers.get('cache-control'), 'no-store')
  t.equal(ok.json.expires_in, 5184000)
  t.equal(ok.json.scope, 'profile:create')
  t.equal(ok.json.refresh_token, undefined)
  const v = await validate(svc.url, ok.json.access_token)
  t.equal(v.status, 200)
  t.same(v.json, { token: ok.json.access_token, client_id: id, expires_in: v.json.expires_in, profile_id: null, scopes: ['profile:create'] })
  t.ok(v.json.expires_in > 5183000 && v.json.expires_in <= 5184000)

  const defaultScope = await post(token, { grant_type: 'client_credentials' }, { authorization: basic(id, secret ?? '') })
  t.equal(defaultScope.json.scope, 'profile:create')
  const other = await post(token, { grant_type: 'client_credentials', scope: 'data:heart_rate:read' }, { authorization: basic(id, secret ?? '') })
  t.equal(other.status, 400)
  t.equal(other.json.error, 'invalid_scope')
  const wrong = await post(token, { grant_type: 'client_credentials' }, { authorization: basic(id, 'wrong') })
  t.equal(wrong.status, 401)
  t.equal(wrong.json.error, 'invalid_client')
  t.equal(wrong.headers.get('www-authenticate'), 'Basic realm="hr-relay", charset="UTF-8"')
  const unknown = await post(token, { grant_type: 'client_credentials' }, { authorization: basic('nobody', 'x') })
  t.equal(unknown.status, 401)
  const notBasic = await post(token, { grant_type: 'client_credentials' }, { authorization: 'Bearer abc' })
  t.equal(notBasic.status, 401)
  t.ok(notBasic.headers.get('www-authenticate'))
  const garbage = await post(token, { grant_type: 'client_credentials' }, { authorization: 'Basic ' + Buffer.from([0xff, 0xfe, 0x3a, 0x41]).toString('base64') })
  t.equal(garbage.status, 401)
  t.equal(garbage.json.error, 'invalid_client')
  const pub = await svc.client(['https://app.example/cb'], { public: true })
  const publicCc = await post(token, { grant_type: 'client_credentials', client_id: pub.client_id })
  t.equal(publicCc.status, 400)
  t.equal(publicCc.json.error, 'unauthorized_client')
})

t.test('validate and the authentication codes 7009, 7010, 7005, 7006, 7011', async t => {
  const svc = await startTestService(t)
  const profile = await svc.user('hank')
  const tok = await svc.token('hank', 'data:heart_rate:read')
  const v = await validate(svc.url, tok)
  t.equal(v.status, 200)
  t.same(Object.keys(v.json).sort(), ['client_id', 'expires_in', 'profile_id', 'scopes', 'token'])
  t.equal(v.json.profile_id, profile)
  t.equal(v.json.token, tok)

  const missing = await call(`${svc.url}/api/v1/token/validate`)
  t.equal(missing.status, 403)
  t.same(missing.json, { error_code: 7009, error_message: 'error_authorization_header_is_not_present' })
  const format = await call(`${svc.url}/api/v1/token/validate`, { headers: { authorization: `Token ${tok}` } })
  t.equal(format.status, 403)
  t.same(format.json, { error_code: 7010, error_message: 'error_authorization_header_has_wrong_format' })
  const unknown = await validate(svc.url, '00000000-0000-0000-0000-000000000000')
  t.equal(unknown.status, 401)
  t.same(unknown.json, { error_code: 7005, error_message: 'token_not_found' })
  // An expired record: issued with a lifetime already over.
  const expired = await svc.service.services.tokens.issue({ client_id: 'c', profile_id: profile, scopes: ['profile:read'], flow: 'manual', expires_in: -1 })
  const e = await validate(svc.url, expired.access_token)
  t.equal(e.status, 401)
  t.same(e.json, { error_code: 7006, error_message: 'token_expired' })
  // 7011: a token without the scope an endpoint requires, on a route guarded by requireAuth, over a socket.
  const guarded = await buildServer(svc.service.services, {
    features: [async (app, { tokens }) => { app.get('/needs-profile', { preHandler: requireAuth(tokens, { scope: 'profile:read' }) }, async () => ({ ok: true })) }]
  })
  t.teardown(async () => { await guarded.close() })
  const guardedUrl = await guarded.listen({ host: '127.0.0.1', port: 0 })
  const scoped = await call(`${guardedUrl}/needs-profile`, { headers: { authorization: `Bearer ${tok}` } })
  t.equal(scoped.status, 400)
  t.same(scoped.json, { error_code: 7011, error_message: 'error_invalid_scope' })
  const good = await call(`${guardedUrl}/needs-profile`, { headers: { authorization: `Bearer ${await svc.token('hank', 'profile:read')}` } })
  t.equal(good.status, 200)
})

t.test('revoke answers 200 always; the revoked token then fails with 7005', async t => {
  const svc = await startTestService(t)
  await svc.user('ivy')
  const tok = await svc.token('ivy', 'data:heart_rate:read')
  const r = await post(`${svc.url}/oauth2/revoke`, { token: tok })
  t.equal(r.status, 200)
  t.same(r.json, {})
  const v = await validate(svc.url, tok)
  t.equal(v.status, 401)
  t.equal(v.json.error_code, 7005)
  t.equal((await post(`${svc.url}/oauth2/revoke`, { token: tok })).status, 200)
  t.equal((await post(`${svc.url}/oauth2/revoke`, { token: 'never-issued' })).status, 200)
  const missing = await post(`${svc.url}/oauth2/revoke`, {})
  t.equal(missing.status, 400)
  t.same(missing.json, { error: 'invalid_request', error_description: 'parameter token is missing' })
})

function raw (url: string, body: Buffer, headers: Record<string, string>): Promise<{ status: number, body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method: 'POST', headers: { 'content-length': String(body.length), ...headers } }, res => {
      let text = ''
      res.setEncoding('utf8')
      res.on('data', c => { text += c })
      res.on('end', () => { resolve({ status: res.statusCode ?? 0, body: text }) })
    })
    req.on('error', reject)
    req.end(body)
  })
}

t.test('bad input at the token endpoints gets a JSON 4xx, never a 500', async t => {
  const svc = await startTestService(t)
  const { client_id: id, client_secret: secret } = await svc.client(['https://app.example/cb'])
  const token = `${svc.url}/oauth2/token`
  const auth = { authorization: basic(id, secret ?? '') }

  const repeated = await post(token, 'grant_type=client_credentials&grant_type=client_credentials', auth)
  t.equal(repeated.status, 400)
  t.same(repeated.json, { error: 'invalid_request', error_description: 'parameter grant_type is repeated' })
  const repeatedScope = await post(token, 'grant_type=client_credentials&scope=profile:create&scope=profile:create', auth)
  t.same(repeatedScope.json, { error: 'invalid_request', error_description: 'parameter scope is repeated' })
  const json = await call(token, { method: 'POST', headers: { 'content-type': 'application/json', ...auth }, body: '{"grant_type":"client_credentials"}' })
  t.equal(json.status, 400)
  t.same(json.json, { error: 'invalid_request', error_description: 'the content type must be application/x-www-form-urlencoded' })
  const badJson = await call(token, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"grant' })
  t.equal(badJson.status, 400)
  t.equal(badJson.json.error, 'invalid_request')
  const text = await call(token, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: 'hello' })
  t.equal(text.status, 400)
  t.equal(text.json.error, 'invalid_request')
  const none = await call(token, { method: 'POST' })
  t.equal(none.status, 400)
  t.equal(none.json.error, 'invalid_request')
  const nonUtf8 = await raw(token, Buffer.concat([Buffer.from('grant_type=client_credentials&scope='), Buffer.from([0xff, 0xfe])]), { 'content-type': 'application/x-www-form-urlencoded', ...auth })
  t.equal(nonUtf8.status, 400)
  t.same(JSON.parse(nonUtf8.body), { error: 'invalid_request', error_description: 'the body is not valid UTF-8' })
  const badPercent = await post(token, 'grant_type=client_credentials&scope=%FF%FE', auth)
  t.equal(badPercent.status, 400)
  t.same(badPercent.json, { error: 'invalid_request', error_description: 'malformed percent-encoding or bytes that are not UTF-8' })
  const big = await post(token, 'grant_type=client_credentials&pad=' + 'a'.repeat(70_000), auth)
  t.equal(big.status, 413)
  t.same(big.json, { error_code: 9413, error_message: 'payload_too_large' })
  const noGrant = await post(token, { client_id: id })
  t.same(noGrant.json, { error: 'invalid_request', error_description: 'parameter grant_type is missing' })
  const unsupported = await post(token, { grant_type: 'password', username: 'a', password: 'b' })
  t.equal(unsupported.status, 400)
  t.same(unsupported.json, { error: 'unsupported_grant_type', error_description: 'grant_type password is not supported' })
  const proto = await post(token, { grant_type: '__proto__' })
  t.equal(proto.json.error, 'unsupported_grant_type')
  const manyParams = await post(token, Array.from({ length: 100 }, (_, i) => `p${i}=1`).join('&'))
  t.equal(manyParams.status, 400)
  t.same(manyParams.json, { error: 'invalid_request', error_description: 'too many parameters' })
  const devBad = await post(`${svc.url}/oauth2/device_authorization`, 'client_id=a&client_id=b&scope=profile:read')
  t.same(devBad.json, { error: 'invalid_request', error_description: 'parameter client_id is repeated' })
  const authorizeBad = await call(`${svc.url}/oauth2/authorize?client_id=%FF`)
  t.equal(authorizeBad.status, 400)
  t.match(authorizeBad.headers.get('content-type'), /text\/html/)
  // The server is still fine afterwards.
  t.equal((await post(token, { grant_type: 'client_credentials' }, auth)).status, 200)
})
