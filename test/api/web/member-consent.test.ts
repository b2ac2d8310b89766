// Consent on /me (issue 41 §1), in real Chromium: with consent required, the
// member reads the operator's notice, accepts it (recorded as given by the
// member, for the current version) and their readings are stored; they
// withdraw it and readings are refused again. The room display's state leaves
// out a member without consent, and shows them again once they consent.
import t from 'tap'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startTestService } from '../../helpers/service.ts'
import { launch, newPage, postReading, text } from '../../helpers/browser.ts'

t.test('a member accepts the notice on /me, then withdraws; room displays follow', async t => {
  const dir = await mkdtemp(join(tmpdir(), 'hr-relay-notice-'))
  t.teardown(async () => { await rm(dir, { recursive: true, force: true }) })
  const noticeFile = join(dir, 'notice.md')
  await writeFile(noticeFile, 'Spin & Co. records your heart rate during classes <b>only</b> with your consent.\n')
  const svc = await startTestService(t, { privacy: { require_consent: true, notice_version: '2026-11', notice_file: noticeFile } })
  const [alice, browser] = await Promise.all([svc.user('alice'), launch(t)])
  const rooms = svc.service.services.rooms
  const room = await rooms.create('Spin')
  await rooms.upsertMember(room.room_id, alice, { display_name: 'Alice' })
  const write = await svc.token('alice', 'data:heart_rate:write')
  const shown = async (): Promise<string[]> => {
    const r = await fetch(`${svc.url}/rooms/${room.room_id}/display/state?display_id=${room.display_id}`)
    t.equal(r.status, 200)
    return ((await r.json()) as { members: Array<{ display_name: string }> }).members.map(m => m.display_name)
  }

  t.equal(await postReading(svc.url, write, 120), 403, 'no consent yet: refused')
  t.same(await shown(), [], 'not on the room display')

  const errors: string[] = []
  const { page } = await newPage(browser, errors)
  await page.goto(`${svc.url}/me`)
  await page.getByLabel('Username').fill('alice')
  await page.getByLabel('Password').fill('password123')
  await Promise.all([page.waitForURL(`${svc.url}/me`), page.getByRole('button', { name: 'Sign in' }).click()])
  t.equal(await text(page, '#consent-status'), 'This box records heart rates only with your consent. Until you accept the notice, your readings are not stored and room displays do not show you.')
  t.equal(await text(page, '#privacy pre.notice'), 'Spin & Co. records your heart rate during classes <b>only</b> with your consent.\n', 'the operator\'s notice, as text (not HTML)')

  const before = Date.now()
  await Promise.all([page.waitForURL(/\/me#privacy$/), page.getByRole('button', { name: 'I accept the privacy notice' }).click()])
  t.match(await text(page, '#consent-status'), /^You consented to the privacy notice version 2026-11 on \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC\.$/)
  const consents = (await svc.service.services.users.get(alice))?.consents ?? []
  t.equal(consents.length, 1)
  t.match(consents[0], { version: '2026-11', how: 'member' })
  t.ok((consents[0]?.given_at ?? 0) >= before, 'recorded when it was given')
  t.equal(await postReading(svc.url, write, 121), 200, 'stored with consent')
  t.same(await shown(), ['Alice'], 'on the room display')

  await Promise.all([page.waitForURL(/\/me#privacy$/), page.getByRole('button', { name: 'Withdraw my consent' }).click()])
  t.equal(await text(page, '#consent-status'), 'This box records heart rates only with your consent. Until you accept the notice, your readings are not stored and room displays do not show you.')
  t.equal(await postReading(svc.url, write, 122), 403, 'refused again')
  t.same(await shown(), [], 'off the room display again')
  t.same(errors, [], 'no page errors')
})
