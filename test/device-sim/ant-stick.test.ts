// The simulated ANT stick on a real pty pair (socat), driven from the host end with serialport as the relay will:
// it answers the configuration messages as a stick does, then sends every strap's pages as extended broadcasts,
// which the protocol's own codec turns back into the beats that were fed, RR intervals included.
import t from 'tap'
import { SerialPort } from 'serialport'
import {
  ANT_MESSAGE, HEART_RATE_DEVICE_TYPE, decodeAntMessage, decodeBroadcast, decodeChannelEvent, encodeAntMessage,
  parseNetworkKey, scanModeSetup, type AntMessage
} from '../../firmware-protocol/ant.ts'
import { AntFrameSplitter } from '../../firmware-protocol/ant-framing.ts'
import { AntHeartRateBeats, type AntBeatsReading } from '../../firmware-protocol/ant-heart-rate.ts'
import { openPtyPair } from '../../device-sim/serial/pty.ts'
import { AntStickSim, CHANNEL_IN_WRONG_STATE, STARTUP_COMMAND_RESET } from '../../device-sim/ant/stick.ts'
import { until } from '../helpers/wait.ts'

async function host (path: string): Promise<{ port: SerialPort, messages: AntMessage[], closed: Promise<void> }> {
  const port = new SerialPort({ path, baudRate: 115200, autoOpen: false })
  await new Promise<void>((resolve, reject) => port.open(err => err ? reject(err) : resolve()))
  const messages: AntMessage[] = []
  const splitter = new AntFrameSplitter()
  splitter.on('data', (frame: Uint8Array) => messages.push(decodeAntMessage(frame)))
  port.pipe(splitter)
  port.on('error', () => {})
  const closed = new Promise<void>(resolve => port.once('close', () => resolve()))
  return { port, messages, closed }
}

async function send (port: SerialPort, frames: Uint8Array[]): Promise<void> {
  for (const f of frames) await new Promise<void>((resolve, reject) => port.write(Buffer.from(f), err => err ? reject(err) : resolve()))
}

t.test('the stick answers the scan-mode setup, then broadcasts each strap\'s beats', async t => {
  const pair = await openPtyPair()
  t.teardown(() => pair.close())
  const stick = new AntStickSim({ path: pair.devicePath })
  await stick.open()
  t.teardown(() => stick.close())
  const h = await host(pair.relayPath)
  t.teardown(() => new Promise<void>(resolve => h.port.isOpen ? h.port.close(() => resolve()) : resolve()))

  const setup = scanModeSetup(parseNetworkKey('0102030405060708'))
  await send(h.port, setup)
  await until('seven answers', () => h.messages.length >= 7, 20_000)
  t.same(stick.received.map(m => m.id), [0x4a, 0x46, 0x42, 0x51, 0x45, 0x6e, 0x5b], 'the stick received the setup in order')
  t.same(h.messages[0], { id: ANT_MESSAGE.STARTUP, data: Uint8Array.of(STARTUP_COMMAND_RESET) }, 'a reset is answered by a startup message')
  t.same(h.messages.slice(1, 7).map(m => decodeChannelEvent(m.data)), [0x46, 0x42, 0x51, 0x45, 0x6e, 0x5b].map(id => ({ channel: 0, messageId: id, code: 0 })))
  t.ok(stick.receiving)

  stick.addStrap({ deviceNumber: 70_000, rssi: -50, batteryPercent: 77 })
  stick.addStrap({ deviceNumber: 321, rssi: -72 })
  const fed = { 70_000: [480, 505, 470, 490], 321: [800, 790] }
  stick.beats(70_000, 124, fed[70_000], 77)
  stick.beats(321, 75, fed[321])
  const trackers = new Map<number, AntHeartRateBeats>()
  const readings = new Map<number, AntBeatsReading[]>()
  const rssi = new Map<number, number>()
  let seen = 0
  const pump = (): void => {
    for (; seen < h.messages.length; seen++) {
      const m = h.messages[seen] as AntMessage
      if (m.id !== ANT_MESSAGE.BROADCAST_DATA) continue
      const b = decodeBroadcast(m.data)
      t.equal(b.id?.deviceType, HEART_RATE_DEVICE_TYPE)
      const n = b.id!.deviceNumber
      rssi.set(n, b.rssi!)
      let tr = trackers.get(n)
      if (tr === undefined) { tr = new AntHeartRateBeats(0); trackers.set(n, tr) }
      const r = tr.payload(b.payload, Date.now())
      if (r !== undefined) readings.set(n, [...(readings.get(n) ?? []), r])
    }
  }
  const rrOf = (n: number): number[] => (readings.get(n) ?? []).flatMap(r => r.rr_intervals_ms)
  // The first page of each strap only sets the tracker's state; the fed beats after it give their RR intervals.
  await until('the fed beats', () => { pump(); return rrOf(70_000).length >= 3 && rrOf(321).length >= 1 }, 30_000)
  t.same(rssi.get(70_000), -50, 'the RSSI rides on each broadcast')
  t.same(rssi.get(321), -72)
  // A beat's time is quantised to the strap's 1/1024 s clock: each interval is the fed one within a millisecond.
  const within1 = (got: number[], want: number[]): boolean => got.length > 0 && got.every((v, i) => Math.abs(v - (want[i] as number)) <= 1)
  t.ok(within1(rrOf(70_000), fed[70_000]), `the 20-bit strap's RR intervals ${JSON.stringify(rrOf(70_000))} are the fed ${JSON.stringify(fed[70_000])}`)
  t.ok(within1(rrOf(321), fed[321]), `${JSON.stringify(rrOf(321))} against ${JSON.stringify(fed[321])}`)
  t.equal(readings.get(70_000)!.at(-1)!.heart_rate, 124)
  t.equal(readings.get(70_000)!.at(-1)!.battery_percent, undefined, 'no page 7 yet in the first 64 messages')
})

t.test('scan mode refused by a stick without it; unplugging the stick closes the host\'s port', async t => {
  const pair = await openPtyPair()
  t.teardown(() => pair.close())
  const stick = new AntStickSim({ path: pair.devicePath, scanMode: false })
  await stick.open()
  t.teardown(() => stick.close())
  const h = await host(pair.relayPath)
  await send(h.port, [encodeAntMessage(ANT_MESSAGE.OPEN_RX_SCAN_MODE, [0])])
  await until('an answer', () => h.messages.length >= 1, 20_000)
  t.same(decodeChannelEvent(h.messages[0]!.data), { channel: 0, messageId: 0x5b, code: CHANNEL_IN_WRONG_STATE })
  t.equal(stick.receiving, false)
  await pair.unplug()
  await h.closed
  t.equal(h.port.isOpen, false, 'the host sees the stick go, as when it is pulled out')
})
