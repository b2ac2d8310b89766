// A chain end to end, as an operator sets it up (docs/hub.md): two hub instances, a box, members enrolled at the
// hub with `hr-relay hub admin`. A strap paired at the hub streams at the box, its readings go up to the hub and
// reach an app's WebSocket on the hub; erasing the member at the hub erases them at the box too and ends the
// app's stream. Real PostgreSQL, real Mosquitto, hub instances and admin commands as processes, a real box service.
import t from 'tap'
import { startHubChain } from '../helpers/hub-process.ts'
import { runCli } from '../helpers/cli.ts'
import { startTestService } from '../helpers/service.ts'
import { call, openWs, wsUrl } from '../api/http/fetch.ts'
import { eventually } from '../helpers/wait.ts'

const ROOT = 'chain-e2e/v1'
const env = { ...process.env, HR_RELAY_FROM_SOURCE: '1' }

t.test('a member enrolled at the hub trains at a box and streams at the hub', async t => {
  const { broker, hubs } = await startHubChain(t, { instances: 2, clientIdPrefix: 'hub-e2e', topicRoot: ROOT })
  const [one, two] = hubs as [typeof hubs[0], typeof hubs[0]]
  async function admin<T> (...args: string[]): Promise<T> {
    const r = await runCli(['hub', 'admin', '--config', one.configFile, ...args, '--json'], env)
    if (r.code !== 0) throw new Error(`hub admin ${args.join(' ')} exited ${String(r.code)}: ${r.stderr}${r.stdout}`)
    return JSON.parse(r.stdout) as T
  }

  await admin('box', 'add', 'gym-a')
  const ann = await admin<{ profile_id: string }>('user', 'add', 'ann', '--password', 'correct horse', '--display-name', 'Ann')
  const strap = await admin<{ device_id: string, profile_id: string, kind: string }>('device', 'pair', 'ann', '--kind', 'ble', '--device-id', 'c8:2f:9a:00:00:0a')
  t.match(strap, { device_id: 'C8:2F:9A:00:00:0A', profile_id: ann.profile_id, kind: 'ble' })
  const token = await admin<{ access_token: string }>('token', 'issue', 'ann', '--scope', 'data:heart_rate:read')

  const box = await startTestService(t, { chain: { box_id: 'gym-a', topic_root: ROOT }, upstream: { url: broker.url, client_id: 'box-gym-a' } })
  const services = box.service.services
  const member = await eventually('the box to receive Ann from the hub', async () => await services.users.byUsername('ann'))
  t.equal(member.profile_id, ann.profile_id, 'the same profile at the box as at the hub')
  t.equal(member.display_name, 'Ann')
  t.equal(services.devices.ownerOf('C8:2F:9A:00:00:0A', 'ble'), ann.profile_id, 'her strap, paired at the hub, is paired at the box')

  // The app watches Ann on the second instance; her strap's readings arrive at the box as a BLE source hands them over.
  const stream = await openWs(wsUrl(two.url, `/api/v1/data/real_time?access_token=${token.access_token}`))
  t.teardown(() => { stream.ws.terminate() })
  const t0 = Date.now() - 30_000
  for (const [i, bpm] of [[0, 91], [1, 93]] as const) {
    const answer = await services.pipeline.submit({ device_id: 'C8:2F:9A:00:00:0A', measured_at: t0 + i * 1000, heart_rate: bpm, source: 'ble' })
    t.equal(answer.status, 'stored', 'the box stores the strap\'s reading as Ann\'s')
  }
  // The two readings may be committed by different instances, in either order: the stream carries each once.
  const got = [JSON.parse(await stream.next()), JSON.parse(await stream.next())].sort((a, b) => a.measured_at - b.measured_at)
  t.same(got, [{ measured_at: t0, data: { heart_rate: 91 } }, { measured_at: t0 + 1000, data: { heart_rate: 93 } }], 'the hub streams the box\'s readings')
  const latest = await call(one.url, 'GET', '/api/v1/data/heart_rate/latest', { token: token.access_token })
  t.same([latest.status, latest.json], [200, { measured_at: t0 + 1000, data: { heart_rate: 93 } }], 'and serves it from either instance')

  // Erasure at the hub: the app's stream ends, the box erases her, and the hub keeps nothing of her.
  const erased = await runCli(['hub', 'admin', '--config', one.configFile, 'user', 'delete', 'ann'], env)
  t.equal(erased.code, 0, erased.stderr)
  t.same(await stream.closed, { code: 1008, reason: 'token revoked' }, 'the stream on the hub ends with her tokens')
  await eventually('the box to erase Ann', async () => (await services.users.get(ann.profile_id)) === undefined ? true : undefined)
  t.equal(services.devices.ownerOf('C8:2F:9A:00:00:0A'), undefined, 'her strap is unpaired at the box')
  t.same(await services.readings.latest(ann.profile_id), undefined, 'her readings are gone from the box')
  const gone = await call(one.url, 'GET', '/api/v1/data/heart_rate/latest', { token: token.access_token })
  t.equal(gone.status, 401, 'her token no longer works at the hub')
})
