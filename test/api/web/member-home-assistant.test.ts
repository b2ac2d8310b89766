// The Home Assistant opt-in on /me, in real Chromium: a member shares and stops
// sharing; the user record follows; a post without the session's form token is refused.
import t from 'tap'
import { startTestService } from '../../helpers/service.ts'
import { launch, newPage, text, unlabelled } from '../../helpers/browser.ts'

t.test('a member opts in to Home Assistant on /me and out again', async t => {
  const svc = await startTestService(t)
  const [profile, browser] = await Promise.all([svc.user('lea'), launch(t)])
  const errors: string[] = []
  const { page } = await newPage(browser, errors)
  await page.goto(`${svc.url}/me`)
  await page.getByLabel('Username').fill('lea')
  await page.getByLabel('Password').fill('password123')
  await Promise.all([page.waitForURL(`${svc.url}/me`), page.getByRole('button', { name: 'Sign in' }).click()])
  t.match(await text(page, '#home-assistant-state'), /not shared/)
  t.same(await unlabelled(page), [], 'every control on /me has a label')

  await Promise.all([page.waitForURL(/\/me/), page.getByRole('button', { name: 'Share with Home Assistant' }).click()])
  await page.getByRole('button', { name: 'Stop sharing with Home Assistant' }).waitFor()
  t.equal((await svc.service.services.users.get(profile))?.home_assistant, true)
  t.match(await text(page, '#home-assistant-state'), /are shared with/)

  await Promise.all([page.waitForURL(/\/me/), page.getByRole('button', { name: 'Stop sharing with Home Assistant' }).click()])
  await page.getByRole('button', { name: 'Share with Home Assistant' }).waitFor()
  t.equal((await svc.service.services.users.get(profile))?.home_assistant, false)
  t.same(errors, [])

  // Without the session and its form token: refused, nothing changes.
  const post = await fetch(`${svc.url}/me/home-assistant`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'enabled=on', redirect: 'manual' })
  t.equal(post.status, 403)
  t.equal((await svc.service.services.users.get(profile))?.home_assistant, false)
})
