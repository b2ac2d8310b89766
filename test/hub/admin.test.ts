// `hr-relay hub admin …` as an operator runs it: a separate process per command, on a real PostgreSQL in a
// temporary cluster, with no hub instance running. Each command's answer, what it leaves in the database (digests,
// never a secret), the revision of the chain's membership it bumps, and its refusals: one line, no stack, the
// documented exit code.
import t, { type Test } from 'tap'
import { createHash } from 'node:crypto'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { Postgres } from '../helpers/postgres.ts'
import { freePort } from '../helpers/processes.ts'
import { runCli, type CliResult } from '../helpers/cli.ts'

const env = { ...process.env, HR_RELAY_FROM_SOURCE: '1' }
const sha256 = (s: string): string => createHash('sha256').update(s).digest('hex')
const GUID = /^[0-9a-f]{8}-(?:[0-9a-f]{4}-){3}[0-9a-f]{12}$/

const server = await Postgres.create(t)
await server.start()
const dbUrl = await server.createDatabase('hub')
const dir = await mkdtemp(join(tmpdir(), 'hr-relay-hubadmin-'))
t.teardown(async () => { await rm(dir, { recursive: true, force: true }) })
const config = join(dir, 'hub.json')
// The broker is never contacted by the admin commands: a closed port proves it.
await writeFile(config, JSON.stringify({ postgres: { url: dbUrl }, mqtt: { url: `mqtt://127.0.0.1:${await freePort()}`, client_id: 'hub-1', topic_root: 'chain/v1' } }))
const db = new pg.Client({ connectionString: dbUrl })
await db.connect()
t.teardown(async () => { await db.end() })

const admin = async (...args: string[]): Promise<CliResult> => await runCli(['hub', 'admin', '--config', config, ...args], env)
async function json<T> (...args: string[]): Promise<T> {
  const r = await admin(...args, '--json')
  if (r.code !== 0) throw new Error(`hub admin ${args.join(' ')} exited ${String(r.code)}: ${r.stderr}${r.stdout}`)
  return JSON.parse(r.stdout) as T
}
const revision = async (): Promise<number> => Number((await db.query<{ revision: string }>('SELECT revision FROM chain_revision')).rows[0]?.revision)

/** A refusal as an operator sees it: the exit code, one line on stderr naming the problem, no stack, nothing on stdout. */
function refusal (t: Test, r: CliResult, code: number, message: RegExp | string, what: string): void {
  t.equal(r.code, code, `${what}: exit code ${code}`)
  t.equal(r.stdout, '', `${what}: nothing on stdout`)
  t.match(r.stderr, /^hr-relay hub admin: [^\n]+\n$/, `${what}: one line on stderr`)
  t.match(r.stderr, message, `${what}: says why`)
  t.notMatch(r.stderr, /\n\s+at /, `${what}: no stack trace`)
}

let annId = ''
let strapPassword = ''

t.test('user add creates the member (the schema is migrated by the command itself), and bumps the revision', async t => {
  const added = await json<{ profile_id: string, username: string }>('user', 'add', 'ann', '--password', 'correct horse', '--display-name', 'Ann', '--age', '34', '--sex', 'female', '--max-heart-rate', '188')
  t.match(added, { username: 'ann', profile_id: GUID })
  annId = added.profile_id
  const row = (await db.query<{ record: { password_hash: string, display_name: string } }>('SELECT record FROM users WHERE profile_id = $1', [annId])).rows[0]
  t.match(row?.record, { display_name: 'Ann', password_hash: /^scrypt\$/ }, 'the password is stored as its scrypt hash')
  t.notMatch(JSON.stringify(row), 'correct horse')
  const before = await revision()
  await json('user', 'add', 'bob', '--password', 'another secret')
  t.equal(await revision(), before + 1, 'a new member is a new revision')
})

t.test('user list', async t => {
  const listed = await json<{ users: Array<Record<string, unknown>> }>('user', 'list')
  t.same(listed.users.map(u => u.username), ['ann', 'bob'])
  t.notOk(listed.users.some(u => 'password_hash' in u), 'no password hash in the list')
  const human = await admin('user', 'list')
  t.equal(human.code, 0)
  t.match(human.stdout, new RegExp(`^ann\\t${annId}\\tpremium=none\\nbob\\t`))
})

t.test('token issue prints the token once; the hub keeps its digest', async t => {
  const issued = await json<{ access_token: string, expires_in: number, scope: string, token_type: string }>('token', 'issue', 'ann', '--scope', 'data:heart_rate:read profile:read', '--expires-in', '3600')
  t.match(issued, { access_token: GUID, expires_in: 3600, scope: 'data:heart_rate:read profile:read', token_type: 'bearer' })
  const rows = (await db.query<{ digest: string, profile_id: string, flow: string }>('SELECT digest, profile_id, flow FROM access_tokens')).rows
  t.same(rows, [{ digest: sha256(issued.access_token), profile_id: annId, flow: 'manual' }])
})

t.test('client add prints the secret once; the hub keeps its hash', async t => {
  const added = await json<{ client_id: string, client_secret: string, name: string, redirect_uris: string[] }>('client', 'add', '--name', 'Team app', '--redirect-uri', 'https://app.example/cb', '--redirect-uri', 'http://127.0.0.1/cb')
  t.match(added, { client_id: GUID, client_secret: /^[\w-]{40,}$/, name: 'Team app', redirect_uris: ['https://app.example/cb', 'http://127.0.0.1/cb'] })
  const record = (await db.query<{ record: { secret_hash: string } }>('SELECT record FROM clients WHERE client_id = $1', [added.client_id])).rows[0]?.record
  t.match(record?.secret_hash, /^scrypt\$/)
  t.notMatch(JSON.stringify(record), added.client_secret)
  const human = await admin('client', 'add', '--name', 'Public app', '--redirect-uri', 'myapp:/cb', '--public')
  t.equal(human.code, 0)
  t.match(human.stdout, /^client_id: [0-9a-f-]{36}\nname: Public app\nredirect_uris: \["myapp:\/cb"\]\n$/, 'a public client has no secret')
})

t.test('device pair --kind mqtt prints the credentials once; the hub keeps a digest', async t => {
  const before = await revision()
  const paired = await json<{ device_id: string, profile_id: string, kind: string, mqtt_username: string, mqtt_password: string }>('device', 'pair', 'ann', '--kind', 'mqtt', '--device-id', 'strap-1')
  t.match(paired, { device_id: 'strap-1', profile_id: annId, kind: 'mqtt', mqtt_username: 'strap-1', mqtt_password: /^[\w-]{32}$/ })
  strapPassword = paired.mqtt_password
  const record = (await db.query<{ record: Record<string, unknown> }>('SELECT record FROM devices WHERE device_id = $1', ['strap-1'])).rows[0]?.record
  t.equal(record?.mqtt_password_hash, `sha256$${sha256(strapPassword)}`)
  t.notMatch(JSON.stringify(record), strapPassword)
  t.equal(await revision(), before + 1, 'a pairing is a new revision')
  const human = await admin('device', 'pair', 'bob', '--kind', 'ble', '--device-id', 'aa:bb:cc:dd:ee:ff', '--name', 'Polar H10')
  t.equal(human.code, 0)
  t.equal(human.stdout, `paired AA:BB:CC:DD:EE:FF (ble) with profile ${(await json<{ users: Array<{ profile_id: string }> }>('user', 'list')).users[1]?.profile_id ?? ''}\n`, 'a strap without credentials')
})

t.test('box add registers a box and says where it reads the members', async t => {
  const added = await json<{ box_id: string, created_at: number, upstream_prefix: string, members_topic: string }>('box', 'add', 'gym-a')
  t.match(added, { box_id: 'gym-a', upstream_prefix: 'chain/v1/boxes/gym-a', members_topic: 'chain/v1/boxes/gym-a/members' })
  t.same((await db.query('SELECT box_id FROM boxes')).rows, [{ box_id: 'gym-a' }])
  t.same((await json<{ boxes: Array<{ box_id: string }> }>('box', 'list')).boxes.map(b => b.box_id), ['gym-a'])
})

t.test('refusals: one line, no stack, exit code 1 (the data refuses) or 2 (the command line)', async t => {
  const [duplicate, unknownUser, badScope, noConfig, unknownCommand, badBox, boxTwice, pairedTwice, caseTwin, shortPassword, jsonError] = await Promise.all([
    admin('user', 'add', 'ANN', '--password', 'long enough'),
    admin('token', 'issue', 'carol', '--scope', 'profile:read'),
    admin('token', 'issue', 'ann', '--scope', 'profile:read everything'),
    runCli(['hub', 'admin', 'user', 'list'], env),
    admin('user', 'rename', 'ann'),
    admin('box', 'add', 'gym/a'),
    admin('box', 'add', 'gym-a'),
    admin('device', 'pair', 'bob', '--kind', 'mqtt', '--device-id', 'strap-1'),
    admin('device', 'pair', 'bob', '--kind', 'mqtt', '--device-id', 'STRAP-1'),
    admin('user', 'add', 'dave', '--password', 'short'),
    admin('user', 'delete', 'carol', '--json')
  ])
  refusal(t, duplicate, 1, 'hr-relay hub admin: user ANN already exists\n', 'a username taken (case-insensitively)')
  refusal(t, unknownUser, 1, 'hr-relay hub admin: no user carol\n', 'an unknown user')
  refusal(t, badScope, 2, /--scope: scopes must be among: data:heart_rate:read /, 'an unknown scope')
  refusal(t, noConfig, 2, '--config is required', 'no --config')
  t.equal(unknownCommand.code, 2, 'an unknown command: exit code 2')
  t.match(unknownCommand.stderr, /^hr-relay hub admin: unknown command: user rename\nusage:\n {2}hr-relay hub admin --config FILE user add /)
  refusal(t, badBox, 2, '<box_id> must be 1 to 64 of A-Z a-z 0-9 . _ : -', 'a box id that cannot be a topic level')
  refusal(t, boxTwice, 1, 'box gym-a already exists', 'a box added twice')
  refusal(t, pairedTwice, 1, 'device strap-1 is already paired', 'a strap paired twice')
  refusal(t, caseTwin, 1, 'device STRAP-1 is already paired (as strap-1)', 'an id that differs in case alone (a box could not tell them apart)')
  refusal(t, shortPassword, 2, '--password must NOT have fewer than 8 characters', 'a short password')
  t.equal(jsonError.code, 1)
  t.same(JSON.parse(jsonError.stdout), { error: 'no user carol' }, '--json: the error as JSON on stdout')
})

t.test('PostgreSQL unreachable: one line naming postgres.url', async t => {
  const unreachable = join(dir, 'unreachable.json')
  await writeFile(unreachable, JSON.stringify({ postgres: { url: `postgres://postgres@127.0.0.1:${await freePort()}/hub` }, mqtt: { url: 'mqtt://127.0.0.1:1883', client_id: 'hub-1' } }))
  const missing = join(dir, 'missing.json')
  const [down, noFile] = await Promise.all([
    runCli(['hub', 'admin', '--config', unreachable, 'user', 'list'], env),
    runCli(['hub', 'admin', '--config', missing, 'user', 'list'], env)
  ])
  refusal(t, down, 1, /^hr-relay hub admin: cannot use PostgreSQL \(postgres\.url\): .*ECONNREFUSED/, 'PostgreSQL down')
  t.equal(noFile.code, 1)
  t.match(noFile.stderr, `hr-relay hub admin: ${missing} is not a valid hub configuration:\n  - cannot be read: ENOENT\n`)
})

t.test('user delete erases the member at the hub: account, tokens, pairings, readings; late readings are refused', async t => {
  await db.query("INSERT INTO readings (profile_id, measured_at, box_id, heart_rate, source) VALUES ($1, 1000, 'gym-a', 120, 'ble'), ($1, 2000, 'gym-b', 121, 'ble'), ($1, 3000, NULL, 122, 'http')", [annId])
  await db.query("INSERT INTO reading_latest (profile_id, measured_at, heart_rate, source) VALUES ($1, 3000, 122, 'http')", [annId])
  await db.query('INSERT INTO reading_rollups (profile_id, span, start, c, s, mn, mx, st, sh, f, fc, fh) VALUES ($1, 60000, 0, 3, 363, 120, 122, 2000, 242000, 1000, 0, 120)', [annId])
  const before = await revision()
  const erased = await json<{ username: string, erased: Record<string, number> }>('user', 'delete', 'ann')
  t.same(erased, { username: 'ann', erased: { account: 1, readings: 3, devices: 1, tokens: 1, oauth_codes: 0, sign_in_sessions: 0, tombstones: 2 } })
  t.ok(await revision() > before, 'the erasure is a new revision')
  const left = async (sql: string): Promise<number> => Number((await db.query<{ n: string }>(sql, [annId])).rows[0]?.n)
  t.equal(await left('SELECT count(*) AS n FROM users WHERE profile_id = $1'), 0, 'no account')
  t.equal(await left('SELECT count(*) AS n FROM devices WHERE profile_id = $1'), 0, 'no pairing')
  t.equal(await left('SELECT count(*) AS n FROM access_tokens WHERE profile_id = $1'), 0, 'no token')
  t.equal(await left('SELECT count(*) AS n FROM readings WHERE profile_id = $1'), 0, 'no reading')
  t.equal(await left('SELECT count(*) AS n FROM reading_rollups WHERE profile_id = $1'), 0, 'no rollup')
  t.equal(await left('SELECT count(*) AS n FROM reading_latest WHERE profile_id = $1'), 0, 'no latest record')
  t.same((await db.query("SELECT box_id FROM erasures WHERE profile_digest = sha256(convert_to($1, 'UTF8')) ORDER BY box_id", [annId])).rows, [{ box_id: 'gym-a' }, { box_id: 'gym-b' }],
    'a tombstone for the registered box and for the box her readings came from')
  t.same((await json<{ users: Array<{ username: string }> }>('user', 'list')).users.map(u => u.username), ['bob'])
  const again = await admin('user', 'delete', 'ann')
  refusal(t, again, 1, 'no user ann', 'an erased member')
  const human = await admin('user', 'add', 'ann', '--password', 'a new start')
  t.equal(human.code, 0, 'the username can be taken again, by a new profile')
  t.notMatch(human.stdout, annId)
})
