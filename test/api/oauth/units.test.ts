// Pure parts of the OAuth feature: strict form decoding, cookies, user codes,
// the per-key lock, the return-to guard, and pruning of ended codes.
import t from 'tap'
import { Writable } from 'node:stream'
import pino from 'pino'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseForm } from '../../../api/oauth/form.ts'
import { parseCookies, serializeCookie } from '../../../api/oauth/cookies.ts'
import { KeyedLock, OAuthState, USER_CODE_ALPHABET, formatUserCode, newUserCode, normalizeUserCode } from '../../../api/oauth/codes.ts'
import { safeReturnTo } from '../../../api/oauth/context.ts'
import { esc } from '../../../api/oauth/pages.ts'
import { AttemptLimiter, MAX_KEYS } from '../../../api/oauth/rate-limit.ts'
import { Store } from '../../../api/store/db.ts'
import { digest } from '../../../api/store/secrets.ts'
import { OAuthError } from '../../../api/errors.ts'

t.test('parseForm decodes strictly', async t => {
  const f = parseForm('a=1&b=x+y%20z&c=&d&e=%C3%A9')
  t.equal(f.error, null)
  t.same([...f.values], [['a', '1'], ['b', 'x y z'], ['c', ''], ['d', ''], ['e', 'é']])
  t.equal(f.get('missing'), undefined)
  t.throws(() => f.need('c'), OAuthError)

  const r = parseForm('a=1&a=2&b=3')
  t.same([...r.repeated], ['a'])
  t.same(r.all('a'), ['1', '2'])
  t.equal(r.get('b'), '3')
  t.throws(() => r.get('a'), new OAuthError('invalid_request', 'parameter a is repeated'))

  t.equal(parseForm('a=%FF').error, 'malformed percent-encoding or bytes that are not UTF-8')
  t.equal(parseForm('a=%E0%A4').error, 'malformed percent-encoding or bytes that are not UTF-8')
  t.equal(parseForm('a=%zz').error, 'malformed percent-encoding or bytes that are not UTF-8')
  t.equal(parseForm('a=%FF').values.size, 0)
  t.equal(parseForm(Buffer.from([0x61, 0x3d, 0xc3, 0x28])).error, 'the body is not valid UTF-8')
  t.equal(parseForm(Buffer.from('a=%C3%A9')).get('a'), 'é')
  t.equal(parseForm(Array.from({ length: 65 }, (_, i) => `k${i}=v`).join('&')).error, 'too many parameters')
  t.equal(parseForm('__proto__=x').get('__proto__'), 'x')
  t.equal(parseForm('').values.size, 0)
})

t.test('cookies', async t => {
  t.same([...parseCookies('a=1; hr_session=abc; a=2; bad; ="x"; q="quoted"')], [['a', '1'], ['hr_session', 'abc'], ['q', 'quoted']])
  t.equal(parseCookies(undefined).size, 0)
  t.equal(parseCookies('x='.repeat(5000)).size, 0)
  t.equal(serializeCookie('s', 'v', { maxAgeSeconds: 60, secure: true }), 's=v; Path=/; HttpOnly; SameSite=Lax; Max-Age=60; Secure')
  t.throws(() => serializeCookie('s', 'a;b'))
  t.throws(() => serializeCookie('a b', 'v'))
})

t.test('user codes: 8 letters of the RFC 8628 base-20 alphabet', async t => {
  t.equal(USER_CODE_ALPHABET.length, 20)
  const seen = new Set<string>()
  for (let i = 0; i < 500; i++) {
    const c = newUserCode()
    t.match(c, /^[BCDFGHJKLMNPQRSTVWXZ]{8}$/)
    seen.add(c)
  }
  t.equal(seen.size, 500)
  t.equal(formatUserCode('BCDFGHJK'), 'BCDF-GHJK')
  t.equal(normalizeUserCode('bcdf-ghjk'), 'BCDFGHJK')
  t.equal(normalizeUserCode(' BCDF GHJK '), 'BCDFGHJK')
  t.equal(normalizeUserCode('BCDF-GHJA'), null, 'vowels are not in the alphabet')
  t.equal(normalizeUserCode('BCDF-GHJ'), null)
  t.equal(normalizeUserCode('B'.repeat(40)), null)
})

t.test('KeyedLock runs tasks of one key one at a time, and survives failures', async t => {
  const lock = new KeyedLock()
  const order: string[] = []
  let release: () => void = () => {}
  const gate = new Promise<void>(resolve => { release = resolve })
  const a = lock.run('k', async () => { order.push('a-start'); await gate; order.push('a-end'); throw new Error('a failed') })
  const b = lock.run('k', async () => { order.push('b'); return 2 })
  const c = lock.run('other', async () => { order.push('c'); return 3 })
  t.equal(await c, 3)
  t.same(order, ['a-start', 'c'])
  release()
  await t.rejects(a, /a failed/)
  t.equal(await b, 2)
  t.same(order, ['a-start', 'c', 'a-end', 'b'])
})

t.test('safeReturnTo only allows same-site paths', async t => {
  t.equal(safeReturnTo('/device?user_code=BCDF-GHJK'), '/device?user_code=BCDF-GHJK')
  for (const bad of [undefined, '', 'https://evil.example', '//evil.example', '/\\evil.example', 'javascript:x', '/a\nb', '/' + 'a'.repeat(5000)]) {
    t.equal(safeReturnTo(bad), '/account', String(bad))
  }
})

t.test('esc escapes HTML', async t => {
  t.equal(esc('<a href="x" onclick=\'y\'>&</a>'), '&lt;a href=&quot;x&quot; onclick=&#39;y&#39;&gt;&amp;&lt;/a&gt;')
})

t.test('AttemptLimiter blocks after the limit within the window', async t => {
  let now = 1000
  const l = new AttemptLimiter(2, 60_000, () => now)
  t.equal(l.blocked(['a']), false)
  t.ok(l.reserve(['a', 'ip']))
  t.ok(l.reserve(['a']))
  t.equal(l.blocked(['a']), true)
  t.equal(l.blocked(['ip']), false)
  t.equal(l.blocked(['b', 'a']), true)
  t.equal(l.reserve(['ip', 'a']), null, 'refused when any key is at the limit')
  t.equal(l.blocked(['ip']), false, 'a refused attempt counts under no key')
  t.equal(l.retryAfter(['a']), 60)
  now += 30_000
  t.equal(l.retryAfter(['a']), 30)
  now += 30_001
  t.equal(l.blocked(['a']), false)
})

t.test('AttemptLimiter reserves synchronously: a burst gets exactly `limit` attempts', async t => {
  const l = new AttemptLimiter(5, 60_000, () => 1000)
  const granted = Array.from({ length: 100 }, () => l.reserve(['session', 'ip'])).filter(a => a !== null)
  t.equal(granted.length, 5)
})

t.test('AttemptLimiter gives back an attempt that succeeded, once', async t => {
  const l = new AttemptLimiter(2, 60_000, () => 1000)
  const first = l.reserve(['u'])
  t.ok(l.reserve(['u']))
  t.equal(l.blocked(['u']), true)
  first?.succeeded()
  first?.succeeded()
  t.equal(l.blocked(['u']), false)
  t.ok(l.reserve(['u']))
  t.equal(l.reserve(['u']), null, 'a second succeeded() gave nothing more back')
})

t.test('AttemptLimiter: filling the table with 50,001+ fresh keys keeps an existing lockout', async t => {
  let now = 1000
  const l = new AttemptLimiter(10, 60_000, () => now)
  for (let i = 0; i < 10; i++) l.reserve(['ip:1.2.3.4', 'user:victim'])
  t.equal(l.blocked(['user:victim']), true)
  now += 1000
  for (let i = 0; i < 60_000; i++) l.reserve([`ip:10.0.${i >> 8}.${i & 255}`, `user:junk-${i}`])
  t.ok(l.size <= MAX_KEYS, `table bounded (${l.size} keys)`)
  t.equal(l.blocked(['user:victim']), true, 'lockout survives')
  t.equal(l.blocked(['ip:1.2.3.4']), true, 'lockout survives')
  t.equal(l.blocked(['user:junk-59999']), false)
  t.equal(l.size > 40_000, true, 'evicts the oldest fresh keys, not everything')
  now += 60_000
  t.equal(l.blocked(['user:victim']), false, 'the lockout still ends with its window')
})

t.test('AttemptLimiter evicts the least recently touched keys first; lockouts only when nothing else is left', async t => {
  const l = new AttemptLimiter(2, 60_000, () => 1000, 10)
  l.reserve(['locked']); l.reserve(['locked'])
  for (let i = 0; i < 10; i++) l.reserve([`k${i}`])
  // 11 keys > 10: back to 9, dropping k0 and k1 (the oldest that are not locked out).
  t.equal(l.size, 9)
  t.equal(l.blocked(['locked']), true)
  l.reserve(['k0'])
  t.equal(l.blocked(['k0']), false, 'k0 was evicted and starts over')
  const full = new AttemptLimiter(1, 60_000, () => 1000, 10)
  for (let i = 0; i < 11; i++) full.reserve([`l${i}`])
  t.equal(full.size, 9, 'a table of lockouts still stays bounded')
  t.equal(full.blocked(['l0']), false, 'the oldest lockouts went first')
  t.equal(full.blocked(['l10']), true)
})

t.test('prune deletes codes and device sessions that ended a day ago', async t => {
  const dir = await mkdtemp(join(tmpdir(), 'hr-oauth-'))
  const store = await Store.open(dir)
  t.teardown(async () => { await store.close(); await rm(dir, { recursive: true, force: true }) })
  const state = new OAuthState(store)
  const long = Date.now() - 3 * 86_400_000
  const oldCode = await state.createCode({ client_id: 'c', redirect_uri: 'https://x/cb', profile_id: 'p', scopes: ['profile:read'], code_challenge: null }, 600, long)
  const newCode = await state.createCode({ client_id: 'c', redirect_uri: 'https://x/cb', profile_id: 'p', scopes: ['profile:read'], code_challenge: null }, 600)
  const oldDevice = await state.createDevice({ client_id: 'c', scopes: ['profile:read'] }, 600, 3, long)
  const newDevice = await state.createDevice({ client_id: 'c', scopes: ['profile:read'] }, 600, 3)
  await state.prune() // (a background prune may have removed some already)
  t.equal(await state.getCode(digest(oldCode)), undefined)
  t.ok(await state.getCode(digest(newCode)))
  t.equal(await state.getDevice(digest(oldDevice.device_code)), undefined)
  t.equal(await state.deviceByUserCode(oldDevice.user_code), undefined)
  t.ok(await state.deviceByUserCode(newDevice.user_code))
})

t.test('a failed background prune is logged as a warning with the error\'s message, and the code is still created', async t => {
  const dir = await mkdtemp(join(tmpdir(), 'hr-oauth-'))
  const store = await Store.open(dir)
  t.teardown(async () => { await store.close(); await rm(dir, { recursive: true, force: true }) })
  const lines: Array<Record<string, unknown>> = []
  let logged!: () => void
  const warned = new Promise<void>(resolve => { logged = resolve })
  const log = pino({ level: 'debug' }, new Writable({
    write (chunk: Buffer, _enc, cb) { lines.push(JSON.parse(chunk.toString('utf8')) as Record<string, unknown>); logged(); cb() }
  }))
  const state = new OAuthState(store, log)
  state.prune = async () => { throw new Error('iterator closed under the prune') }
  const code = await state.createCode({ client_id: 'c', redirect_uri: 'https://x/cb', profile_id: 'p', scopes: ['profile:read'], code_challenge: null }, 600)
  await warned
  t.equal(lines.length, 1)
  t.match(lines[0], { level: 40, msg: 'pruning expired OAuth codes and device sessions failed; retried in an hour', err: { message: 'iterator closed under the prune' } })
  t.notOk(JSON.stringify(lines).includes(code), 'the code is not logged')
  t.ok(await state.getCode(digest(code)))
})
