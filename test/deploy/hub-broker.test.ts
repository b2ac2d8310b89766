// deploy/hub/: the broker's settings and ACL that docs/hub.md tells a chain to use, on a real Mosquitto. The
// hub's login may take the chain through a shared subscription; a box may write only under its own box id; a
// wrong password is refused. The TLS listener is replaced by a loopback one; everything else is the shipped file.
import t from 'tap'
import mqtt from 'mqtt'
import { spawnSync } from 'node:child_process'
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Mosquitto } from '../helpers/mosquitto.ts'

const DEPLOY = fileURLToPath(new URL('../../deploy/hub/', import.meta.url))

/** The shipped configuration without its listener and TLS lines (the helper listens on loopback) and with the test's paths. */
function shippedSettings (text: string, dir: string): string[] {
  return text.split('\n').filter(l => l.trim() !== '' && !l.startsWith('#'))
    .filter(l => !/^(listener|cafile|certfile|keyfile|persistence_location|per_listener_settings|max_inflight_messages|max_queued_messages) /.test(l))
    .map(l => l.replace('/etc/mosquitto/passwd', join(dir, 'passwd')).replace('/etc/mosquitto/chain.acl', join(DEPLOY, 'chain.acl')))
}

t.test('the shipped broker settings and ACL', async t => {
  const shipped = await readFile(join(DEPLOY, 'mosquitto-chain.conf'), 'utf8')
  let settings: string[] = []
  const broker = await Mosquitto.create(t, dir => (settings = shippedSettings(shipped, dir)))
  t.same(settings.filter(l => !l.startsWith('password_file') && !l.startsWith('acl_file')), ['allow_anonymous false', 'persistence true', 'autosave_interval 60'])
  const passwd = join(broker.dir, 'passwd')
  await writeFile(passwd, '')
  for (const [user, password] of [['hub', 'hub-secret'], ['gym-a', 'a-secret'], ['gym-b', 'b-secret']]) {
    t.equal(spawnSync('mosquitto_passwd', ['-b', passwd, user!, password!]).status, 0)
  }
  await broker.start()

  const connect = async (username: string, password: string, clientId: string, protocolVersion: 4 | 5 = 5): Promise<mqtt.MqttClient> => {
    const c = mqtt.connect(broker.url, { username, password, clientId, protocolVersion, reconnectPeriod: 0 })
    t.teardown(() => { c.end(true) })
    await new Promise<void>((resolve, reject) => { c.once('connect', () => { resolve() }); c.once('error', reject) })
    return c
  }

  const hub = await connect('hub', 'hub-secret', 'hub-1')
  const granted = await hub.subscribeAsync('$share/hr-relay-hub/hr-relay-chain/v1/boxes/+/users/+/heart_rate', { qos: 1 })
  t.equal(granted[0]?.qos, 1, 'the hub\'s login may take the chain through a shared subscription')
  const received: string[] = []
  hub.on('message', (topic, payload) => { received.push(`${topic} ${payload.toString()}`) })

  const boxA = await connect('gym-a', 'a-secret', 'box-gym-a')
  // MQTT 5 answers a refused QoS 1 publish with a PUBACK carrying 0x87 (not authorized); nothing is delivered.
  await t.rejects(boxA.publishAsync('hr-relay-chain/v1/boxes/gym-b/users/p/heart_rate', 'not mine', { qos: 1 }), { code: 0x87 })
  // (The refusal also ends that connection; the box reconnects, as its upstream does.)
  const boxA2 = await connect('gym-a', 'a-secret', 'box-gym-a')
  await boxA2.publishAsync('hr-relay-chain/v1/boxes/gym-a/users/p/heart_rate', 'mine', { qos: 1 })
  const end = Date.now() + 10_000
  while (received.length === 0 && Date.now() < end) await new Promise(resolve => setTimeout(resolve, 20))
  t.same(received, ['hr-relay-chain/v1/boxes/gym-a/users/p/heart_rate mine'], 'a box writes only under its own box id')

  // Membership: the hub writes each box's members message; a box reads its own and can neither write it nor read another's.
  const hubMembers = await connect('hub', 'hub-secret', 'hub-1-members')
  await hubMembers.publishAsync('hr-relay-chain/v1/boxes/gym-a/members', 'members of a', { qos: 1, retain: true })
  await hubMembers.publishAsync('hr-relay-chain/v1/boxes/gym-b/members', 'members of b', { qos: 1, retain: true })
  const boxA3 = await connect('gym-a', 'a-secret', 'box-gym-a-members')
  const membership: string[] = []
  boxA3.on('message', (topic, payload) => { membership.push(`${topic} ${payload.toString()}`) })
  // Mosquitto 2.0 grants the subscription and checks the read ACL on delivery: another box's message never arrives
  // (subscribed first, so that it would arrive before the box's own).
  await boxA3.subscribeAsync('hr-relay-chain/v1/boxes/gym-b/members', { qos: 1 })
  const own = await boxA3.subscribeAsync('hr-relay-chain/v1/boxes/gym-a/members', { qos: 1 })
  t.equal(own[0]?.qos, 1, 'a box may read its own members')
  const until = Date.now() + 10_000
  while (membership.length === 0 && Date.now() < until) await new Promise(resolve => setTimeout(resolve, 20))
  t.same(membership, ['hr-relay-chain/v1/boxes/gym-a/members members of a'], 'the retained members message of its own box only')
  await t.rejects(boxA3.publishAsync('hr-relay-chain/v1/boxes/gym-a/members', 'forged', { qos: 1, retain: true }), { code: 0x87 }, 'a box cannot write its own members')

  await t.rejects(connect('gym-a', 'wrong', 'box-gym-a-2'), /Not authorized|Bad User Name or Password/, 'a wrong password is refused')
})
