// The front desk from a terminal: `hr-relay admin user add --invite | update | invite | list --search` and
// `device nearby`, against a running service, each command through the CLI's entry function in this process
// (test/helpers/cli.ts runMain). The admin API they call is the one the /operator pages' actions share
// (api/http/admin-members.ts); the invitation link printed works once, on the page a member opens.
import t from 'tap'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import yauzl from 'yauzl'
import { runMain } from '../helpers/cli.ts'
import { startTestService } from '../helpers/service.ts'
import { Browser, csrfOf } from '../api/oauth/helpers.ts'

const run = runMain

/** One file of a ZIP. */
async function entryOf (file: string, name: string): Promise<Buffer | undefined> {
  const zip = await new Promise<yauzl.ZipFile>((resolve, reject) => { yauzl.open(file, { lazyEntries: true }, (err, z) => { if (err !== null || z === undefined) reject(err ?? new Error('no zip')); else resolve(z) }) })
  return await new Promise((resolve, reject) => {
    zip.on('entry', (entry: yauzl.Entry) => {
      if (entry.fileName !== name) { zip.readEntry(); return }
      zip.openReadStream(entry, (err, stream) => {
        if (err !== null || stream === undefined) { reject(err ?? new Error('no stream')); return }
        const chunks: Buffer[] = []
        stream.on('data', (c: Buffer) => chunks.push(c))
        stream.on('error', reject)
        stream.on('end', () => { zip.close(); resolve(Buffer.concat(chunks)) })
      })
    })
    zip.on('end', () => { resolve(undefined) })
    zip.on('error', reject)
    zip.readEntry()
  })
}

t.test('user add --invite prints a link that works once; update, invite and list --search', async t => {
  const svc = await startTestService(t)
  const dir = ['--data-dir', svc.dataDir]

  const both = await run(['admin', 'user', 'add', 'nina', '--password', 'long enough', '--invite', ...dir])
  t.equal(both.code, 2)
  t.match(both.stderr, /give either --password or --invite/)
  const neither = await run(['admin', 'user', 'add', 'nina', ...dir])
  t.equal(neither.code, 2)

  const added = await run(['admin', 'user', 'add', 'nina', '--invite', '--display-name', 'Nina Sol', '--age', '31', '--sex', 'female', '--weight-kg', '58.5', ...dir, '--json'])
  t.equal(added.code, 0, added.stderr)
  const body = JSON.parse(added.stdout) as { profile_id: string, username: string, invitation_url: string, expires_at: number }
  t.same(Object.keys(body).sort(), ['expires_at', 'invitation_url', 'profile_id', 'username'])
  t.equal(body.username, 'nina')
  t.match(body.invitation_url, new RegExp(`^${svc.url}/me/invitation/${body.profile_id}\\.[A-Za-z0-9_-]{43}$`))
  const stored = await svc.service.services.users.byUsername('nina')
  t.equal(stored?.invitation?.expires_at, body.expires_at)
  t.equal(stored?.invitation?.expires_at, (stored?.invitation?.created_at ?? 0) + 7 * 86_400_000, 'a link works for 7 days')
  t.notOk(JSON.stringify(stored).includes(body.invitation_url.split('.').at(-1) ?? 'x'), 'the secret itself is not stored')
  const listed = await svc.admin('GET', '/admin/users')
  t.same(Object.keys(listed.users[0].invitation).sort(), ['created_at', 'expires_at'], 'the admin API shows the times, not the digest')

  // The member opens the link and chooses a password; then signs in with it.
  const path = new URL(body.invitation_url).pathname
  const member = new Browser(svc.url)
  const form = await member.get(path)
  t.equal(form.status, 200)
  t.match(form.text, /Welcome, <strong>nina<\/strong>/)
  const short = await member.post(path, { csrf: csrfOf(form.text), password: 'short', confirm: 'short' })
  t.equal(short.status, 400)
  t.match(short.text, /The password is 8 to 1024 characters\. Your password was not set\./)
  const differ = await member.post(path, { csrf: csrfOf(form.text), password: 'nina-chose-this', confirm: 'nina-chose-that' })
  t.equal(differ.status, 400)
  t.match(differ.text, /The two passwords differ\./)
  const set = await member.post(path, { csrf: csrfOf(form.text), password: 'nina-chose-this', confirm: 'nina-chose-this' })
  t.equal(set.status, 200)
  t.match(set.text, /Your password is set\./)
  t.ok(await svc.service.services.users.authenticate('nina', 'nina-chose-this'), 'the password works')
  const reused = await new Browser(svc.url).get(path)
  t.equal(reused.status, 410)
  t.match(reused.text, /This invitation link was already used\./)
  const again = await member.post(path, { csrf: csrfOf(form.text), password: 'someone-else-1', confirm: 'someone-else-1' })
  t.equal(again.status, 410, 'a used link sets no password')
  t.notOk(await svc.service.services.users.authenticate('nina', 'someone-else-1'))

  // A new link replaces the one before.
  const first = JSON.parse((await run(['admin', 'user', 'invite', 'nina', ...dir, '--json'])).stdout) as { invitation_url: string }
  const second = await run(['admin', 'user', 'invite', 'nina', ...dir])
  t.equal(second.code, 0, second.stderr)
  t.match(second.stdout, /^invitation link \(works once, until \d{4}-\d\d-\d\dT[\d:.]+Z; give it only to the member\):\nhttp:\/\/127\.0\.0\.1:\d+\/me\/invitation\/\S+\n$/)
  const replaced = await new Browser(svc.url).get(new URL(first.invitation_url).pathname)
  t.equal(replaced.status, 404)
  t.match(replaced.text, /This invitation link is not valid\. It may have been replaced by a newer one\./)
  t.equal((await new Browser(svc.url).get('/me/invitation/not-a-token')).status, 404)
  t.equal((await run(['admin', 'user', 'invite', 'nobody', ...dir])).code, 1)

  // update: set, clear, refuse what the schema refuses.
  const update = await run(['admin', 'user', 'update', 'nina', '--max-heart-rate', '186', '--weight-kg', '59', '--clear', 'display-name', ...dir])
  t.equal(update.code, 0, update.stderr)
  t.equal(update.stdout, 'updated nina\nage: 31\nweight_kg: 59\nsex: female\nmax_heart_rate: 186\n')
  const after = await svc.service.services.users.byUsername('nina')
  t.same([after?.display_name, after?.max_heart_rate, after?.weight_kg, after?.age], [undefined, 186, 59, 31])
  const nothing = await run(['admin', 'user', 'update', 'nina', ...dir])
  t.equal(nothing.code, 2)
  t.match(nothing.stderr, /nothing to change/)
  const badClear = await run(['admin', 'user', 'update', 'nina', '--clear', 'username', ...dir])
  t.equal(badClear.code, 2)
  const tooHigh = await run(['admin', 'user', 'update', 'nina', '--max-heart-rate', '300', ...dir])
  t.equal(tooHigh.code, 1)
  t.match(tooHigh.stderr, /PATCH \/admin\/users\/nina failed: HTTP 400/)
  t.equal((await svc.service.services.users.byUsername('nina'))?.max_heart_rate, 186, 'nothing changed')
  // Behind the admin token, as the rest of /admin.
  for (const [method, path] of [['PATCH', '/admin/users/nina'], ['POST', '/admin/users/nina/invitation'], ['GET', '/admin/devices/nearby']] as const) {
    const res = await fetch(svc.url + path, { method, headers: { 'content-type': 'application/json' }, ...(method === 'GET' ? {} : { body: '{"age":30}' }) })
    t.same([res.status, (await res.json() as { error_code: number }).error_code], [403, 7009], `${method} ${path} without the admin token`)
  }
  const noOne = await run(['admin', 'user', 'update', 'nobody', '--age', '30', ...dir])
  t.equal(noOne.code, 1)
  t.match(noOne.stderr, /HTTP 404/)

  await svc.user('marta', { display_name: 'Marta Nilsen' })
  await svc.user('olle')
  const search = await run(['admin', 'user', 'list', '--search', 'NIL', ...dir])
  t.equal(search.code, 0, search.stderr)
  t.match(search.stdout, /^marta\t\S+\tpremium=none\n$/, 'matches the display name, case-insensitive')
  const byName = await run(['admin', 'user', 'list', '--search', 'ni', ...dir, '--json'])
  t.same((JSON.parse(byName.stdout).users as Array<{ username: string }>).map(u => u.username), ['marta', 'nina'])
  const all = await run(['admin', 'user', 'list', ...dir, '--json'])
  t.equal(JSON.parse(all.stdout).users.length, 3)

  // The member's export shows the invitation's times, never its digest; the erasure takes it with the account.
  const out = await mkdtemp(join(tmpdir(), 'hr-relay-desk-'))
  t.teardown(async () => { await rm(out, { recursive: true, force: true }) })
  const file = join(out, 'nina.zip')
  const exported = await run(['admin', 'user', 'export', 'nina', '--out', file, ...dir])
  t.equal(exported.code, 0, exported.stderr)
  const profile = JSON.parse((await entryOf(file, 'profile.json'))?.toString('utf8') ?? '{}')
  const held = await svc.service.services.users.byUsername('nina')
  t.same(profile.invitation, { created_at: held?.invitation?.created_at, expires_at: held?.invitation?.expires_at })
  t.notOk(JSON.stringify(profile).includes(held?.invitation?.digest ?? 'x'), 'no digest in the export')
  const latest = new URL(second.stdout.trim().split('\n').at(-1) ?? '').pathname
  t.equal((await new Browser(svc.url).get(latest)).status, 200, 'the latest link works before the erasure')
  await svc.admin('DELETE', '/admin/users/nina')
  const gone = await new Browser(svc.url).get(latest)
  t.equal(gone.status, 404, 'an erased member\'s link leads nowhere')
})

t.test('device nearby: strongest signal first, the clearly nearest marked, signal unknown last', async t => {
  const svc = await startTestService(t)
  const dir = ['--data-dir', svc.dataDir]
  const now = Date.now()
  const devices = svc.service.services.devices
  devices.sighting({ device_id: 'C8:2F:9A:00:00:01', source: 'ble', name: 'Far strap', rssi: -82, connected: false, seen_at: now })
  devices.sighting({ device_id: 'ant:4242', source: 'ant', name: 'ANT+ strap 4242', connected: true, seen_at: now })
  devices.sighting({ device_id: 'C8:2F:9A:00:00:02', source: 'ble', name: 'Held strap', rssi: -48, connected: false, seen_at: now })
  const human = await run(['admin', 'device', 'nearby', ...dir])
  t.equal(human.code, 0, human.stderr)
  t.equal(human.stdout, [
    '* nearest\tC8:2F:9A:00:00:02\t-48 dBm\tHeld strap\tnot connected, via ble',
    '         \tC8:2F:9A:00:00:01\t-82 dBm\tFar strap\tnot connected, via ble',
    '         \tant:4242\tsignal unknown\tANT+ strap 4242\tconnected, via ant'
  ].join('\n') + '\n')
  const json = JSON.parse((await run(['admin', 'device', 'nearby', ...dir, '--json'])).stdout)
  t.equal(json.nearest, 'C8:2F:9A:00:00:02')
  t.same(json.devices.map((d: { device_id: string, nearest: boolean }) => [d.device_id, d.nearest]), [['C8:2F:9A:00:00:02', true], ['C8:2F:9A:00:00:01', false], ['ant:4242', false]])
})
