// The chain's membership from the hub to the boxes, on a real PostgreSQL and a real Mosquitto: the admin commands
// change members, straps and boxes in PostgreSQL; a running MembershipPublisher hears of each change through
// PostgreSQL's notification and publishes a retained QoS 1 message per box, which a box's subscriber decodes with
// the wire format's own decoder. Every wait is for a message or a notification, never for time.
import t from 'tap'
import { createHash } from 'node:crypto'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import mqtt, { type MqttClient } from 'mqtt'
import pino from 'pino'
import { decodeMembership, membersTopic, type ChainMembership } from '../../firmware-protocol/upstream.ts'
import { runHubAdmin } from '../../hub/admin/cli.ts'
import { validateHubConfig } from '../../hub/config.ts'
import { MembershipPublisher } from '../../hub/membership/publisher.ts'
import { openPgStores } from '../../hub/store/pg-stores.ts'
import { Mosquitto } from '../helpers/mosquitto.ts'
import { Postgres } from '../helpers/postgres.ts'

const ROOT = 'chain/v1'
const sha256 = (s: string): string => createHash('sha256').update(s).digest('hex')

/** A box's view of its members topic: every message received, decoded, and waits for the next that matches. */
class BoxSubscriber {
  readonly messages: Array<{ membership: ChainMembership, retained: boolean, raw: string }> = []
  private waiters: Array<() => void> = []
  private constructor (readonly client: MqttClient) {}

  static async open (t: Tap, url: string, boxId: string): Promise<BoxSubscriber> {
    const client = await mqtt.connectAsync(url, { protocolVersion: 5, clientId: `box-${boxId}-${Math.random().toString(16).slice(2, 8)}`, reconnectPeriod: 0 })
    const sub = new BoxSubscriber(client)
    t.teardown(async () => { await client.endAsync(true) })
    client.on('message', (_topic, payload, packet) => {
      const decoded = decodeMembership(boxId, payload)
      if ('error' in decoded) throw new Error(`a message the box refuses: ${decoded.error}`)
      sub.messages.push({ membership: decoded, retained: packet.retain, raw: payload.toString() })
      for (const wake of sub.waiters.splice(0)) wake()
    })
    await client.subscribeAsync(membersTopic(ROOT, boxId), { qos: 1 })
    return sub
  }

  /** The first message from index `from` on that satisfies `ok`, waiting for it if it has not come yet. */
  async next (ok: (m: ChainMembership) => boolean, from = 0): Promise<{ membership: ChainMembership, retained: boolean, raw: string, index: number }> {
    for (;;) {
      const index = this.messages.findIndex((m, i) => i >= from && ok(m.membership))
      if (index >= 0) return { ...this.messages[index] as BoxSubscriber['messages'][number], index }
      await new Promise<void>(resolve => { this.waiters.push(resolve) })
    }
  }
}
interface Tap { teardown (fn: () => unknown): void }

const pgServer = await Postgres.create(t)
await pgServer.start()
const dbUrl = await pgServer.createDatabase('hub')
const broker = await Mosquitto.create(t)
await broker.start()
const dir = await mkdtemp(join(tmpdir(), 'hr-relay-members-'))
t.teardown(async () => { await rm(dir, { recursive: true, force: true }) })
const raw = { log_level: 'silent', postgres: { url: dbUrl }, mqtt: { url: broker.url, client_id: 'hub-1', topic_root: ROOT } }
const configFile = join(dir, 'hub.json')
await writeFile(configFile, JSON.stringify(raw))
const config = validateHubConfig(raw)

/** `hr-relay hub admin --config hub.json …args --json`, in this process; the answer. */
async function admin<T> (...args: string[]): Promise<T> {
  let out = ''
  let err = ''
  const code = await runHubAdmin(['--config', configFile, ...args, '--json'], { stdout: { write: (s: string) => { out += s } }, stderr: { write: (s: string) => { err += s } } })
  if (code !== 0) throw new Error(`hub admin ${args.join(' ')}: exit ${code}: ${out}${err}`)
  return JSON.parse(out) as T
}

const stores = await openPgStores({ url: dbUrl, gapMs: 5000, poolSize: 4 })
t.teardown(async () => { await stores.close() })
const revision = async (): Promise<number> => Number((await stores.pool.query<{ revision: string }>('SELECT revision FROM chain_revision')).rows[0]?.revision)
const log = pino({ level: 'silent' })
let publisher = new MembershipPublisher({ mqtt: config.mqtt, pool: stores.pool, events: stores.events, log, debounceMs: 20 })
t.teardown(async () => { await publisher.stop() })
await publisher.start()
const gymA = await BoxSubscriber.open(t, broker.url, 'gym-a')

const named = (m: ChainMembership, username: string): ChainMembership['members'][number] | undefined => m.members.find(u => u.username === username)
let annId = ''

t.test('a box added receives the membership; a member and a strap added reach it, with digests only', async t => {
  await admin('box', 'add', 'gym-a')
  const empty = await gymA.next(() => true)
  t.same(empty.membership.members, [], 'no members yet')
  t.equal(empty.membership.revision, await revision(), 'stamped with the chain\'s revision')

  annId = (await admin<{ profile_id: string }>('user', 'add', 'ann', '--password', 'correct horse', '--display-name', 'Ann', '--age', '34', '--weight-kg', '61.5', '--sex', 'female', '--max-heart-rate', '188')).profile_id
  const withAnn = await gymA.next(m => named(m, 'ann') !== undefined)
  t.ok(withAnn.membership.revision > empty.membership.revision, 'a newer revision')
  const ann = named(withAnn.membership, 'ann')
  t.match(ann, { profile_id: annId, username: 'ann', display_name: 'Ann', age: 34, weight_kg: 61.5, sex: 'female', max_heart_rate: 188, password_hash: /^scrypt\$16384\$8\$1\$/, devices: [] })
  t.notMatch(withAnn.raw, 'correct horse', 'the password is not in the message')

  const strap = await admin<{ mqtt_password: string }>('device', 'pair', 'ann', '--kind', 'mqtt', '--device-id', 'strap-1', '--name', 'Ann\'s strap')
  const withStrap = await gymA.next(m => (named(m, 'ann')?.devices.length ?? 0) > 0)
  t.match(named(withStrap.membership, 'ann')?.devices, [{ device_id: 'strap-1', kind: 'mqtt', name: 'Ann\'s strap', mqtt_username: 'strap-1', mqtt_password_hash: `sha256$${sha256(strap.mqtt_password)}`, created_at: Number }])
  t.notMatch(withStrap.raw, strap.mqtt_password, 'the MQTT password is not in the message')
  t.equal(withStrap.membership.revision, await revision())
})

t.test('a change a box does not receive (a consent) is not a new revision', async t => {
  const before = await revision()
  await stores.users.giveConsent(annId, 'v1', 'operator')
  t.equal(await revision(), before, 'unchanged')
  await stores.users.update(annId, u => ({ ...u, display_name: 'Ann B.' }))
  t.equal(await revision(), before + 1, 'a display name is one')
  t.equal(named((await gymA.next(m => named(m, 'ann')?.display_name === 'Ann B.')).membership, 'ann')?.display_name, 'Ann B.')
})

t.test('a burst of changes in one transaction is one publication per box', async t => {
  await admin('user', 'add', 'bob', '--password', 'another secret')
  await admin('user', 'add', 'carol', '--password', 'a third secret')
  const both = await gymA.next(m => named(m, 'carol') !== undefined)
  const before = await revision()
  await stores.pool.query("UPDATE users SET record = jsonb_set(record, '{display_name}', to_jsonb(username || ' (gym A)'))")
  const after = await revision()
  t.equal(after, before + 3, 'three members changed, three revisions')
  const renamed = await gymA.next(m => m.members.every(u => u.display_name?.endsWith('(gym A)') === true), both.index + 1)
  t.equal(renamed.membership.revision, after)
  t.equal(renamed.index, both.index + 1, 'one message for the three changes')
})

t.test('a member deleted at the hub is missing from the next revision', async t => {
  const from = gymA.messages.length
  const before = await revision()
  await admin('user', 'delete', 'ann')
  const without = await gymA.next(m => named(m, 'ann') === undefined, from)
  t.ok(without.membership.revision > before)
  t.same(without.membership.members.map(u => u.username), ['bob', 'carol'])
  t.notMatch(without.raw, 'strap-1', 'her strap went with her')
})

t.test('a box that connects later (or comes back) gets the newest membership, retained', async t => {
  const latest = await revision()
  const late = await BoxSubscriber.open(t, broker.url, 'gym-a')
  const first = await late.next(() => true)
  t.equal(first.retained, true, 'the retained message')
  t.equal(first.membership.revision, latest)
  t.same(first.membership.members.map(u => u.username), ['bob', 'carol'])
})

t.test('changes made while no instance runs are published by the next one to start', async t => {
  await publisher.stop()
  await admin('user', 'add', 'erin', '--password', 'fourth secret')
  await admin('box', 'add', 'gym-b')
  const gymB = await BoxSubscriber.open(t, broker.url, 'gym-b')
  const from = gymA.messages.length
  publisher = new MembershipPublisher({ mqtt: config.mqtt, pool: stores.pool, events: stores.events, log, debounceMs: 20 })
  await publisher.start()
  const a = await gymA.next(m => named(m, 'erin') !== undefined, from)
  const b = await gymB.next(m => named(m, 'erin') !== undefined)
  t.equal(a.membership.revision, await revision())
  t.same(b.membership, { ...a.membership, box_id: 'gym-b', issued_at: b.membership.issued_at }, 'every box receives every member')
  t.equal(publisher.state, 'connected')
})

t.test('a change made while the broker is down reaches the boxes once it is back', async t => {
  await broker.stop()
  await admin('user', 'add', 'frank', '--password', 'fifth secret')
  await broker.start()
  // The publisher reconnects by itself and publishes; a box that connects afterwards gets it, retained or live.
  const back = await BoxSubscriber.open(t, broker.url, 'gym-a')
  const withFrank = await back.next(m => named(m, 'frank') !== undefined)
  t.equal(withFrank.membership.revision, await revision())
  t.same(withFrank.membership.members.map(u => u.username), ['bob', 'carol', 'erin', 'frank'])
})
