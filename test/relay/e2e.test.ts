// The relay end to end: the whole service with the BLE source reading three
// straps through node-ble over a private dbus-daemon (the BlueZ emulator fakes
// only the radio) and two serial sensors on socat pseudo-terminals. Readings
// come back through GET latest, the user WebSocket and an MQTT subscription;
// then a strap drops, a pty is unplugged, both come back, and every reading
// sent while connected is stored exactly once.
import t from 'tap'
import WebSocket from 'ws'
import mqtt from 'mqtt'
import { startEmulatedBluez } from '../helpers/bluez.ts'
import { openPtyPair } from '../../device-sim/serial/pty.ts'
import { SerialDeviceSim } from '../../device-sim/serial/device.ts'
import { startTestService } from '../helpers/service.ts'
import { until } from '../helpers/wait.ts'

const STRAPS = ['C0:FF:EE:00:00:01', 'C0:FF:EE:00:00:02', 'C0:FF:EE:00:00:03']

t.test('BLE straps and serial sensors end to end, through a strap drop and an unplug', async t => {
  const ble = await startEmulatedBluez()
  t.teardown(() => ble.stop())
  const straps = STRAPS.map((address, i) => ble.emulator.addStrap({ address, name: `Strap ${i + 1}`, battery: 90 - i }))

  const ptyFramed = await openPtyPair()
  const ptyText = await openPtyPair()
  t.teardown(async () => { await ptyFramed.close(); await ptyText.close() })
  const bike = new SerialDeviceSim({ path: ptyFramed.devicePath, format: 'framed' })
  const rower = new SerialDeviceSim({ path: ptyText.devicePath, format: 'text', textVariant: 'keyed' })
  await bike.open()
  await rower.open()
  t.teardown(async () => { await bike.close(); await rower.close() })

  const svc = await startTestService(t, {
    ble: { enabled: true, backoff_initial_ms: 100, backoff_max_ms: 400, rescan_interval_ms: 200, connect_timeout_ms: 5000, gatt_timeout_ms: 5000 },
    serial: [
      { path: ptyFramed.relayPath, format: 'framed' },
      { path: ptyText.relayPath, format: 'text', device_id: 'rower-1' }
    ]
  })

  // Five members, one device each, paired through the admin API as the operator does.
  const devices = [...STRAPS.map(a => ({ id: a, kind: 'ble' })), { id: 'bike-1', kind: 'serial' }, { id: 'rower-1', kind: 'serial' }]
  const members: Array<{ username: string, profile: string, token: string, device: string }> = []
  for (const [i, d] of devices.entries()) {
    const username = `member${i + 1}`
    const profile = await svc.user(username)
    await svc.admin('POST', '/admin/devices', { device_id: d.id, username, kind: d.kind })
    members.push({ username, profile, token: await svc.token(username, 'data:heart_rate:read'), device: d.id })
  }

  // Live consumers: one WebSocket and one MQTT subscription per member.
  const wsSeen = new Map<string, number[]>()
  const mqttSeen = new Map<string, number[]>()
  const info = JSON.parse(await import('node:fs/promises').then(fs => fs.readFile(`${svc.dataDir}/server.json`, 'utf8')))
  for (const m of members) {
    wsSeen.set(m.profile, [])
    mqttSeen.set(m.profile, [])
    const ws = new WebSocket(`${svc.url.replace('http', 'ws')}/api/v1/data/real_time?access_token=${m.token}`)
    ws.on('message', data => { wsSeen.get(m.profile)!.push(JSON.parse(data.toString()).data.heart_rate) })
    await new Promise((resolve, reject) => { ws.once('open', resolve); ws.once('error', reject) })
    t.teardown(() => ws.close())
    const client = mqtt.connect(`mqtt://127.0.0.1:${info.mqtt_port}`, { username: m.username, password: m.token, reconnectPeriod: 0 })
    t.teardown(() => client.end(true))
    await new Promise((resolve, reject) => { client.once('connect', resolve); client.once('error', reject) })
    const granted = await client.subscribeAsync(`hr-relay/v1/users/${m.profile}/heart_rate`, { qos: 1 })
    t.equal(granted[0]?.qos, 1, `MQTT subscription granted for ${m.username}`)
    client.on('message', (_topic, payload) => { mqttSeen.get(m.profile)!.push(JSON.parse(payload.toString()).data.heart_rate) })
  }

  await until('all three straps subscribed', () => straps.every(s => s.notifying))
  await bike.sendIdentity('bike-1', '1.2.0')

  const sent = new Map<string, number[]>(members.map(m => [m.device, []]))
  const stored = async (username: string): Promise<number[]> =>
    (await svc.admin('GET', `/admin/readings/${username}`)).readings.map((r: { heart_rate: number }) => r.heart_rate)

  // One round: every device sends one reading; waits until each is stored.
  let bpm = 60
  const round = async (): Promise<void> => {
    bpm += 1
    for (const [i, strap] of straps.entries()) {
      const value = bpm + i * 10
      t.equal(strap.sendHeartRate({ heart_rate: value, sensor_contact: 'detected', rr_intervals: [1024] }), true)
      sent.get(STRAPS[i]!)!.push(value)
    }
    await bike.sendReading(bpm + 30, [800])
    sent.get('bike-1')!.push(bpm + 30)
    await rower.sendReading(bpm + 40)
    sent.get('rower-1')!.push(bpm + 40)
    for (const m of members) {
      const want = sent.get(m.device)!.length
      await until(`${m.username} has ${want} readings`, async () => (await stored(m.username)).length >= want)
    }
    await new Promise(r => setTimeout(r, 5)) // distinct measured_at per device for the next round
  }

  for (let i = 0; i < 5; i++) await round()

  for (const m of members) {
    const latest = await fetch(`${svc.url}/api/v1/data/heart_rate/latest`, { headers: { authorization: `Bearer ${m.token}` } })
    t.equal(latest.status, 200)
    const body = await latest.json() as { measured_at: number, data: { heart_rate: number } }
    t.equal(body.data.heart_rate, sent.get(m.device)!.at(-1), `latest of ${m.username}`)
    t.type(body.measured_at, 'number')
  }
  await until('WebSocket and MQTT consumers saw all five', () => members.every(m => wsSeen.get(m.profile)!.length >= 5 && mqttSeen.get(m.profile)!.length >= 5))
  for (const m of members) {
    t.same(wsSeen.get(m.profile), sent.get(m.device), `WebSocket of ${m.username}`)
    t.same(mqttSeen.get(m.profile), sent.get(m.device), `MQTT of ${m.username}`)
  }

  // A strap drops and the bike's serial cable is pulled; both come back.
  const health = async (): Promise<Array<{ id: string, state: string, connected?: number }>> => (await (await fetch(`${svc.url}/health`)).json() as { sources: any[] }).sources
  straps[0]!.dropLink()
  await bike.close()
  await ptyFramed.unplug()
  await until('serial source degraded', async () => (await health()).some(s => s.id === `serial:${ptyFramed.relayPath}` && s.state === 'degraded'))
  await until('strap 1 reconnected', () => straps[0]!.notifying)
  await ptyFramed.plug()
  await bike.open()
  await until('serial source running again', async () => (await health()).some(s => s.id === `serial:${ptyFramed.relayPath}` && s.state === 'running'))
  await bike.sendIdentity('bike-1', '1.2.0')

  for (let i = 0; i < 5; i++) await round()

  for (const m of members) {
    t.same(await stored(m.username), sent.get(m.device), `${m.username}: every reading sent while connected stored exactly once, in order`)
  }
  const sources = await health()
  t.equal(sources.find(s => s.id === 'ble')?.connected, 3, 'three straps connected again')
  t.equal(sources.find(s => s.id === `serial:${ptyText.relayPath}`)?.state, 'running')
  const metrics = await (await fetch(`${svc.url}/metrics`)).text()
  t.match(metrics, /hr_relay_readings_stored_total\{source="ble"\} 30/)
  t.match(metrics, /hr_relay_readings_stored_total\{source="serial"\} 20/)
})
