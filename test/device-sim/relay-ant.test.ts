// End to end over the ANT path: the simulator's ANT transport (one simulated ANT USB stick on a socat pty pair,
// speaking the stick's serial protocol) and the whole service, whose `ant` configuration opens the relay end of the
// pair. Straps paired with --kind ant stream their beats (RR intervals included); an unpaired strap is never stored
// but is listed with its signal strength and battery; a strap that walks out of range is reported gone and back;
// an unplugged stick makes the source degraded in /health and /metrics and is reopened with backoff.
import t from 'tap'
import { AntTransport } from '../../device-sim/transports/ant.ts'
import { simDevices } from '../../device-sim/provision.ts'
import { parseAntDeviceId } from '../../firmware-protocol/ant.ts'
import type { SimReading } from '../../device-sim/transports/transport.ts'
import { runMain } from '../helpers/cli.ts'
import { startTestService, type TestService } from '../helpers/service.ts'
import { until } from '../helpers/wait.ts'

const SEED = 7
const KEY = '0102030405060708'

interface Stored { measured_at: number, heart_rate: number, source: string, rr_intervals_ms?: number[] }
interface Health { id: string, state: string, detail?: string, connected?: number }

async function readings (svc: TestService, username: string): Promise<Stored[]> {
  return (await svc.admin('GET', `/admin/readings/${username}`)).readings as Stored[]
}

async function health (svc: TestService, id: string): Promise<Health | undefined> {
  const body = await (await fetch(`${svc.url}/health`)).json() as { sources: Health[] }
  return body.sources.find(s => s.id === id)
}

async function metric (svc: TestService, line: string): Promise<string | undefined> {
  const text = await (await fetch(`${svc.url}/metrics`)).text()
  return text.split('\n').find(l => l.startsWith(line + ' '))
}

/** Feeds every strap one second of beats each second (heart rate and two 500 ms beats), as the runner does. */
function feed (transport: AntTransport, devices: number, bpm: (device: number) => number): () => void {
  const tick = (): void => {
    for (let d = 0; d < devices; d++) {
      const r: SimReading = { measured_at: Date.now(), heart_rate: bpm(d), rr_intervals_ms: [500, 500], sensor_contact: true }
      void transport.send(d, r)
    }
  }
  tick()
  const timer = setInterval(tick, 1000)
  return () => { clearInterval(timer) }
}

t.test('paired ANT+ straps stream with RR; an unpaired one is listed, never stored; out of range and an unplugged stick', async t => {
  const devices = simDevices('ant', 'ant', SEED, 3)
  const numbers = devices.map(d => parseAntDeviceId(d.device_id) as number)
  t.same(devices.map(d => d.device_id), ['ant:28673', 'ant:28674', 'ant:28675'], 'device ids from the seed')
  const transport = new AntTransport()
  await transport.open(devices)
  t.teardown(() => transport.close())
  const path = transport.relayPath as string
  const svc = await startTestService(t, { ant: [{ path, network_key: KEY }] })
  const id = `ant:${path}`
  await svc.user('ann')
  await svc.user('bob')
  await svc.user('cleo')
  t.match(await svc.admin('POST', '/admin/devices', { device_id: devices[0]!.device_id, username: 'ann', kind: 'ant' }), { device_id: 'ant:28673', kind: 'ant', mqtt_password: null })
  t.match(await svc.admin('POST', '/admin/devices', { device_id: devices[1]!.device_id, username: 'bob', kind: 'ant' }), { device_id: 'ant:28674', kind: 'ant' })
  const stop = feed(transport, 3, d => 120 + d)
  t.teardown(stop)

  await until('three readings of ann and bob', async () => (await readings(svc, 'ann')).length >= 3 && (await readings(svc, 'bob')).length >= 3)
  t.same(await health(svc, id), { id, state: 'running', detail: 'continuous scan mode', connected: 3 }, 'the stick in scan mode hears all three straps')
  for (const [username, bpm] of [['ann', 120], ['bob', 121]] as const) {
    const got = await readings(svc, username)
    t.same([...new Set(got.map(r => `${r.source} ${r.heart_rate}`))], [`ant ${bpm}`], `${username}: every reading is the strap's rate, from the ANT source`)
    // Each RR interval is 500 ms measured on the strap's 1/1024 s clock: 512 ticks, or 511 or 513 where a beat's time rounds.
    const rr = got.flatMap(r => r.rr_intervals_ms ?? [])
    t.ok(rr.length >= 2 && rr.every(v => v >= 499 && v <= 501), `${username}: RR ${JSON.stringify(rr)}`)
    const times = got.map(r => r.measured_at)
    t.ok(times.every((v, i) => i === 0 || v - (times[i - 1] as number) >= 1000), `${username}: at most one reading a second`)
  }

  // The unpaired strap: listed with its signal strength and battery (page 7 first), never stored.
  const unpaired = (await svc.admin('GET', '/admin/devices/unpaired')).devices as Array<Record<string, unknown>>
  t.match(unpaired, [{ device_id: 'ant:28675', source: 'ant', name: 'ANT+ strap 28675', rssi: -45 - ((numbers[2]! * 7) % 36), battery_percent: 100, connected: true }])
  t.equal(unpaired.length, 1)

  // Paired from the command line: cleo's readings are stored from then on.
  const pairedAt = Date.now()
  const pair = await runMain(['admin', 'device', 'pair', 'cleo', '--kind', 'ant', '--device-id', 'ant:28675', '--data-dir', svc.dataDir])
  t.equal(pair.code, 0, pair.stderr)
  t.equal(pair.stdout, `paired ant:28675 (ant) with profile ${(await svc.admin('GET', '/admin/users')).users.find((u: { username: string }) => u.username === 'cleo').profile_id}\n`)
  await until('cleo\'s readings', async () => (await readings(svc, 'cleo')).length >= 2)
  t.same([...new Set((await readings(svc, 'cleo')).map(r => r.heart_rate))], [122])
  t.ok((await readings(svc, 'cleo')).every(r => r.measured_at >= pairedAt), 'none of her strap\'s readings from before the pairing')

  // Ann walks out of range: her strap is reported gone (after 5 s unheard), then back.
  await transport.link(0, false, 'drop')
  await until('ann\'s strap gone', async () => (await health(svc, id))?.connected === 2)
  const annDevice = ((await svc.admin('GET', '/admin/devices')).devices as Array<{ device_id: string, state: { connected: boolean } }>).find(d => d.device_id === 'ant:28673')
  t.equal(annDevice?.state.connected, false, '/admin/devices shows her strap not connected')
  const annBefore = (await readings(svc, 'ann')).length
  await transport.link(0, true, 'drop')
  await until('ann back', async () => (await health(svc, id))?.connected === 3 && (await readings(svc, 'ann')).length > annBefore)

  // The stick is pulled out: degraded, reopening with backoff; put back: configured again, and everyone streams.
  await transport.link(0, false, 'unplug')
  await until('the stick degraded', async () => (await health(svc, id))?.state === 'degraded')
  t.match(await health(svc, id), { id, state: 'degraded', connected: 0, detail: /reopening/ })
  t.equal(await metric(svc, `hr_relay_source_state{source="${id}",state="degraded"}`), `hr_relay_source_state{source="${id}",state="degraded"} 1`)
  t.equal(await metric(svc, `hr_relay_source_state{source="${id}",state="running"}`), `hr_relay_source_state{source="${id}",state="running"} 0`)
  const counts = await Promise.all(['ann', 'bob', 'cleo'].map(async u => (await readings(svc, u)).length))
  await transport.link(0, true, 'unplug')
  await until('the stick configured again and every strap streaming', async () => {
    const h = await health(svc, id)
    if (h?.state !== 'running' || h.connected !== 3) return false
    const now = await Promise.all(['ann', 'bob', 'cleo'].map(async u => (await readings(svc, u)).length))
    return now.every((n, i) => n > (counts[i] as number))
  })
  t.equal(await metric(svc, `hr_relay_source_state{source="${id}",state="running"}`), `hr_relay_source_state{source="${id}",state="running"} 1`)
  t.equal(await metric(svc, `hr_relay_connected_devices{source="${id}"}`), `hr_relay_connected_devices{source="${id}"} 3`)

  // Every ANT reading the service stored is one of the three members': the straps fall silent with the stick gone,
  // and the count of stored ANT readings settles at exactly the sum of their readings.
  stop()
  await transport.close()
  await until('the stick gone', async () => (await health(svc, id))?.state === 'degraded')
  const storedAnt = async (): Promise<number> => Number((await metric(svc, 'hr_relay_readings_stored_total{source="ant"}'))?.split(' ')[1] ?? -1)
  const members = async (): Promise<number> => (await Promise.all(['ann', 'bob', 'cleo'].map(async u => (await readings(svc, u)).length))).reduce((x, y) => x + y, 0)
  await until('stored ANT readings = the members\' readings', async () => await storedAnt() === await members())
  t.equal(await storedAnt(), await members())
})

t.test('a stick without its network key is not opened, and /health and /metrics say why', async t => {
  const svc = await startTestService(t, { ant: [{ path: '/dev/ant-stick-9' }] })
  t.same(await health(svc, 'ant:/dev/ant-stick-9'), {
    id: 'ant:/dev/ant-stick-9',
    state: 'unavailable',
    connected: 0,
    detail: 'no network_key for the ANT stick /dev/ant-stick-9: set ant[].network_key to the ANT+ network key (16 hex digits), which hr-relay does not ship; see docs/operator.md "ANT+ sticks"'
  })
  t.equal(await metric(svc, 'hr_relay_source_state{source="ant:/dev/ant-stick-9",state="unavailable"}'), 'hr_relay_source_state{source="ant:/dev/ant-stick-9",state="unavailable"} 1')
})

t.test('pairing an ANT+ strap: the id is ant: and a device number 1..1048575', async t => {
  const svc = await startTestService(t)
  await svc.user('dan')
  for (const [deviceId, kind] of [['ant:0', 'ant'], ['ant:1048576', 'ant'], ['ant:007', 'ant'], ['C8:2F:9A:11:22:33', 'ant'], ['ant:12x', 'any']]) {
    const res = await fetch(`${svc.url}/admin/devices`, { method: 'POST', headers: { authorization: `Bearer ${svc.adminToken}`, 'content-type': 'application/json' }, body: JSON.stringify({ device_id: deviceId, username: 'dan', kind }) })
    t.equal(res.status, 400, `${deviceId} (${kind})`)
    t.same(await res.json(), { error_code: 7013, error_message: 'invalid_request', detail: `ANT+ device id "${deviceId}" is not ant:<device number 1..1048575>` })
  }
  t.same((await svc.admin('GET', '/admin/devices')).devices, [], 'nothing half-paired')
  const ok = await runMain(['admin', 'device', 'pair', 'dan', '--kind', 'ant', '--device-id', 'ant:1048575', '--data-dir', svc.dataDir, '--json'])
  t.equal(ok.code, 0, ok.stderr)
  t.match(JSON.parse(ok.stdout), { device_id: 'ant:1048575', kind: 'ant', mqtt_password: null })
  const noKind = await runMain(['admin', 'device', 'pair', 'dan', '--device-id', 'ant:5', '--data-dir', svc.dataDir])
  t.equal(noKind.code, 2)
  t.match(noKind.stderr, /--kind is required \(ble, serial, mqtt, ant, any\)/)
  const noId = await runMain(['admin', 'device', 'pair', 'dan', '--kind', 'ant', '--data-dir', svc.dataDir])
  t.equal(noId.code, 2)
  t.match(noId.stderr, /--device-id is required/)
  const bad = await runMain(['admin', 'device', 'pair', 'dan', '--kind', 'ant', '--device-id', 'ant:0', '--data-dir', svc.dataDir])
  t.equal(bad.code, 1)
  t.match(bad.stderr, /HTTP 400/)
})
