// Erasure from the pages, in real Chromium (issue 41 §2): on /me, "Delete my
// account and all my data" asks for the password (a wrong one deletes nothing)
// and then erases the member and ends the sign-in; on /operator/users the
// operator types the username to confirm. After each, the member's token
// answers 401 and no file under the data directory holds them.
import t from 'tap'
import { startTestService } from '../../helpers/service.ts'
import { launch, newPage, postReading, until } from '../../helpers/browser.ts'

declare const document: { querySelectorAll (selector: string): { length: number }, querySelector (selector: string): { getAttribute (name: string): string | null } | null }
import { call } from '../http/fetch.ts'
import { filesContaining } from '../../helpers/files-scan.ts'
import { erasedDigest } from '../../../api/audit/log.ts'

t.test('a member deletes their own account on /me after re-entering the password', async t => {
  const svc = await startTestService(t)
  const [profile, browser] = await Promise.all([svc.user('zqmember51c2d8'), launch(t)])
  await svc.user('stays')
  const write = await svc.token('zqmember51c2d8', 'data:heart_rate:write data:heart_rate:read')
  t.equal(await postReading(svc.url, write, 120, Date.now() - 5000), 200)
  const errors: string[] = []
  const { page } = await newPage(browser, errors)
  await page.goto(`${svc.url}/me`)
  await page.getByLabel('Username').fill('zqmember51c2d8')
  await page.getByLabel('Password').fill('password123')
  await Promise.all([page.waitForURL(`${svc.url}/me`), page.getByRole('button', { name: 'Sign in' }).click()])

  await Promise.all([page.waitForURL(`${svc.url}/me/delete`), page.getByRole('link', { name: 'Delete my account and all my data' }).click()])
  await page.getByLabel('Your password').fill('not-my-password')
  const [wrong] = await Promise.all([page.waitForResponse(r => r.url().endsWith('/me/delete') && r.request().method() === 'POST'), page.getByRole('button', { name: 'Delete my account and all my data' }).click()])
  t.equal(wrong.status(), 403)
  t.equal(await page.getByRole('alert').textContent(), 'That is not your password. Nothing was deleted.')
  t.equal((await call(svc.url, 'GET', '/api/v1/data/heart_rate/latest', { token: write })).status, 200, 'nothing was deleted')

  await page.getByLabel('Your password').fill('password123')
  const [done] = await Promise.all([page.waitForResponse(r => r.url().endsWith('/me/delete') && r.request().method() === 'POST'), page.getByRole('button', { name: 'Delete my account and all my data' }).click()])
  t.equal(done.status(), 200)
  t.equal(await page.locator('#deleted').textContent(), 'Your account and all your data were deleted from this box.')
  t.equal((await call(svc.url, 'GET', '/api/v1/data/heart_rate/latest', { token: write })).status, 401, 'the token is gone')
  await page.goto(`${svc.url}/me`)
  t.match(page.url(), /\/signin/, 'signed out')
  t.same(await filesContaining(svc.dataDir, ['zqmember51c2d8', profile]), [])
  // Chromium logs the refused attempt's 403 as a failed resource load: that one, and nothing else.
  t.same(errors.map(e => e.replace(/\s*\(Forbidden\)$/, '')), ['Failed to load resource: the server responded with a status of 403'])
})

t.test('the operator deletes a member on /operator/users after typing the username', async t => {
  const svc = await startTestService(t)
  const [profile, browser] = await Promise.all([svc.user('zqoperdel9e4a71'), launch(t)])
  await svc.user('stays')
  const { page } = await newPage(browser)
  await page.goto(`${svc.url}/operator/signin`)
  await page.getByLabel('Admin token').fill(svc.adminToken)
  await Promise.all([page.waitForURL(`${svc.url}/operator`), page.getByRole('button', { name: 'Sign in' }).click()])
  await page.goto(`${svc.url}/operator/users`)
  await Promise.all([page.waitForURL(/\/operator\/users\/zqoperdel9e4a71\/delete$/), page.locator('a[href="/operator/users/zqoperdel9e4a71/delete"]').click()])

  await page.getByLabel('Type zqoperdel9e4a71 to confirm').fill('zqoperdel')
  const [mismatch] = await Promise.all([page.waitForResponse(r => r.request().method() === 'POST'), page.getByRole('button', { name: 'Delete zqoperdel9e4a71 and all their data' }).click()])
  t.equal(mismatch.status(), 400)
  t.equal((await svc.admin('GET', '/admin/users')).users?.length ?? (await svc.admin('GET', '/admin/users')).length, 2, 'nothing was deleted')

  await page.getByLabel('Type zqoperdel9e4a71 to confirm').fill('zqoperdel9e4a71')
  await Promise.all([page.waitForURL(/\/operator\/users\?done=deleted$/), page.getByRole('button', { name: 'Delete zqoperdel9e4a71 and all their data' }).click()])
  t.equal(await page.getByRole('table').locator('tbody tr').count(), 1, 'one user left')
  t.equal(await page.getByRole('table').locator('tbody tr td').first().textContent(), 'stays')
  t.same(await filesContaining(svc.dataDir, ['zqoperdel9e4a71', profile]), [])

  // The audit log page: the deletion, newest first, naming the member by the digest only.
  await Promise.all([page.waitForURL(`${svc.url}/operator/audit`), page.getByRole('link', { name: 'Audit log' }).click()])
  const first = page.getByRole('table').locator('tbody tr').first().locator('td')
  t.same(await first.allTextContents().then(cells => cells.slice(1)), ['admin token', 'user.delete', `user ${erasedDigest(profile)}`, '127.0.0.1', 'ok (303)'])
  t.notOk((await page.content()).includes('zqoperdel9e4a71'), 'the username is on no row')
})

t.test('a room display drops the erased member\'s tile at once', async t => {
  const svc = await startTestService(t)
  const [gone, browser] = await Promise.all([svc.user('zqdisplay2b7e90'), launch(t)])
  const kept = await svc.user('stays')
  const room = await svc.admin('POST', '/admin/rooms', { name: 'Spin' })
  for (const username of ['zqdisplay2b7e90', 'stays']) await svc.admin('POST', `/admin/rooms/${room.room_id}/members`, { username })
  const { page } = await newPage(browser)
  t.equal((await page.goto(`${svc.url}/rooms/${room.room_id}/display?display_id=${room.display_id}`))?.status(), 200)
  await until(page, (n: number) => document.querySelectorAll('.tile').length === n, 2)
  // The live stream is open (no readings yet: 'waiting'), so the removal reaches the page as an event.
  await until(page, ([s, v]) => document.querySelector(s)?.getAttribute('data-connection') === v, ['#room', 'waiting'] as const)
  await svc.admin('DELETE', '/admin/users/zqdisplay2b7e90')
  await until(page, (n: number) => document.querySelectorAll('.tile').length === n, 1)
  t.equal(await page.locator(`.tile[data-profile-id="${kept}"]`).count(), 1, 'the other member\'s tile stays')
  t.equal(await page.locator(`.tile[data-profile-id="${gone}"]`).count(), 0, 'the erased member\'s tile is gone')
})
