// The front desk adds members on /operator/users in real Chromium: one with a password set at the desk, one with an
// invitation link that the member opens in another browser (a second context, its own cookies), chooses a password
// with, and signs in at /me with. Then the search box, editing a member, a taken username, and an expired link.
import t from 'tap'
import { join } from 'node:path'
import { startTestService } from '../../helpers/service.ts'
import { ARTIFACTS, launch, newPage, text, unlabelled } from '../../helpers/browser.ts'

t.test('add a member with a password and one with an invitation link the member uses to sign in at /me', async t => {
  const [svc, browser] = await Promise.all([startTestService(t), launch(t)])
  const errors: string[] = []
  const { page } = await newPage(browser, errors)
  await page.goto(`${svc.url}/operator/signin`)
  await page.getByLabel('Admin token').fill(svc.adminToken)
  await Promise.all([page.waitForURL(`${svc.url}/operator`), page.getByRole('button', { name: 'Sign in' }).click()])

  await page.goto(`${svc.url}/operator/users`)
  t.same(await unlabelled(page), [], 'every control on /operator/users has a label')
  const add = page.locator('#add-member')
  const fillProfile = async (username: string, name: string, age: string, sex: string, weight: string): Promise<void> => {
    await add.getByLabel('Username', { exact: true }).fill(username)
    await add.getByLabel('Name', { exact: true }).fill(name)
    await add.getByLabel('Age', { exact: true }).fill(age)
    await add.getByLabel('Sex', { exact: true }).selectOption(sex)
    await add.getByLabel('Weight (kg)').fill(weight)
  }

  // With a password: the member's page follows.
  await fillProfile('lena', 'Lena Berg', '29', 'female', '64')
  await add.getByLabel('A password I set now (below)').check()
  await add.getByLabel(/^Password/).fill('lena-password-1')
  await Promise.all([page.waitForURL(`${svc.url}/operator/users/lena?done=added`), add.getByRole('button', { name: 'Add member' }).click()])
  t.equal(await text(page, '[role=status]'), 'lena was added.')
  t.equal(await text(page, '.member-signin'), 'with the password set at the desk')
  const lena = await svc.service.services.users.byUsername('lena')
  t.match(lena, { username: 'lena', display_name: 'Lena Berg', age: 29, sex: 'female', weight_kg: 64 })
  t.equal(lena?.max_heart_rate, undefined)
  t.ok(await svc.service.services.users.authenticate('lena', 'lena-password-1'), 'the password set at the desk works')

  // With an invitation link (the default), shown once.
  await page.goto(`${svc.url}/operator/users`)
  await fillProfile('omar', 'Omar Haddad', '41', 'male', '82.5')
  await add.getByLabel('Maximum heart rate (optional)').fill('182')
  const [answer] = await Promise.all([page.waitForResponse(r => r.request().method() === 'POST'), add.getByRole('button', { name: 'Add member' }).click()])
  t.equal(answer.status(), 201)
  const link = await text(page, '.invitation-url') ?? ''
  t.match(link, new RegExp(`^${svc.url}/me/invitation/[0-9a-f-]{36}\\.[A-Za-z0-9_-]{43}$`))
  t.match(await text(page, '.member-signin'), /^not yet: their invitation link works until \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$/)
  t.match(await svc.service.services.users.byUsername('omar'), { display_name: 'Omar Haddad', age: 41, sex: 'male', weight_kg: 82.5, max_heart_rate: 182 })

  // The list, with the search box; the screenshot of the front desk's members.
  await page.goto(`${svc.url}/operator/users`)
  t.same(await page.locator('a.member-link').allTextContents(), ['lena', 'omar'])
  await page.screenshot({ path: join(ARTIFACTS, 'front-desk-users.png'), fullPage: true })
  await page.getByLabel('Search members').fill('HADD')
  await Promise.all([page.waitForURL(`${svc.url}/operator/users?q=HADD`), page.getByRole('button', { name: 'Search' }).click()])
  t.same(await page.locator('a.member-link').allTextContents(), ['omar'], 'found by display name, case-insensitive')
  await page.getByLabel('Search members').fill('nobody')
  await Promise.all([page.waitForURL(/q=nobody/), page.getByRole('button', { name: 'Search' }).click()])
  t.equal(await page.locator('a.member-link').count(), 0)
  t.match(await page.locator('main').textContent(), /Members matching "nobody": nobody matches/)

  // The member opens the link in their own browser, chooses a password and signs in at /me.
  const member = await newPage(browser, errors)
  await member.page.goto(link)
  t.equal(await text(member.page, 'h1'), 'Choose your password')
  t.same(await unlabelled(member.page), [], 'every control on the invitation page has a label')
  await member.page.getByLabel(/^Password/).fill('omar-chose-this-1')
  await member.page.getByLabel('The same password again').fill('omar-chose-this-1')
  await member.page.getByRole('button', { name: 'Set my password' }).click()
  await member.page.waitForSelector('text=Your password is set.')
  await Promise.all([member.page.waitForURL(/\/signin/), member.page.getByRole('link', { name: 'Sign in' }).click()])
  await member.page.getByLabel('Username').fill('omar')
  await member.page.getByLabel('Password').fill('omar-chose-this-1')
  await Promise.all([member.page.waitForURL(`${svc.url}/me`), member.page.getByRole('button', { name: 'Sign in' }).click()])
  t.equal(await text(member.page, 'h1'), 'Today')
  t.match(await member.page.locator('main p').first().textContent(), /Signed in as omar/)
  // The link is spent.
  const again = await member.page.goto(link)
  t.equal(again?.status(), 410)
  t.match(await text(member.page, '[role=alert]'), /This invitation link was already used\./)
  await page.goto(`${svc.url}/operator/users/omar`)
  t.match(await text(page, '.member-signin'), /^with the password they chose \(invitation used /)

  // Editing: a value set, one cleared; a bad value changes nothing.
  await page.goto(`${svc.url}/operator/users/lena`)
  t.same(await unlabelled(page), [], 'every control on the member page has a label')
  const edit = page.locator('#edit-member')
  await edit.getByLabel('Maximum heart rate (optional)').fill('190')
  await edit.getByLabel('Weight (kg)').fill('')
  await Promise.all([page.waitForURL(`${svc.url}/operator/users/lena?done=saved`), edit.getByRole('button', { name: 'Save changes' }).click()])
  t.equal(await text(page, '[role=status]'), 'Changes saved.')
  t.match(await svc.service.services.users.byUsername('lena'), { max_heart_rate: 190, age: 29, display_name: 'Lena Berg' })
  t.equal((await svc.service.services.users.byUsername('lena'))?.weight_kg, undefined, 'an emptied field is cleared')
  // A value the browser's own checks would stop is refused by the server too.
  const bad = await page.evaluate(`fetch('/operator/users/lena', { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ csrf: document.querySelector('#edit-member input[name=csrf]').value, display_name: 'Lena', age: '29', sex: 'female', weight_kg: '64', max_heart_rate: '400' }) })
    .then(async r => [r.status, await r.text()])`) as [number, string]
  t.equal(bad[0], 400)
  t.match(bad[1], /Maximum heart rate must be a whole number from 60 to 260\. Nothing was changed\./)
  t.equal((await svc.service.services.users.byUsername('lena'))?.max_heart_rate, 190)

  // A taken username.
  await page.goto(`${svc.url}/operator/users`)
  await fillProfile('LENA', 'Another Lena', '30', 'female', '60')
  const [taken] = await Promise.all([page.waitForResponse(r => r.request().method() === 'POST'), add.getByRole('button', { name: 'Add member' }).click()])
  t.equal(taken.status(), 409)
  t.equal(await text(page, '[role=alert]'), 'The username LENA is taken. The member was not added.')
  t.equal((await svc.admin('GET', '/admin/users')).users.length, 2)
  // Only the refusals above, which the browser reports as failed loads.
  t.same(errors, [410, 400, 409].map(s => `Failed to load resource: the server responded with a status of ${s} (${s === 410 ? 'Gone' : s === 400 ? 'Bad Request' : 'Conflict'})`), 'no other page errors')
})

t.test('an expired invitation link says so and sets no password', async t => {
  const svc = await startTestService(t)
  const made = await svc.admin('POST', '/admin/users', { username: 'pete', invite: true })
  const path = new URL(made.invitation_url as string).pathname
  const users = svc.service.services.users
  const pete = await users.byUsername('pete')
  await users.update(pete?.profile_id ?? '', u => { if (u.invitation !== undefined) u.invitation.expires_at = Date.now() - 1; return u })
  const res = await fetch(svc.url + path)
  t.equal(res.status, 410)
  t.match(await res.text(), /This invitation link has expired\. Ask the front desk for a new link\./)
  const none = await fetch(`${svc.url}/admin/users`, { method: 'POST', headers: { authorization: `Bearer ${svc.adminToken}`, 'content-type': 'application/json' }, body: JSON.stringify({ username: 'quinn' }) })
  t.equal(none.status, 400, 'neither a password nor an invitation')
  t.match(await none.json(), { detail: /give either a password or invite: true/ })
  t.equal(await users.byUsername('quinn'), undefined)
})
