// Pure parts of the OAuth feature: strict form decoding, cookies, user codes,
// the per-key lock, the return-to guard, and pruning of ended codes.
import t from 'tap'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseForm } from '../../../api/oauth/form.ts'
import { parseCookies, serializeCookie } from '../../../api/oauth/cookies.ts'
import { KeyedLock, OAuthState, USER_CODE_ALPHABET, formatUserCode, newUserCode, normalizeUserCode } from '../../../api/oauth/codes.ts'
import { safeReturnTo } from '../../../api/oauth/context.ts'
import { esc } from '../../../api/oauth/pages.ts'
import { AttemptLimiter } from '../../../api/oauth/rate-limit.ts'
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
  t.equal(esc(`<a href="x" onclick='y'>&</a>`), '&lt;a href=&quot;x&quot; onclick=&#39;y&#39;&gt;&amp;&lt;/a&gt;')
})

t.test('AttemptLimiter blocks after the limit within the window', async t => {
  let now = 1000
  const l = new AttemptLimiter(2, 60_000, () => now)
  t.equal(l.blocked(['a']), false)
  l.fail(['a', 'ip'])
  l.fail(['a'])
  t.equal(l.blocked(['a']), true)
  t.equal(l.blocked(['ip']), false)
  t.equal(l.blocked(['b', 'a']), true)
  now += 60_001
  t.equal(l.blocked(['a']), false)
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
