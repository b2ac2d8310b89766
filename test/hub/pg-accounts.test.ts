// The PostgreSQL users, devices, clients and tokens (hub/store/pg-users.ts, pg-devices.ts, pg-clients.ts,
// pg-tokens.ts) on a real PostgreSQL: their part of the store conformance suite, and what hub instances sharing one
// database see of each other's writes (two pools and two notification connections on one database).
import t from 'tap'
import type { Test } from 'tap'
import pg from 'pg'
import { migrate } from '../../hub/migrate.ts'
import { PgEvents } from '../../hub/store/pg-events.ts'
import { runOps } from '../../hub/store/pg-op.ts'
import { PgUsers } from '../../hub/store/pg-users.ts'
import { PgDevices } from '../../hub/store/pg-devices.ts'
import { PgClients } from '../../hub/store/pg-clients.ts'
import { PgTokens } from '../../hub/store/pg-tokens.ts'
import { DeviceExistsError } from '../../api/store/devices.ts'
import type { IssueRequest, Stores, WriteOp } from '../../api/store/types.ts'
import { storeConformance } from '../conformance/store.ts'
import { Postgres } from '../helpers/postgres.ts'
import { TcpProxy } from '../helpers/tcp-proxy.ts'

const server = await Postgres.create(t)
await server.start()
let databases = 0

const P = 'profile-p'
const HOUR = 3_600_000
const accessOnly: IssueRequest = { client_id: 'c1', profile_id: P, scopes: ['data:heart_rate:read'], flow: 'authorization_code', expires_in: 3600 }
const withRefresh: IssueRequest = { ...accessOnly, refresh_expires_in: 86_400 }
const NOT_FOUND = { ok: false, reason: 'not_found' }

/** One hub instance's account stores: a pool and a notification connection of its own. */
interface Instance {
  pool: pg.Pool
  events: PgEvents
  users: PgUsers
  devices: PgDevices
  clients: PgClients
  tokens: PgTokens
  close (): Promise<void>
}

async function database (): Promise<string> {
  return await server.createDatabase(`accounts_${++databases}`)
}

/** Opens an instance on `url`, as openPgStores does; its notifications come through `eventsUrl`. */
async function instance (t: Test, url: string, eventsUrl = url): Promise<Instance> {
  const pool = new pg.Pool({ connectionString: url, max: 4 })
  const events = new PgEvents(eventsUrl)
  await migrate(pool)
  await events.start()
  const users = new PgUsers(pool, { events })
  const devices = new PgDevices(pool, { events })
  const clients = new PgClients(pool)
  const tokens = new PgTokens(pool, { events })
  await users.load()
  await devices.load()
  await tokens.load()
  let open = true
  const close = async (): Promise<void> => {
    if (!open) return
    open = false
    await events.stop()
    await pool.end()
  }
  t.teardown(close)
  return { pool, events, users, devices, clients, tokens, close }
}

/** Readings are not this test's: a bundle's readings and reading log that fail when used. */
const noReadings = new Proxy({}, { get () { throw new Error('readings are not part of this test') } })

function bundle (i: Instance): Stores {
  return {
    users: i.users,
    devices: i.devices,
    clients: i.clients,
    tokens: i.tokens,
    batch: async (ops: WriteOp[]) => { await runOps(i.pool, ops) },
    readings: noReadings as Stores['readings'],
    readingLog: noReadings as Stores['readingLog'],
    close: i.close
  }
}

/**
 * Subscribes to `channel` (resolves once subscribed) and answers a function that waits for the next notification
 * with this payload. (Not the promise itself: an async function's promise would adopt it and wait for it.)
 */
async function notified (events: PgEvents, channel: string, payload: string): Promise<() => Promise<void>> {
  let heard!: () => void
  const done = new Promise<void>(resolve => { heard = resolve })
  const off = await events.listen(channel, p => { if (p === payload) { off(); heard() } })
  return async () => { await done }
}

/** Runs a write of `key` and resolves once every instance heard its notification and holds the change in memory. */
async function everywhere<T> (instances: Instance[], channel: 'hr_users' | 'hr_devices', key: string, write: () => Promise<T>): Promise<T> {
  const heard = await Promise.all(instances.map(async i => await notified(i.events, channel, key)))
  const out = await write()
  await Promise.all(heard.map(async wait => { await wait() }))
  await Promise.all(instances.map(async i => { await i.users.settled(); await i.devices.settled() }))
  return out
}

async function count (pool: pg.Pool, sql: string, params: unknown[]): Promise<number> {
  return (await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${sql}`, params)).rows[0]?.n ?? -1
}

// The conformance suite's subtests of these four stores; the readings store is another file's.
const ACCOUNTS = /^(users|devices|clients|tokens):/
const accountsOnly = { test: (name: string, fn: (t: Test) => Promise<void>) => ACCOUNTS.test(name) ? t.test(name, fn) : undefined } as unknown as Test
storeConformance(accountsOnly, async () => {
  const url = await database()
  let current: Instance | null = await instance(t, url)
  return {
    get stores () {
      if (current === null) throw new Error('closed')
      return bundle(current)
    },
    async reopen () {
      await current?.close()
      current = await instance(t, url)
      return bundle(current)
    },
    async destroy () {
      await current?.close()
      current = null
    }
  }
})

t.test('close and reopen keep users, pairings, clients and tokens', async t => {
  const url = await database()
  const before = await instance(t, url)
  const T0 = Date.now()
  const user = await before.users.create({ username: 'dora', password: 'pw' }, T0)
  await before.users.update(user.profile_id, u => ({ ...u, ingestion_paused: { since: T0, until: null } }))
  const device = await before.devices.add({ device_id: 'dev-9', profile_id: user.profile_id, kind: 'mqtt' }, T0)
  const client = await before.clients.create({ name: 'Kept', redirect_uris: ['https://kept.example/cb'] }, T0)
  const token = await before.tokens.issue({ client_id: client.client.client_id, profile_id: user.profile_id, scopes: ['data:heart_rate:read'], flow: 'manual', expires_in: 3600 }, T0)
  await before.close()

  const after = await instance(t, url)
  t.strictSame(await after.users.byUsername('dora'), { ...user, ingestion_paused: { since: T0, until: null } }, 'users')
  t.equal(after.users.ingestionPaused(user.profile_id, T0 + HOUR), true, 'member switches are loaded on open')
  t.equal(after.devices.ownerOf('dev-9', 'mqtt'), user.profile_id, 'pairings are loaded on open')
  t.equal((await after.devices.verifyMqtt('dev-9', device.mqtt_password ?? ''))?.device_id, 'dev-9', 'device credentials')
  t.strictSame(await after.clients.get(client.client.client_id), client.client, 'clients')
  t.match(await after.tokens.lookup(token.access_token, T0 + 1000), { ok: true, token: { client_id: client.client.client_id, profile_id: user.profile_id, flow: 'manual' } }, 'tokens')
})

t.test('a token revoked on one instance stops working on every instance, and each tells its listeners once', async t => {
  const url = await database()
  const a = await instance(t, url)
  const b = await instance(t, url)
  const toldA: string[][] = []
  const toldB: string[][] = []
  a.tokens.onRevoked(d => { toldA.push([...d]) })
  b.tokens.onRevoked(d => { toldB.push([...d]) })
  const issued = await a.tokens.issue(accessOnly)
  const found = await b.tokens.lookup(issued.access_token)
  t.equal(found.ok, true, 'issued on A, found on B')
  const digest = found.ok ? found.digest : ''
  const toldOnB = new Promise<ReadonlySet<string>>(resolve => { const off = b.tokens.onRevoked(d => { off(); resolve(d) }) })
  const ownNotification = await notified(a.events, 'hr_tokens_revoked', JSON.stringify([digest]))

  t.equal(await a.tokens.revoke(issued.access_token), true)
  t.same(toldA, [[digest]], 'A tells its listeners once the deletion committed')
  t.same([...await toldOnB], [digest], 'B tells its listeners from the notification')
  t.same(await b.tokens.lookup(issued.access_token), NOT_FOUND, 'B answers not found')
  t.equal(b.tokens.cachedLookup(issued.access_token), undefined, 'nothing is answered from a cache')
  t.equal(await b.tokens.isLive(digest), false)
  await ownNotification()
  t.same(toldA, [[digest]], 'A does not tell its own notification again')
  t.same(toldB, [[digest]])
})

t.test('two instances rotating one refresh token at once: one rotation, one replay that revokes the family', async t => {
  const url = await database()
  const a = await instance(t, url)
  const b = await instance(t, url)
  const outcomes: string[][] = []
  const survivors: string[] = []
  for (let i = 0; i < 8; i++) {
    const issued = await a.tokens.issue(withRefresh)
    const results = await Promise.all([a, b].map(async x => await x.tokens.rotate(issued.refresh_token ?? '', 'c1', 3600, 86_400)))
    outcomes.push(results.map(r => r.ok ? 'ok' : r.reason).sort())
    for (const r of results) if (r.ok && (await b.tokens.lookup(r.issued.access_token)).ok) survivors.push(r.issued.access_token)
  }
  t.same(outcomes, Array(8).fill(['ok', 'replayed']), 'always exactly one rotation')
  t.same(survivors, [], 'the replay revoked the pair the rotation issued')
  t.equal(await count(a.pool, 'token_families', []), 0)
})

t.test('a rotation and a revocation of its family at once on two instances leave nothing of the family', async t => {
  const url = await database()
  const a = await instance(t, url)
  const b = await instance(t, url)
  const left: Array<{ ok: boolean, tokens: number }> = []
  for (let i = 0; i < 8; i++) {
    const issued = await a.tokens.issue(withRefresh)
    const [rotated] = await Promise.all([a.tokens.rotate(issued.refresh_token ?? '', 'c1', 3600, 86_400), b.tokens.revokeFamily(issued.family)])
    const tokens = await count(a.pool, 'access_tokens WHERE family = $1', [issued.family]) + await count(a.pool, 'refresh_tokens WHERE family = $1', [issued.family])
    left.push({ ok: rotated.ok && (await a.tokens.lookup(rotated.issued.access_token)).ok, tokens })
  }
  t.same(left, Array(8).fill({ ok: false, tokens: 0 }), 'a pair rotated beside the revocation is revoked with it')
  t.same(await a.tokens.grantedClients(P), [])
})

t.test('a member\'s switches changed on one instance are seen synchronously on every instance', async t => {
  const url = await database()
  const a = await instance(t, url)
  const b = await instance(t, url)
  const both = [a, b]
  const user = await a.users.create({ username: 'erin', password: 'pw' })
  const pid = user.profile_id
  await everywhere(both, 'hr_users', pid, async () => await a.users.update(pid, u => u))
  t.equal(b.users.ingestionPaused(pid), false)

  const now = Date.now()
  await everywhere(both, 'hr_users', pid, async () => {
    await a.users.update(pid, u => ({ ...u, ingestion_paused: { since: now, until: null } }))
    t.equal(a.users.ingestionPaused(pid), true, 'at once on the instance that wrote it')
  })
  t.equal(b.users.ingestionPaused(pid), true, 'on the other one after the notification')
  t.same(b.users.ingestionPause(pid), { paused: true, until: null })
  t.equal(b.users.roomHidden(pid), true)

  const heardOnB: Array<boolean | undefined> = []
  b.users.onHomeAssistantChanged(u => { heardOnB.push(u.home_assistant) })
  await everywhere(both, 'hr_users', pid, async () => await a.users.giveConsent(pid, 'v1', 'member'))
  await everywhere(both, 'hr_users', pid, async () => await a.users.setHomeAssistant(pid, true))
  t.equal(b.users.consentVersion(pid), 'v1', 'a consent given on A')
  t.same(heardOnB, [true], 'a Home Assistant opt-in on A is told to B\'s listeners')

  // The member's erasure on B: A forgets them, and no row is left.
  await everywhere(both, 'hr_users', pid, async () => await b.users.remove(pid))
  t.equal(a.users.ingestionPaused(pid), false)
  t.equal(a.users.consentVersion(pid), undefined)
  t.equal(await a.users.get(pid), undefined)
  t.equal(await count(a.pool, 'users WHERE profile_id = $1', [pid]), 0)
  t.equal((await b.users.create({ username: 'Erin', password: 'pw2' })).username, 'Erin', 'the username is free again')
})

t.test('a device paired on one instance is owned on every instance; an unpairing is told once on each', async t => {
  const url = await database()
  const a = await instance(t, url)
  const b = await instance(t, url)
  const both = [a, b]
  const removedA: string[] = []
  const removedB: string[] = []
  a.devices.onRemoved(d => { removedA.push(d.device_id) })
  b.devices.onRemoved(d => { removedB.push(d.device_id) })
  const added = await everywhere(both, 'hr_devices', 'gym-7', async () => await a.devices.add({ device_id: 'gym-7', profile_id: P, kind: 'mqtt' }))
  t.equal(b.devices.ownerOf('gym-7', 'mqtt'), P, 'owned on B')
  t.same(b.devices.list().map(d => d.device_id), ['gym-7'])
  t.equal((await b.devices.verifyMqtt('gym-7', added.mqtt_password ?? ''))?.device_id, 'gym-7', 'its MQTT credentials work on B')
  await t.rejects(b.devices.add({ device_id: 'gym-7', profile_id: 'profile-q' }), DeviceExistsError, 'and it cannot be paired again there')

  await everywhere(both, 'hr_devices', 'gym-7', async () => await b.devices.remove('gym-7'))
  t.same([removedA, removedB], [['gym-7'], ['gym-7']], 'each instance\'s listeners heard the unpairing once')
  t.equal(a.devices.ownerOf('gym-7'), undefined)
  t.equal(await a.devices.verifyMqtt('gym-7', added.mqtt_password ?? ''), undefined, 'the credentials ended')
})

t.test('after its notification connection drops, an instance catches up with what it missed', async t => {
  const proxy = await TcpProxy.create(t, server.port)
  const url = await database()
  const a = await instance(t, url)
  const pid = (await a.users.create({ username: 'finn', password: 'pw' })).profile_id
  const b = await instance(t, url, url.replace(`:${server.port}/`, `:${proxy.port}/`))
  const issued = await a.tokens.issue({ ...accessOnly, profile_id: pid })
  const found = await b.tokens.lookup(issued.access_token)
  const digest = found.ok ? found.digest : ''
  const reconnected = new Promise<void>(resolve => { const off = b.events.onReconnect(() => { off(); resolve() }) })
  const told = new Promise<ReadonlySet<string>>(resolve => { const off = b.tokens.onRevoked(d => { off(); resolve(d) }) })

  proxy.cut()
  t.equal(await a.tokens.revoke(issued.access_token), true)
  await a.users.update(pid, u => ({ ...u, ingestion_paused: { since: Date.now(), until: null } }))
  await a.devices.add({ device_id: 'strap-x', profile_id: pid, kind: 'ble' })
  proxy.restore()
  await reconnected
  t.same([...await told], [digest], 'a revocation committed while B could not hear it is told after B reconnects')
  await b.users.settled()
  await b.devices.settled()
  t.equal(b.users.ingestionPaused(pid), true, 'member switches are reloaded')
  t.equal(b.devices.ownerOf('strap-x'), pid, 'pairings are reloaded')
})

t.test('a member\'s erasure leaves no token, grant or account row', async t => {
  const url = await database()
  const a = await instance(t, url)
  const now = Date.now()
  await a.tokens.issue({ ...withRefresh, scopes: ['data:heart_rate:read'] }, now - 1000)
  await a.tokens.issue({ ...accessOnly, scopes: ['data:statistics:read'] }, now)
  await a.tokens.issue({ ...accessOnly, client_id: 'c3' }, now)
  await a.tokens.issue({ ...accessOnly, profile_id: 'profile-q' }, now)
  t.same(await a.tokens.grantsOf(P, now), [
    { client_id: 'c1', scopes: ['data:heart_rate:read', 'data:statistics:read'], last_issued_at: now },
    { client_id: 'c3', scopes: ['data:heart_rate:read'], last_issued_at: now }
  ], 'what each app holds')
  t.equal(await a.tokens.revokeAllOf(P), 4, 'three access tokens and a refresh token')
  for (const table of ['access_tokens', 'refresh_tokens', 'token_families']) {
    t.equal(await count(a.pool, `${table} WHERE profile_id = $1`, [P]), 0, `no ${table} row of the member`)
  }
  t.equal(await count(a.pool, 'access_tokens WHERE profile_id = $1', ['profile-q']), 1, 'another member\'s token stays')
  t.same(await a.tokens.grantedClients(P), [])
})
