// End to end over the hardware paths: two BLE straps on the BlueZ emulator
// (read by the relay's BLE source through node-ble over a private dbus-daemon)
// and two serial sensors on socat ptys (read by the relay's serial sources),
// driven by the simulator with every fault those transports carry. The whole
// service keeps answering, gets every source back, stores exactly the good
// readings sent while connected, and counts each injected frame or line
// under its drop reason.
//
// The relay stamps BLE and serial readings itself (measured_at = arrival), so
// the simulation is paced by the relay: each good reading waits until the
// member's real-time stream shows it (two readings of one member in the same
// millisecond would be one reading), and each link fault waits until the
// relay has seen the link go and come back. Ticks otherwise run back to back.
import t from 'tap'
import WebSocket from 'ws'
import { rrMsToUnits, rrUnitsToMs } from '../../firmware-protocol/ble.ts'
import type { EmulatedStrap } from '../../device-sim/ble/device.ts'
import { startEmulatedBluez } from '../helpers/bluez.ts'
import { parseFaultFlag, type InstantFaultKind, type LinkFaultKind } from '../../device-sim/faults.ts'
import { Simulation, type SimEvent } from '../../device-sim/runner.ts'
import { loadScenario } from '../../device-sim/scenario.ts'
import { openPtyPair, type PtyPair } from '../../device-sim/serial/pty.ts'
import { BleTransport, strapAddress } from '../../device-sim/transports/ble.ts'
import { MixedTransport } from '../../device-sim/transports/mixed.ts'
import { SerialTransport } from '../../device-sim/transports/serial.ts'
import type { FaultOutcome, SimDevice, SimReading, SimTransport } from '../../device-sim/transports/transport.ts'
import { startTestService } from '../helpers/service.ts'
import { until } from '../helpers/wait.ts'

const SEED = 41
const WAIT_MS = 30_000

const pause = async (ms: number): Promise<void> => { await new Promise(resolve => setTimeout(resolve, ms)) }

interface Streamed { measured_at: number, data: { heart_rate: number } }

/** A member's real-time stream; reached(n) resolves true once n readings arrived (false after WAIT_MS). */
async function stream (url: string, token: string): Promise<{ messages: Streamed[], reached (n: number): Promise<boolean>, close (): void }> {
  const ws = new WebSocket(`${url.replace('http', 'ws')}/api/v1/data/real_time?access_token=${token}`)
  const messages: Streamed[] = []
  const waiters: Array<{ n: number, resolve: (ok: boolean) => void }> = []
  ws.on('message', data => {
    messages.push(JSON.parse(data.toString()) as Streamed)
    for (const w of waiters.filter(w => messages.length >= w.n)) { waiters.splice(waiters.indexOf(w), 1); w.resolve(true) }
  })
  await new Promise<void>((resolve, reject) => { ws.once('open', () => resolve()); ws.once('error', reject) })
  return {
    messages,
    close: () => ws.close(),
    reached: n => new Promise(resolve => {
      if (messages.length >= n) { resolve(true); return }
      const w = { n, resolve: (ok: boolean) => { clearTimeout(timer); resolve(ok) } }
      const timer = setTimeout(() => { waiters.splice(waiters.indexOf(w), 1); resolve(false) }, WAIT_MS)
      waiters.push(w)
    })
  }
}

/** Passes everything to the devices' transport and calls back after each send and link change. */
class Paced implements SimTransport {
  readonly name = 'mixed' as const
  constructor (
    private readonly inner: SimTransport,
    private readonly afterSend: (device: number, reading: SimReading, delivered: boolean) => Promise<void>,
    private readonly afterLink: (device: number, up: boolean, kind: LinkFaultKind) => Promise<void>
  ) {}

  async open (devices: SimDevice[]): Promise<void> { await this.inner.open(devices) }
  describe (): string[] { return this.inner.describe() }
  async send (device: number, reading: SimReading): Promise<boolean> {
    const ok = await this.inner.send(device, reading)
    await this.afterSend(device, reading, ok)
    return ok
  }

  async inject (device: number, kind: Exclude<InstantFaultKind, 'burst'>, reading: SimReading): Promise<FaultOutcome> {
    return await this.inner.inject(device, kind, reading)
  }

  async link (device: number, up: boolean, kind: LinkFaultKind): Promise<FaultOutcome> {
    const outcome = await this.inner.link(device, up, kind)
    await this.afterLink(device, up, kind)
    return outcome
  }

  async close (): Promise<void> { await this.inner.close() }
}

/** `name{label="value"} N` from a Prometheus exposition; 0 when the series does not exist yet. */
function metric (text: string, name: string, label: string, value: string): number {
  const m = new RegExp(`^${name}\\{${label}="${value}"\\} (\\d+(?:\\.\\d+)?)$`, 'm').exec(text)
  return m === null ? 0 : Number(m[1])
}

interface HealthSource { id: string, state: string, connected?: number }
interface Member { username: string, device_id: string, kind: 'ble' | 'serial', label: string, path?: string }

t.test('BLE straps and serial sensors through drops, unplugs, contact loss, garbage, bad checksums, oversized frames and bursts', async t => {
  // Cleanup in reverse order of creation, whatever tap's teardown order is; one failing step does not skip the rest.
  const cleanup: Array<() => Promise<unknown> | unknown> = []
  t.teardown(async () => {
    const failed: unknown[] = []
    for (const fn of cleanup.reverse()) await Promise.resolve().then(fn).catch((err: unknown) => failed.push(err))
    if (failed.length > 0) throw failed[0]
  })

  const bluez = await startEmulatedBluez()
  cleanup.push(() => bluez.stop())
  const framedPair: PtyPair = await openPtyPair()
  cleanup.push(() => framedPair.close())
  const textPair: PtyPair = await openPtyPair()
  cleanup.push(() => textPair.close())

  const svc = await startTestService(t, {
    ble: { enabled: true, backoff_initial_ms: 100, backoff_max_ms: 400, rescan_interval_ms: 200, connect_timeout_ms: 5000, gatt_timeout_ms: 5000 },
    serial: [
      { path: framedPair.relayPath, format: 'framed' },
      { path: textPair.relayPath, format: 'text', device_id: `rower-${SEED}` }
    ]
  })
  cleanup.push(() => svc.stop())

  // Four members: two straps (kind ble), a framed sensor that says `$ID` and a keyed-text one.
  const members: Member[] = [
    { username: 'ana', device_id: strapAddress(SEED, 0), kind: 'ble', label: 'Ana' },
    { username: 'ben', device_id: strapAddress(SEED, 1), kind: 'ble', label: 'Ben' },
    { username: 'cleo', device_id: `bike-${SEED}`, kind: 'serial', label: 'Cleo', path: framedPair.relayPath },
    { username: 'dan', device_id: `rower-${SEED}`, kind: 'serial', label: 'Dan', path: textPair.relayPath }
  ]
  const streams: Array<Awaited<ReturnType<typeof stream>>> = []
  for (const m of members) {
    await svc.user(m.username)
    const paired = await svc.admin('POST', '/admin/devices', { device_id: m.device_id, username: m.username, kind: m.kind })
    t.equal(paired.device_id.toUpperCase(), m.device_id.toUpperCase(), `${m.device_id} paired with ${m.username}`)
    const s = await stream(svc.url, await svc.token(m.username, 'data:heart_rate:read'))
    cleanup.push(() => s.close())
    streams.push(s)
  }

  const devices: SimDevice[] = members.map((m, index) => ({ index, device_id: m.device_id, label: m.label }))
  const ble = new BleTransport({ emulator: { bluez: bluez.emulator, busAddress: bluez.bus.address } })
  const inner = new MixedTransport([
    { transport: ble, devices: devices.slice(0, 2) },
    { transport: new SerialTransport({ format: 'framed', firmwareVersion: 'sim-2.0', pairs: [framedPair] }), devices: devices.slice(2, 3) },
    { transport: new SerialTransport({ format: 'text', textVariant: 'keyed', pairs: [textPair] }), devices: devices.slice(3, 4) }
  ])

  const health = async (): Promise<HealthSource[]> => {
    const res = await fetch(`${svc.url}/health`)
    return (await res.json() as { sources: HealthSource[] }).sources
  }
  const sourceOf = async (id: string): Promise<HealthSource | undefined> => (await health()).find(s => s.id === id)
  const strapOf = (device: number): EmulatedStrap => {
    const strap = ble.strap(device)
    if (strap === undefined) throw new Error(`strap ${device} is not on the emulator`)
    return strap
  }
  const subscribed = async (device: number): Promise<void> => {
    const strap = strapOf(device)
    if (strap.notifying) return
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`the relay did not subscribe to strap ${device} again within ${WAIT_MS} ms`)), WAIT_MS)
      strap.once('subscribed', () => { clearTimeout(timer); resolve() })
    })
  }

  // The relay's side of each fault: pace good readings by the stream, link changes by /health and the straps.
  const expected = members.map(() => 0)
  const notStreamed: string[] = []
  const bleUp = new Set([0, 1])
  const afterSend = async (device: number, reading: SimReading, delivered: boolean): Promise<void> => {
    if (!delivered || reading.heart_rate <= 0) return
    const n = ++expected[device]!
    if (!await streams[device]!.reached(n)) notStreamed.push(`${members[device]!.username} #${n} (${reading.heart_rate} bpm)`)
    await pause(2) // the next reading of this member gets a later measured_at
  }
  const afterLink = async (device: number, up: boolean, kind: LinkFaultKind): Promise<void> => {
    const m = members[device]!
    if (m.kind === 'ble') {
      if (up) {
        bleUp.add(device)
        await subscribed(device)
      } else {
        bleUp.delete(device)
        await until(`the relay to see strap ${device} ${kind === 'drop' ? 'drop' : 'vanish'}`, async () => ((await sourceOf('ble'))?.connected ?? 0) <= bleUp.size)
      }
    } else if (kind === 'unplug') {
      const want = up ? 'running' : 'degraded'
      await until(`serial:${m.path} ${want}`, async () => (await sourceOf(`serial:${m.path}`))?.state === want)
    }
  }
  const transport = new Paced(inner, afterSend, afterLink)
  await transport.open(devices)
  cleanup.push(() => transport.close())

  await subscribed(0)
  await subscribed(1)
  for (const m of members.slice(2)) await until(`serial:${m.path} running`, async () => (await sourceOf(`serial:${m.path}`))?.state === 'running')
  const before = await (await fetch(`${svc.url}/metrics`)).text()

  const sim = new Simulation({
    transport, devices, rateHz: 1, durationS: 24, seed: SEED, scenario: await loadScenario('hiit'), realtime: false,
    faults: [
      parseFaultFlag('contact_lost', '100/3@3'), // ticks 4-6 send 0 bpm
      parseFaultFlag('drop', '100/2@8'), // ticks 9-10 silent, back at 11
      parseFaultFlag('unplug', '100/2@14'), // ticks 15-16 unplugged, back at 17
      parseFaultFlag('garbage', '4'), // 4, 12, 16, 20 s (8 s falls in the drop)
      parseFaultFlag('oversized', '10@2'), // 2, 12, 22 s
      parseFaultFlag('bad_checksum', '6@1', [0, 1, 2]), // 1, 7, 13, 19 s; not the keyed-text sensor
      parseFaultFlag('burst', '100/3@18'),
      parseFaultFlag('skew', '5000') // the relay stamps BLE and serial readings itself
    ]
  })
  const events: SimEvent[] = []
  sim.on('event', ev => { events.push(ev) })
  const stats = await sim.run()

  // The simulator did what each flag says.
  for (const [i, s] of stats.entries()) {
    const serial = members[i]!.kind === 'serial'
    t.same(s.faults, { contact_lost: 1, drop: 1, unplug: 1, garbage: 4, oversized: 3, burst: 1, ...(i === 2 ? { bad_checksum: 4 } : {}) }, `${members[i]!.username}: faults injected`)
    t.same(s.not_applicable, { skew: 1, ...(serial ? {} : { bad_checksum: 4 }) }, `${members[i]!.username}: ${serial ? 'skew' : 'skew and checksums'} do not apply`)
    t.equal(s.sent, 24 - 4 + 3, '24 ticks - 2 dropped - 2 unplugged + a burst of 3')
    t.equal(s.delivered, s.sent, 'every reading left the device while the relay was connected')
    t.equal(s.state, 'up')
  }
  t.same(notStreamed, [], 'every good reading reached its member\'s stream')

  // The relay survived: it answers, and every source is back.
  const res = await fetch(`${svc.url}/health`)
  t.equal(res.status, 200, 'the service still answers')
  const sources = await res.json() as { status: string, sources: HealthSource[] }
  t.equal(sources.status, 'ok')
  t.match(sources.sources.find(s => s.id === 'ble'), { state: 'running', connected: 2 }, 'both straps connected again')
  for (const m of members.slice(2)) t.match(sources.sources.find(s => s.id === `serial:${m.path}`), { state: 'running', connected: 1 }, `${m.path} open again`)

  // Stored: exactly the good readings, in order; 0 bpm is not stored.
  const readingsOf = (i: number): SimReading[] => events.flatMap(ev => ev.type === 'reading' && ev.device === i && ev.delivered ? [ev.reading] : [])
  for (const [i, m] of members.entries()) {
    const sent = readingsOf(i)
    const good = sent.filter(r => r.heart_rate > 0)
    t.equal(sent.length - good.length, 3, `${m.username}: three 0 bpm readings sent`)
    t.equal(good.length, 20)
    const stored = (await svc.admin('GET', `/admin/readings/${m.username}`)).readings as Array<{ measured_at: number, heart_rate: number, source: string, sensor_contact?: boolean, rr_intervals_ms?: number[] }>
    t.same(stored.map(r => r.heart_rate), good.map(r => r.heart_rate), `${m.username}: exactly the good readings are stored, in order`)
    t.same(new Set(stored.map(r => r.source)), new Set([m.kind]), `${m.username}: every reading from the ${m.kind} source`)
    if (m.kind === 'ble') t.ok(stored.every(r => r.sensor_contact === true), `${m.username}: skin contact on every stored reading`)
    t.ok(stored.every((r, k) => k === 0 || r.measured_at > stored[k - 1]!.measured_at), 'stamped by the relay in arrival order')
    if (m.kind === 'ble') {
      t.same(stored.map(r => r.rr_intervals_ms ?? []), good.map(r => r.rr_intervals_ms.map(ms => rrUnitsToMs(rrMsToUnits(ms)))), `${m.username}: RR intervals (1/1024 s on the air)`)
    } else if (m.username === 'cleo') {
      t.same(stored.map(r => r.rr_intervals_ms ?? []), good.map(r => r.rr_intervals_ms), 'cleo: RR intervals of the framed lines')
    }
    t.same(streams[i]!.messages.map(s => [s.measured_at, s.data.heart_rate]), stored.map(r => [r.measured_at, r.heart_rate]), `${m.username}: the stream showed the same readings`)
  }

  // Every injected frame or line was counted under its reason; nothing else was dropped.
  const injected = (kind: string, devs: number[]): number => events.filter(ev => ev.type === 'fault' && ev.outcome === 'injected' && ev.kind === kind && devs.includes(ev.device)).length
  const want: Record<string, number> = {
    ble_malformed: injected('garbage', [0, 1]) + injected('oversized', [0, 1]),
    serial_garbage: injected('garbage', [2, 3]),
    serial_bad_checksum: injected('bad_checksum', [2]),
    serial_too_long: injected('oversized', [2, 3])
  }
  t.same(want, { ble_malformed: 14, serial_garbage: 8, serial_bad_checksum: 4, serial_too_long: 6 })
  const delta = (text: string, reason: string): number => metric(text, 'hr_relay_dropped_total', 'reason', reason) - metric(before, 'hr_relay_dropped_total', 'reason', reason)
  let after = ''
  await until('the drop counters to reach the injected faults', async () => {
    after = await (await fetch(`${svc.url}/metrics`)).text()
    return Object.entries(want).every(([reason, n]) => delta(after, reason) >= n) && metric(after, 'hr_relay_ingest_dropped_total', 'reason', 'non_positive') >= 12
  }).catch(() => {})
  for (const [reason, n] of Object.entries(want)) t.equal(delta(after, reason), n, `hr_relay_dropped_total{reason="${reason}"} rose by ${n}`)
  for (const reason of ['ble_backpressure', 'serial_backpressure', 'serial_out_of_range']) t.equal(delta(after, reason), 0, `nothing dropped as ${reason}`)
  t.equal(metric(after, 'hr_relay_ingest_dropped_total', 'reason', 'non_positive'), 12, 'the twelve 0 bpm readings reached the pipeline and were not stored')
  t.equal(metric(after, 'hr_relay_ingest_dropped_total', 'reason', 'duplicate'), 0, 'no two readings of a member shared a millisecond')
  t.equal(metric(after, 'hr_relay_ingest_dropped_total', 'reason', 'unpaired'), 0, 'every reading came from a paired device (the framed sensor kept its $ID across the unplug)')
  t.equal(metric(after, 'hr_relay_readings_stored_total', 'source', 'ble'), 40)
  t.equal(metric(after, 'hr_relay_readings_stored_total', 'source', 'serial'), 40)
})
