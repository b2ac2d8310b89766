// watchAccessToken: the revocation event of the token store, the expiry timer
// (in steps no longer than setTimeout's maximum) and the re-check at open.
import t from 'tap'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Store } from '../../../api/store/db.ts'
import { Tokens } from '../../../api/store/tokens.ts'
import { digest } from '../../../api/store/secrets.ts'
import { watchAccessToken, type TokenEnd } from '../../../api/store/token-watch.ts'

async function openTokens (t: { teardown (fn: () => unknown): void }): Promise<Tokens> {
  const dir = await mkdtemp(join(tmpdir(), 'hr-watch-'))
  const store = await Store.open(dir)
  t.teardown(async () => { await store.close(); await rm(dir, { recursive: true, force: true }) })
  return new Tokens(store)
}

const DAY = 86_400_000

t.test('a token living longer than setTimeout\'s maximum is not reported expired early; its revocation ends it, another\'s does not', async t => {
  const tokens = await openTokens(t)
  // 30 days: an uncapped setTimeout would fire after 1 ms (TimeoutOverflowWarning).
  const mine = await tokens.issue({ client_id: 'c', profile_id: 'p', scopes: ['data:heart_rate:read'], flow: 'manual', expires_in: 30 * 86400 })
  const other = await tokens.issue({ client_id: 'c', profile_id: 'q', scopes: ['data:heart_rate:read'], flow: 'manual', expires_in: 3600 })
  const warnings: string[] = []
  const onWarning = (w: Error): void => { warnings.push(w.name) }
  process.on('warning', onWarning)
  t.teardown(() => { process.off('warning', onWarning) })
  const ends: TokenEnd[] = []
  const stop = watchAccessToken(tokens, digest(mine.access_token), Date.now() + 30 * DAY, why => { ends.push(why) })
  t.teardown(stop)
  t.equal(await tokens.revoke(other.access_token), true)
  t.same(ends, [], 'another token\'s revocation does not end it')
  t.equal(await tokens.revoke(mine.access_token), true)
  t.same(ends, ['revoked'], 'ended by the revocation event, once, before revoke() returned')
  t.same(warnings.filter(w => w === 'TimeoutOverflowWarning'), [], 'the timer stays within setTimeout\'s maximum')
})

t.test('expiry: already past ends at once; stop() cancels the timer and the subscription', async t => {
  const tokens = await openTokens(t)
  const issued = await tokens.issue({ client_id: 'c', profile_id: 'p', scopes: ['data:heart_rate:read'], flow: 'manual', expires_in: 3600 })
  const ends: TokenEnd[] = []
  watchAccessToken(tokens, digest(issued.access_token), Date.now() - 1, why => { ends.push(why) })
  t.same(ends, ['expired'])
  const later: TokenEnd[] = []
  const stop = watchAccessToken(tokens, digest(issued.access_token), Date.now() + 3600_000, why => { later.push(why) })
  stop()
  await tokens.revoke(issued.access_token)
  t.same(later, [], 'a stopped watch reports nothing')
})

t.test('a revocation stored before the watch began is caught by the re-check at open', async t => {
  const tokens = await openTokens(t)
  const issued = await tokens.issue({ client_id: 'c', profile_id: 'p', scopes: ['data:heart_rate:read'], flow: 'manual', expires_in: 3600 })
  await tokens.revoke(issued.access_token)
  const why = await new Promise<TokenEnd>(resolve => { watchAccessToken(tokens, digest(issued.access_token), Date.now() + 3600_000, resolve) })
  t.equal(why, 'revoked')
})
