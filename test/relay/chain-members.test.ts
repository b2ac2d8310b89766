// A box in a chain receives the chain's members and pairings from the hub (docs/hub.md "How a box applies the
// chain's members"), against a real Mosquitto and a real box service with `chain` and `upstream` configured; this
// test publishes the hub's retained membership messages itself (firmware-protocol/upstream.ts membershipPayload).
// A chain member is created with the hub's profile id and password digest, signs in with the hub's password, and
// their MQTT device, paired with the hub's digest, streams at the box; a newer revision updates them (box-local
// state kept) and moves a strap; an older revision and a malformed message change nothing; a revision without
// the member erases them down to the bytes; after a restart with the broker down the box keeps its members and
// does not apply an older retained revision; a box cut off while a member is removed erases them once it is back.
// A box-local member, and one whose username the hub also gives a chain member, stay as they were throughout.
import t from 'tap'
import mqtt, { type MqttClient } from 'mqtt'
import pino from 'pino'
import { Writable } from 'node:stream'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { validateConfig } from '../../relay/config.ts'
import { startService, type RunningService } from '../../relay/main.ts'
import { hashSecret } from '../../api/store/secrets.ts'
import { membershipPayload, membersTopic, type ChainMember, type ChainMembership } from '../../firmware-protocol/upstream.ts'
import { Mosquitto } from '../helpers/mosquitto.ts'
import { TcpProxy } from '../helpers/tcp-proxy.ts'
import { filesContaining } from '../helpers/files-scan.ts'
import { until } from '../helpers/wait.ts'
import { Browser } from '../api/oauth/helpers.ts'
import { createHash } from 'node:crypto'
import { Store } from '../../api/store/db.ts'
import { Users } from '../../api/store/users.ts'
import { Devices } from '../../api/store/devices.ts'
import type { EraseUses } from '../../api/privacy/erase.ts'
import { applyRevision } from '../../relay/chain-revision.ts'

const ROOT = 'chain-members-test/v1'
const BOX = 'gym-a'
const ALICE = 'hub-alice-7f3c0e1a'
const BOB = 'hub-bob-2d9a44b0'
const ALICE_NAME = 'alicechain5e21'
const STRAP = 'C8:2F:9A:11:22:33'
const ESP = 'esp32-chain-1'

interface Tap { teardown (fn: () => unknown): void }

interface Box {
  service: RunningService
  /** Every log line of the service, parsed. */
  lines: Array<Record<string, unknown>>
  admin (method: string, path: string, body?: unknown): Promise<any>
  stop (): Promise<void>
}

/** A box service on `dataDir` whose upstream (and chain connection) goes to `url`; its log is kept for the test. */
async function startBox (t: Tap, dataDir: string, url: string): Promise<Box> {
  const lines: Array<Record<string, unknown>> = []
  const sink = new Writable({
    write (chunk: Buffer, _enc, done) {
      for (const line of chunk.toString().split('\n')) if (line !== '') lines.push(JSON.parse(line) as Record<string, unknown>)
      done()
    }
  })
  const config = validateConfig({
    demo: false,
    log_level: 'debug',
    data_dir: dataDir,
    http: { host: '127.0.0.1', port: 0, rate_limit_per_second: 0 },
    mqtt: { port: 0 },
    ble: { enabled: false },
    chain: { box_id: BOX, topic_root: ROOT },
    upstream: { url, client_id: `box-${BOX}` }
  })
  const service = await startService(config, { logger: pino({ level: 'debug' }, sink) })
  let stopped = false
  const stop = async (): Promise<void> => { if (!stopped) { stopped = true; await service.close() } }
  t.teardown(stop)
  const token = (await readFile(service.adminTokenFile, 'utf8')).trim()
  const admin = async (method: string, path: string, body?: unknown): Promise<any> => {
    const res = await fetch(service.httpUrl + path, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body)
    })
    const text = await res.text()
    if (!res.ok) throw new Error(`admin ${method} ${path}: ${res.status} ${text}`)
    return text === '' ? undefined : JSON.parse(text)
  }
  return { service, lines, admin, stop }
}

function chainMembership (boxId: string, revision: number, members: ChainMember[]): ChainMembership {
  return { box_id: boxId, revision, issued_at: Date.now(), members }
}

function chainHealth (box: Box): { state: string, detail?: string } | undefined {
  return box.service.services.health().find(h => h.id === 'chain')
}

function appliedRevision (box: Box): number | undefined {
  const m = /revision (\d+) applied/.exec(chainHealth(box)?.detail ?? '')
  return m?.[1] === undefined ? undefined : Number(m[1])
}

/** Waits for a log line with this message (and fields) after the first `from` lines. */
async function logged (box: Box, msg: string, fields: Record<string, unknown> = {}, from = 0): Promise<Record<string, unknown>> {
  let found: Record<string, unknown> | undefined
  await until(`log line "${msg}" ${JSON.stringify(fields)}`, () => {
    found = box.lines.slice(from).find(l => l.msg === msg && Object.entries(fields).every(([k, v]) => l[k] === v))
    return found !== undefined
  })
  return found!
}

/**
 * A read of the box's store, again once it is open: each erasure ends with a rewrite of the store (and one more
 * follows once its notice reached the hub), which closes it for a moment (the HTTP API answers 503 meanwhile).
 */
/**
 * Signs in at the box's pages. While an erasure's rewrite has the store closed the box answers 503 (retry-after):
 * the sign-in is made again once the store is open, as a browser's user would.
 */
async function signIn (box: Box, username: string, password: string): Promise<{ status: number }> {
  const deadline = Date.now() + 60_000
  for (;;) {
    await box.service.services.store.settled()
    const answer = await new Browser(box.service.httpUrl).signIn(username, password)
    if (answer.status !== 503 || Date.now() > deadline) return answer
  }
}

async function read<T> (box: Box, fn: () => Promise<T>): Promise<T> {
  for (;;) {
    try {
      return await fn()
    } catch (err) {
      if ((err as { code?: unknown }).code !== 'LEVEL_DATABASE_NOT_OPEN') throw err
      await box.service.services.store.settled()
    }
  }
}

async function mqttPort (box: Box): Promise<number> {
  const info = JSON.parse(await readFile(join(box.service.config.data_dir, 'server.json'), 'utf8')) as { mqtt_port: number }
  return info.mqtt_port
}

/** Connects to the box's embedded broker; resolves with the client, or rejects with the refusal. */
async function deviceConnect (t: Tap, box: Box, username: string, password: string): Promise<MqttClient> {
  const client = mqtt.connect(`mqtt://127.0.0.1:${await mqttPort(box)}`, { protocolVersion: 4, reconnectPeriod: 0, username, password, clientId: username })
  t.teardown(() => { client.end(true) })
  await new Promise<void>((resolve, reject) => {
    client.once('connect', () => { resolve() })
    client.once('error', reject)
    client.once('close', () => { reject(new Error('closed before CONNACK')) })
  })
  return client
}

t.test('a box applies the chain\'s members from the hub\'s retained messages', async t => {
  const broker = await Mosquitto.create(t)
  await broker.start()
  const proxy = await TcpProxy.create(t, broker.port)
  const dataDir = await mkdtemp(join(tmpdir(), 'hr-relay-chain-members-'))
  t.teardown(async () => { await rm(dataDir, { recursive: true, force: true }) })

  // The hub's side: a publisher of retained membership messages, and a reader of the box's erasure notices.
  const hub = mqtt.connect(broker.url, { protocolVersion: 4, clientId: 'test-hub', reconnectPeriod: 250 })
  hub.on('error', () => {})
  t.teardown(() => { hub.end(true) })
  await new Promise<void>(resolve => { hub.once('connect', () => { resolve() }) })
  const notices: string[] = []
  hub.on('message', topic => { notices.push(topic) })
  await hub.subscribeAsync(`${ROOT}/boxes/${BOX}/users/+/erased`, { qos: 1 })
  const topic = membersTopic(ROOT, BOX)
  const publish = async (m: ChainMembership | string): Promise<void> => {
    await until('the hub\'s connection', () => hub.connected)
    await hub.publishAsync(topic, typeof m === 'string' ? m : membershipPayload(m), { qos: 1, retain: true })
  }

  const created = Date.now() - 86_400_000
  const alicePassword = 'alice-hub-password-1'
  const devicePassword = 'esp-printed-at-the-hub-1'
  const alice: ChainMember = {
    profile_id: ALICE,
    username: ALICE_NAME,
    password_hash: await hashSecret(alicePassword),
    display_name: 'Alice',
    age: 34,
    created_at: created,
    devices: [{ device_id: ESP, kind: 'mqtt', name: 'Bike 3', mqtt_username: ESP, mqtt_password_hash: await hashSecret(devicePassword), created_at: created }]
  }
  const bob: ChainMember = {
    profile_id: BOB,
    username: 'bobchain',
    password_hash: await hashSecret('bob-hub-password-1'),
    created_at: created,
    devices: [{ device_id: STRAP.toLowerCase(), kind: 'ble', created_at: created }]
  }
  // The hub also has a member whose username a box-local member holds at this box.
  const clash: ChainMember = { profile_id: 'hub-zoe-91aa', username: 'LocalZoe', password_hash: await hashSecret('zoe-hub-1'), created_at: created, devices: [] }
  const membership = (revision: number, members: ChainMember[]): ChainMembership => chainMembership(BOX, revision, members)

  const top = t
  let box = await startBox(top, dataDir, proxy.url)
  const { services } = box.service
  const local = await box.admin('POST', '/admin/users', { username: 'localzoe', password: 'local-password-1' })
  await box.admin('POST', '/admin/devices', { device_id: 'esp32-local', username: 'localzoe', kind: 'mqtt' })
  const localBefore = await services.users.get(local.profile_id)
  await until('the chain subscription', () => chainHealth(box)?.state === 'running')

  t.test('revision 1: the chain members exist with the hub\'s ids, password and device digests', async t => {
    await publish(membership(1, [alice, bob, clash]))
    await until('revision 1 applied', () => appliedRevision(box) === 1)
    const a = await services.users.get(ALICE)
    t.match(a, { profile_id: ALICE, username: ALICE_NAME, password_hash: alice.password_hash, display_name: 'Alice', age: 34, created_at: created })
    t.equal((await services.users.byUsername('bobchain'))?.profile_id, BOB)
    t.equal(services.devices.ownerOf(STRAP), BOB, 'the strap is paired to bob (its address as the box writes it)')
    t.equal(services.devices.get(ESP)?.mqtt_password_hash, alice.devices[0]!.mqtt_password_hash)
    t.equal(await services.users.get(clash.profile_id), undefined, 'the member whose username is a box-local member\'s is refused')
    t.equal((await services.users.byUsername('localzoe'))?.profile_id, local.profile_id)
    const refusal = await logged(box, 'chain member refused', { profile_id: clash.profile_id })
    t.match(refusal.reason, /box-local/)
    t.match(chainHealth(box)?.detail, /2 chain members; refused since start: 1 members, 0 devices, 0 messages/)

    // The member signs in at the box with the password they chose at the hub.
    t.equal((await signIn(box, ALICE_NAME, alicePassword)).status, 303)
    t.equal((await signIn(box, ALICE_NAME, 'not-her-password')).status, 401)

    // Their MQTT device connects with the password the hub printed, and its reading is stored as hers.
    await t.rejects(deviceConnect(t, box, ESP, 'wrong-password'), /bad user ?name or password/i)
    const device = await deviceConnect(t, box, ESP, devicePassword)
    const at = Date.now() - 2000
    await device.publishAsync(`hr-relay/v1/devices/${ESP}/heart_rate`, JSON.stringify({ measured_at: at, heart_rate: 81 }), { qos: 1 })
    const token = (await box.admin('POST', '/admin/tokens', { username: ALICE_NAME, scope: 'data:heart_rate:read' })).access_token as string
    const latest = await fetch(`${box.service.httpUrl}/api/v1/data/heart_rate/latest`, { headers: { authorization: `Bearer ${token}` } })
    t.same(await latest.json(), { measured_at: at, data: { heart_rate: 81 } })
    // Once more, from memory this time (the scrypt digest verified once).
    device.end(true)
    const again = await deviceConnect(t, box, ESP, devicePassword)
    again.end(true)
  })

  t.test('revision 2: changed fields follow the hub, box-local state stays, a strap moves', async t => {
    await services.users.update(ALICE, u => ({ ...u, room_hidden: { since: Date.now(), until: null } }))
    const { age: _cleared, ...withoutAge } = alice
    await publish(membership(2, [{ ...withoutAge, display_name: 'Alice B.', devices: [...alice.devices, bob.devices[0]!] }, { ...bob, devices: [] }, clash]))
    await until('revision 2 applied', () => appliedRevision(box) === 2)
    const a = await services.users.get(ALICE)
    t.equal(a?.display_name, 'Alice B.')
    t.notOk(a !== undefined && 'age' in a, 'a field the hub cleared is cleared')
    t.same(a?.room_hidden?.until, null, 'the member\'s box-local switch stays')
    t.equal(services.devices.ownerOf(STRAP), ALICE, 'the strap moved from bob to alice')
    t.equal(services.devices.ownerOf(ESP), ALICE)
    t.ok(await services.users.get(BOB), 'bob stays, without devices')
  })

  t.test('an older revision and malformed messages change nothing', async t => {
    const from = box.lines.length
    await publish(membership(1, [alice, bob]))
    await logged(box, 'chain membership not newer; ignored', { revision: 1 }, from)
    await publish('{"v":1,"box_id":"gym-a","revision":"three"}')
    t.match((await logged(box, 'chain membership refused', {}, from)).reason, /revision/)
    await publish(membershipPayload({ ...membership(9, []), box_id: 'gym-b' }))
    await until('two refused messages', () => /0 devices, 2 messages/.test(chainHealth(box)?.detail ?? ''))
    t.equal(appliedRevision(box), 2)
    t.equal((await services.users.get(ALICE))?.display_name, 'Alice B.')
    t.equal(services.devices.ownerOf(STRAP), ALICE)
    t.ok(await services.users.get(BOB))
  })

  t.test('revision 3 without alice: the box erases her, down to the bytes, and tells the hub', async t => {
    await publish(membership(3, [{ ...bob, devices: [] }, clash]))
    await until('revision 3 applied', () => appliedRevision(box) === 3)
    t.equal(await read(box, async () => await services.users.get(ALICE)), undefined)
    t.equal(await read(box, async () => await services.users.byUsername(ALICE_NAME)), undefined)
    t.equal(await read(box, async () => await services.readings.latest(ALICE)), undefined, 'her latest reading is gone')
    t.same(await read(box, async () => await services.readings.page(ALICE, 0, Date.now() + 1, 10)), [], 'her readings are gone')
    t.equal(services.devices.get(ESP), undefined, 'her MQTT device is unpaired')
    t.equal(services.devices.get(STRAP), undefined, 'her strap is unpaired')
    await t.rejects(deviceConnect(t, box, ESP, devicePassword), /bad user ?name or password/i)
    await until('the box\'s erasure notice at the hub', () => notices.includes(`${ROOT}/boxes/${BOX}/users/${ALICE}/erased`))
    let left: string[] = []
    await until('no file of the box holds her profile id or username', async () => {
      left = await filesContaining(dataDir, [ALICE, ALICE_NAME])
      return left.length === 0
    }, 30_000, 100)
    t.same(left, [])
    t.ok(await read(box, async () => await services.users.get(BOB)))
  })

  t.test('a restart with the broker down keeps the members; an older retained revision is not applied', async t => {
    // The broker's retained message becomes an older revision (with alice) before the restart.
    const from = box.lines.length
    await publish(membership(2, [alice, bob]))
    await logged(box, 'chain membership not newer; ignored', { revision: 2 }, from)
    await box.stop()
    await broker.stop()
    // Stopped at the end of the whole test, not of this subtest.
    box = await startBox(top, dataDir, proxy.url)
    const restored = await logged(box, 'chain members restored')
    t.match(restored, { revision: 3, members: 1 })
    const svc = box.service.services
    t.ok(await read(box, async () => await svc.users.get(BOB)), 'bob is still there')
    t.equal(await read(box, async () => await svc.users.get(ALICE)), undefined)
    t.equal(chainHealth(box)?.state, 'degraded')
    t.match(chainHealth(box)?.detail, /revision 3 applied; 1 chain members/)
    await broker.start()
    await logged(box, 'chain membership not newer; ignored', { revision: 2 })
    t.equal(await read(box, async () => await svc.users.get(ALICE)), undefined, 'the older revision did not bring alice back')
    t.equal(appliedRevision(box), 3)
  })

  t.test('a box cut off while a member is removed erases them once it is back', async t => {
    const svc = box.service.services
    await until('the chain subscription', () => chainHealth(box)?.state === 'running')
    proxy.cut()
    await until('the box notices the cut', () => chainHealth(box)?.state === 'degraded')
    await publish(membership(4, [clash]))
    t.ok(await read(box, async () => await svc.users.get(BOB)), 'bob is still there while the box is cut off')
    proxy.restore()
    await until('revision 4 applied', () => appliedRevision(box) === 4)
    t.equal(await read(box, async () => await svc.users.get(BOB)), undefined, 'bob is erased')
    t.equal(await read(box, async () => await svc.users.byUsername('bobchain')), undefined)
    t.match(chainHealth(box)?.detail, /revision 4 applied; 0 chain members/)
    await until('the box\'s erasure notice at the hub', () => notices.includes(`${ROOT}/boxes/${BOX}/users/${BOB}/erased`))
    let left: string[] = []
    await until('no file of the box holds his profile id', async () => {
      left = await filesContaining(dataDir, [BOB, 'bobchain'])
      return left.length === 0
    }, 30_000, 100)
    t.same(left, [])
  })

  t.test('the box-local member was never touched', async t => {
    const svc = box.service.services
    t.same(await read(box, async () => await svc.users.get(local.profile_id)), localBefore)
    t.equal(svc.devices.ownerOf('esp32-local'), local.profile_id)
    t.equal((await signIn(box, 'localzoe', 'local-password-1')).status, 303)
  })
})

t.test('the stores import a chain member and device as the hub made them', async t => {
  const dir = await mkdtemp(join(tmpdir(), 'hr-relay-chain-stores-'))
  const store = await Store.open(dir)
  t.teardown(async () => { await store.close(); await rm(dir, { recursive: true, force: true }) })
  const users = new Users(store)
  const devices = new Devices(store)
  await devices.load()
  const hash = await hashSecret('hub-password-1')

  const first = await users.putChainMember({ profile_id: 'hub-p-1', username: 'Carla', password_hash: hash, created_at: 1000, display_name: 'Carla', age: 40 })
  t.equal(first.created, true)
  t.equal((await users.authenticate('carla', 'hub-password-1'))?.profile_id, 'hub-p-1', 'she signs in with the hub\'s password')
  await users.giveConsent('hub-p-1', 'v1', 'member')
  await users.update('hub-p-1', u => ({ ...u, room_hidden: { since: 5, until: null } }))
  const renamed = await users.putChainMember({ profile_id: 'hub-p-1', username: 'carla.m', password_hash: hash, created_at: 1000 })
  t.equal(renamed.created, false)
  t.match(renamed.user, { username: 'carla.m', channel: 'carla.m', room_hidden: { since: 5, until: null }, consents: [{ version: 'v1' }] })
  t.notOk('display_name' in renamed.user || 'age' in renamed.user, 'fields the hub left out are cleared')
  t.equal(await users.byUsername('Carla'), undefined, 'the old username is free')
  t.equal(users.consentVersion('hub-p-1'), 'v1')
  await users.create({ username: 'dora', password: 'local-password' })
  await t.rejects(users.putChainMember({ profile_id: 'hub-p-2', username: 'Dora', password_hash: hash, created_at: 1 }), { code: 'HR_USER_EXISTS' })

  const removed: string[] = []
  devices.onRemoved(d => { removed.push(d.device_id) })
  const digest = await hashSecret('printed-1')
  const dev = { device_id: 'esp-chain-9', profile_id: 'hub-p-1', kind: 'mqtt' as const, mqtt_username: 'esp-chain-9', mqtt_password_hash: digest, created_at: 2000 }
  const paired = await devices.putChainDevice(dev)
  t.equal(await devices.verifyMqtt('esp-chain-9', 'printed-2'), undefined)
  t.equal((await devices.verifyMqtt('esp-chain-9', 'printed-1'))?.profile_id, 'hub-p-1', 'a scrypt digest verifies')
  t.equal((await devices.verifyMqtt('esp-chain-9', 'printed-1'))?.profile_id, 'hub-p-1', 'and again, from memory')
  t.equal(await devices.verifyMqtt('esp-chain-9', 'printed-2'), undefined)
  t.equal(await devices.putChainDevice({ ...dev }), paired, 'the same pairing again writes nothing')
  await devices.putChainDevice({ ...dev, name: 'Rower 2' })
  t.same(removed, [], 'a new name keeps the device connected')
  await devices.putChainDevice({ ...dev, mqtt_password_hash: `sha256$${createHash('sha256').update('printed-3').digest('hex')}` })
  t.same(removed, ['esp-chain-9'], 'new credentials end the old connection')
  t.equal(await devices.verifyMqtt('esp-chain-9', 'printed-1'), undefined, 'the old password no longer works')
  t.equal((await devices.verifyMqtt('esp-chain-9', 'printed-3'))?.device_id, 'esp-chain-9', 'a sha256 digest verifies')
  await t.rejects(devices.putChainDevice({ ...dev, profile_id: 'hub-p-2' }), { code: 'HR_DEVICE_EXISTS' }, 'another member\'s device')
  await t.rejects(devices.putChainDevice({ ...dev, device_id: 'esp-chain-10' }), { code: 'HR_DEVICE_EXISTS' }, 'another device\'s MQTT username')
  await t.rejects(devices.putChainDevice({ ...dev, device_id: 'bad id' }), { code: 'HR_DEVICE_ID_INVALID' })

  // What a restart reads back.
  const again = new Devices(store)
  await again.load()
  t.match(again.get('esp-chain-9'), { profile_id: 'hub-p-1', mqtt_password_hash: /^sha256\$/ })
  t.equal((await new Users(store).byUsername('CARLA.M'))?.profile_id, 'hub-p-1')
})

t.test('a username another chain member gives up in the same revision is taken in a later round; a swap is refused', async t => {
  const dir = await mkdtemp(join(tmpdir(), 'hr-relay-chain-rounds-'))
  const store = await Store.open(dir)
  t.teardown(async () => { await store.close(); await rm(dir, { recursive: true, force: true }) })
  const users = new Users(store)
  const devices = new Devices(store)
  await devices.load()
  const members = new Map<string, Set<string>>()
  const ledger = {
    members,
    remember: async (id: string, d: Iterable<string>) => { members.set(id, new Set(d)) },
    forget: async (id: string) => { members.delete(id) }
  }
  // No member is erased here, so the erasure's services are not needed.
  const deps = { users, devices, ledger, log: pino({ level: 'silent' }), erase: {} as EraseUses }
  const hash = await hashSecret('x')
  const member = (profileId: string, username: string): ChainMember => ({ profile_id: profileId, username, password_hash: hash, created_at: 1, devices: [] })
  t.match(await applyRevision(chainMembership(BOX, 1, [member('p-a', 'anna'), member('p-b', 'ben')]), deps), { created: 2, refused_members: 0 })
  // ben takes anna's name, listed first; anna becomes anna2.
  t.match(await applyRevision(chainMembership(BOX, 2, [member('p-b', 'anna'), member('p-a', 'anna2')]), deps), { updated: 2, refused_members: 0 })
  t.equal((await users.byUsername('anna'))?.profile_id, 'p-b')
  t.equal((await users.byUsername('anna2'))?.profile_id, 'p-a')
  // A swap cannot be done one member at a time: both are refused, both keep their names.
  t.match(await applyRevision(chainMembership(BOX, 3, [member('p-b', 'anna2'), member('p-a', 'anna')]), deps), { updated: 0, refused_members: 2 })
  t.equal((await users.byUsername('anna'))?.profile_id, 'p-b')
})
