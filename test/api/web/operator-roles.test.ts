// Operator accounts and roles (issue 41 §5), over real sockets: `hr-relay admin
// operator add|list|remove` (the last owner stays), sign-in with name and
// password; a coach gets 403 on every operator page and form that is not for
// coaches, found from the routes the server registers, so a new page cannot slip
// through; the audit log names the operator; sign-in sessions survive a restart,
// stored by digest only, and signing out removes them. Real Chromium signs in as
// a coach and as an owner.
import t from 'tap'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startTestService, type TestService } from '../../helpers/service.ts'
import { startRecording } from '../../helpers/routes.ts'
import { Browser, csrfOf } from '../oauth/helpers.ts'
import { runCli } from '../../helpers/cli.ts'
import { filesContaining } from '../../helpers/files-scan.ts'
import { launch, newPage } from '../../helpers/browser.ts'

const PASSWORD = 'coach-password-1'

/** Pages and forms a coach may use: the overview, rooms and their displays, and signing out. */
const COACH_ROUTES = new Set([
  'GET /operator', 'GET /operator/rooms', 'POST /operator/rooms', 'POST /operator/rooms/:room_id/rename',
  'POST /operator/rooms/:room_id/members', 'POST /operator/rooms/:room_id/members/:profile_id/remove',
  'POST /operator/rooms/:room_id/display/revoke', 'GET /operator/coach', 'GET /operator/rooms/:room_id/coach',
  'POST /operator/rooms/:room_id/class', 'POST /operator/rooms/:room_id/class/end', 'POST /operator/rooms/:room_id/class/members/:profile_id/hidden',
  'GET /operator/rooms/:room_id/coach/state', 'GET /operator/rooms/:room_id/coach/members/:profile_id/readings',
  'GET /operator/rooms/:room_id/coach/stream'
])
const SIGN_IN_OUT = new Set(['GET /operator/signin', 'POST /operator/signin', 'POST /operator/signout'])

async function operatorBrowser (s: TestService, name: string, password: string): Promise<Browser> {
  const b = new Browser(s.url)
  const page = await b.get('/operator/signin')
  const r = await b.post('/operator/signin', { csrf: csrfOf(page.text), name, password })
  if (r.status !== 303) throw new Error(`operator sign-in failed: ${r.status}`)
  return b
}

t.test('operators from the CLI; a coach is refused on every owner-only page and form', async t => {
  const { svc: s, routes } = await startRecording(t)

  const add = await runCli(['admin', 'operator', 'add', 'coachcarla', '--role', 'coach', '--password', PASSWORD, '--data-dir', s.dataDir])
  t.equal(add.code, 0, add.stderr)
  t.equal(add.stdout, 'operator coachcarla added (coach); they sign in at /operator/signin\n')
  t.equal((await runCli(['admin', 'operator', 'add', 'ownerolga', '--role', 'owner', '--password', PASSWORD, '--data-dir', s.dataDir])).code, 0)
  const badRole = await runCli(['admin', 'operator', 'add', 'x', '--role', 'boss', '--password', PASSWORD, '--data-dir', s.dataDir])
  t.same([badRole.code, badRole.stderr.includes('--role owner|coach is required')], [2, true])
  const short = await runCli(['admin', 'operator', 'add', 'shorty', '--role', 'coach', '--password', 'short', '--data-dir', s.dataDir])
  t.equal(short.code, 1)
  t.match(short.stderr, /the password is 10 to 200 characters/)
  const list = await runCli(['admin', 'operator', 'list', '--data-dir', s.dataDir])
  t.match(list.stdout, /^coachcarla\tcoach\t\S+Z\nownerolga\towner\t\S+Z\n$/)
  const last = await runCli(['admin', 'operator', 'remove', 'ownerolga', '--data-dir', s.dataDir])
  t.equal(last.code, 1)
  t.match(last.stderr, /ownerolga is the last owner: add another owner first/)

  const wrong = new Browser(s.url)
  const form = await wrong.get('/operator/signin')
  const refused = await wrong.post('/operator/signin', { csrf: csrfOf(form.text), name: 'coachcarla', password: 'not-the-password' })
  t.equal(refused.status, 401)
  t.match(refused.text, /Wrong name or password\./)

  await s.user('member1')
  const room = await s.admin('POST', '/admin/rooms', { name: 'Spin' })
  const coach = await operatorBrowser(s, 'coachcarla', PASSWORD)
  const csrf = csrfOf((await coach.get('/operator')).text)
  const concrete = (url: string): string => url
    .replace(':room_id', room.room_id).replace(':username', 'member1').replace(':profile_id', '00000000-0000-0000-0000-000000000000')
    .replace(':device_id', 'esp-none').replace(':name', 'ownerolga').replace(':widget_id', 'none')
  const pages = routes.filter(r => r.url.startsWith('/operator') && (r.method === 'GET' || r.method === 'POST') && !SIGN_IN_OUT.has(`${r.method} ${r.url}`))
  t.ok(pages.length >= 15, `${pages.length} operator pages and forms`)
  for (const r of pages) {
    const key = `${r.method} ${r.url}`
    const answer = r.method === 'GET' ? await coach.get(concrete(r.url)) : await coach.post(concrete(r.url), { csrf, name: 'x', username: 'member1' })
    if (COACH_ROUTES.has(key)) t.not(answer.status, 403, `${key} is open to a coach (${answer.status})`)
    else {
      t.equal(answer.status, 403, `${key} answers 403 to a coach`)
      t.match(answer.text, /This page is for the box&#39;s owners|This page is for the box's owners/)
    }
  }
  t.equal((await s.admin('GET', '/admin/users')).users.length, 1, 'the coach deleted nobody')
  t.equal((await s.admin('GET', '/admin/operators')).operators.length, 2, 'nor removed an operator')

  // The audit log names the operator who made a change.
  const entries = (await s.admin('GET', '/admin/audit')).entries as Array<{ actor: string, action: string, result: string }>
  t.ok(entries.some(e => e.actor === 'coachcarla' && e.action === 'room.create' && e.result === 'ok'), 'the coach\'s room')
  t.ok(entries.some(e => e.actor === 'coachcarla' && e.action === 'operator.remove' && e.result === 'refused'), 'the coach\'s refused attempt')
})

t.test('sign-in sessions survive a restart, by digest only; signing out removes them', async t => {
  const dataDir = await mkdtemp(join(tmpdir(), 'hr-relay-sessions-'))
  t.teardown(async () => { await rm(dataDir, { recursive: true, force: true }) })
  let s = await startTestService(t, { data_dir: dataDir })
  await s.admin('POST', '/admin/operators', { name: 'ownerolga', role: 'owner', password: PASSWORD })
  await s.user('mia')
  const member = new Browser(s.url)
  t.equal((await member.signIn('mia')).status, 303)
  const owner = await operatorBrowser(s, 'ownerolga', PASSWORD)
  await s.stop()
  const ids = [member.cookie, owner.cookie].map(c => c.split('=')[1] ?? '')
  t.ok(ids.every(id => id.length > 20), 'session cookies')
  t.same(await filesContaining(dataDir, ids), [], 'the cookie ids are in no file (only their digests are kept)')

  s = await startTestService(t, { data_dir: dataDir })
  for (const b of [member, owner]) (b as unknown as { base: string }).base = s.url
  const me = await member.get('/me')
  t.equal(me.status, 200, 'the member is still signed in')
  t.match(me.text, /mia/)
  const ops = await owner.get('/operator/operators')
  t.equal(ops.status, 200, 'the operator is still signed in, as an owner')
  t.match(ops.text, /ownerolga/)
  const out = await owner.post('/operator/signout', { csrf: csrfOf(ops.text) })
  t.equal(out.status, 303)
  await s.stop()
  s = await startTestService(t, { data_dir: dataDir })
  for (const b of [member, owner]) (b as unknown as { base: string }).base = s.url
  const after = await owner.get('/operator/operators')
  t.equal(after.status, 303, 'signed out stays signed out')
  t.equal((await member.get('/me')).status, 200)
})

t.test('in Chromium: a coach signs in and runs rooms, an owner manages operators', async t => {
  const s = await startTestService(t)
  await s.admin('POST', '/admin/operators', { name: 'coachcarla', role: 'coach', password: PASSWORD })
  await s.admin('POST', '/admin/operators', { name: 'ownerolga', role: 'owner', password: PASSWORD })
  const browser = await launch(t)
  const signIn = async (name: string): Promise<Awaited<ReturnType<typeof newPage>>['page']> => {
    const { page } = await newPage(browser)
    await page.goto(`${s.url}/operator/signin`)
    await page.getByLabel('Name').fill(name)
    await page.getByLabel('Password').fill(PASSWORD)
    await Promise.all([page.waitForURL(`${s.url}/operator`), page.getByRole('button', { name: 'Log in' }).click()])
    return page
  }
  const coach = await signIn('coachcarla')
  await coach.goto(`${s.url}/operator/rooms`)
  await coach.getByLabel('Room name').fill('Row 1')
  await Promise.all([coach.waitForURL(/\/operator\/rooms/), coach.getByRole('button', { name: 'Create room' }).click()])
  t.equal(await coach.getByRole('heading', { name: 'Row 1' }).count(), 1, 'the coach created a room')
  const refused = await coach.goto(`${s.url}/operator/users`)
  t.equal(refused?.status(), 403)

  const owner = await signIn('ownerolga')
  await owner.goto(`${s.url}/operator/operators`)
  await owner.getByLabel('Name').fill('coachbeni')
  await owner.getByLabel('Password (10 characters or more)').fill(PASSWORD)
  await Promise.all([owner.waitForURL(/done=added/), owner.getByRole('button', { name: 'Add operator' }).click()])
  t.same((await s.admin('GET', '/admin/operators')).operators.map((o: { name: string, role: string }) => `${o.name}:${o.role}`).sort(), ['coachbeni:coach', 'coachcarla:coach', 'ownerolga:owner'])
  await Promise.all([owner.waitForURL(/done=removed/), owner.getByRole('button', { name: 'Remove coachbeni' }).click()])
  t.equal((await s.admin('GET', '/admin/operators')).operators.length, 2)
})
