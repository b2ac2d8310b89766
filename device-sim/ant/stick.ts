// A simulated ANT USB stick on the device end of a pty pair (serial/pty.ts),
// speaking the ANT serial message protocol as a real stick does: it answers
// the host's configuration messages (a startup message after a reset, a
// channel response naming each other message), and once the host has opened
// continuous scan mode or a heart-rate channel, it sends every simulated
// strap's data pages as extended broadcasts (channel id and RSSI), each strap
// at its own ~4 Hz message period. Beats are fed as RR intervals (from the
// physiology model) and fall due one by one, so a page carries the last beat
// that happened before it, as a strap's does.
import { SerialPort } from 'serialport'
import {
  ANT_MESSAGE, HEART_RATE_CHANNEL_PERIOD, HEART_RATE_DEVICE_TYPE, RESPONSE_NO_ERROR,
  decodeAntMessage, encodeAntMessage, encodeBroadcast, encodeHeartRatePage, type AntMessage
} from '../../firmware-protocol/ant.ts'
import { AntFrameSplitter } from '../../firmware-protocol/ant-framing.ts'

/** Channel response code for a message the stick cannot act on in its state (CHANNEL_IN_WRONG_STATE). */
export const CHANNEL_IN_WRONG_STATE = 0x15
/** Startup message reason: a reset command. */
export const STARTUP_COMMAND_RESET = 0x20
/** One message period of an ANT+ heart-rate strap, ms (8070 / 32768 s). */
export const STRAP_PERIOD_MS = HEART_RATE_CHANNEL_PERIOD * 1000 / 32768

export interface SimStrap {
  deviceNumber: number
  /** Lower nibble of the transmission type; the upper one carries device number bits 16-19. Default 1. */
  transmissionType?: number
  rssi: number
  batteryPercent?: number
  /**
   * A background page (1, 2, 3 or 7) the strap sends first, for its first four messages, before the usual rotation;
   * 7 makes its battery level known at once. Default: none, the rotation from its start.
   */
  firstBackgroundPage?: 1 | 2 | 3 | 7
}

interface StrapState extends Required<Pick<SimStrap, 'deviceNumber' | 'transmissionType'>> {
  rssi: number
  batteryPercent: number
  heartRate: number
  /** Beats not yet due: the time each falls due (ms, Date.now() clock). */
  due: number[]
  /** The time of the last beat scheduled (due or not). */
  lastBeatAt: number
  /** The last interval fed (ms); 0 before the first. */
  lastRr: number
  /** The time (Date.now() clock) the strap's event-time clock reads 0. */
  epoch: number
  eventTime: number
  previousEventTime: number
  beatCount: number
  messages: number
  firstBackgroundPage: number | undefined
  /** False while the strap is out of the stick's range: it keeps beating, and nothing of it is heard. */
  inRange: boolean
  timer: NodeJS.Timeout | undefined
}

export interface AntStickOptions {
  path: string
  baudRate?: number
  /** Answer OPEN_RX_SCAN_MODE (true, default) or refuse it, as sticks without scan mode do. */
  scanMode?: boolean
}

/** A time on a strap's own 1/1024 s event-time clock, which wraps at 64 s. */
function eventTimeAt (at: number, epoch: number): number {
  return Math.round((at - epoch) * 1024 / 1000) & 0xffff
}

/** The background pages a strap rotates through, one every 65th message for four messages (Heart Rate profile). */
const BACKGROUND = [1, 2, 3, 7]

export class AntStickSim {
  private port: SerialPort | undefined
  private splitter: AntFrameSplitter | undefined
  private readonly straps = new Map<number, StrapState>()
  private networkKey: Uint8Array | undefined
  private scanning = false
  private readonly openChannels = new Set<number>()
  /** Every message the host sent, in order (tests check the configuration). */
  readonly received: AntMessage[] = []
  /** Broadcast messages written to the host. */
  broadcasts = 0
  /** Called after each broadcast is written, with what its page carried (the bench times a beat from its first page). */
  onBroadcast: ((deviceNumber: number, beatCount: number, heartRate: number) => void) | undefined

  constructor (readonly options: AntStickOptions) {}

  get isOpen (): boolean { return this.port?.isOpen === true }
  /** True once the host opened scan mode or a channel (the stick is receiving). */
  get receiving (): boolean { return this.scanning || this.openChannels.size > 0 }

  async open (): Promise<void> {
    const port = new SerialPort({ path: this.options.path, baudRate: this.options.baudRate ?? 115200, autoOpen: false })
    port.on('error', () => {})
    await new Promise<void>((resolve, reject) => port.open(err => err ? reject(err) : resolve()))
    const splitter = new AntFrameSplitter()
    splitter.on('data', (frame: Uint8Array) => { this.onMessage(decodeAntMessage(frame)) })
    port.pipe(splitter)
    this.port = port
    this.splitter = splitter
    for (const s of this.straps.values()) this.schedule(s)
  }

  async close (): Promise<void> {
    for (const s of this.straps.values()) { clearTimeout(s.timer); s.timer = undefined }
    const port = this.port
    this.port = undefined
    this.scanning = false
    this.openChannels.clear()
    if (port === undefined) return
    if (this.splitter !== undefined) { port.unpipe(this.splitter); this.splitter.removeAllListeners(); this.splitter = undefined }
    if (port.isOpen) await new Promise<void>(resolve => port.close(() => resolve()))
    port.removeAllListeners()
  }

  /** Writes bytes exactly as given (fault injection: noise, a broken message). */
  async writeRaw (bytes: Uint8Array): Promise<void> {
    const port = this.port
    if (port === undefined) throw new Error('stick is not open')
    await new Promise<void>((resolve, reject) => port.write(Buffer.from(bytes), err => err ? reject(err) : resolve()))
    await new Promise<void>((resolve, reject) => port.drain(err => err ? reject(err) : resolve()))
  }

  /** Adds a strap (it starts sending once the host receives). */
  addStrap (strap: SimStrap): void {
    if (this.straps.has(strap.deviceNumber)) throw new Error(`strap ${strap.deviceNumber} exists`)
    const now = Date.now()
    const epoch = now - Math.floor(Math.random() * 64_000)
    const s: StrapState = {
      deviceNumber: strap.deviceNumber,
      transmissionType: strap.transmissionType ?? 1,
      rssi: strap.rssi,
      batteryPercent: strap.batteryPercent ?? 100,
      heartRate: 0,
      due: [],
      lastBeatAt: now,
      lastRr: 0,
      epoch,
      // The strap has been beating before it was heard: its last beat is "now".
      eventTime: eventTimeAt(now, epoch),
      previousEventTime: eventTimeAt(now, epoch),
      beatCount: 0,
      messages: 0,
      firstBackgroundPage: strap.firstBackgroundPage,
      inRange: true,
      timer: undefined
    }
    this.straps.set(strap.deviceNumber, s)
    if (this.port !== undefined) this.schedule(s)
  }

  /** One second of a strap's physiology: its computed rate and the RR intervals of the beats in that second. */
  beats (deviceNumber: number, heartRate: number, rrIntervalsMs: number[], batteryPercent?: number): void {
    const s = this.strap(deviceNumber)
    if (batteryPercent !== undefined) s.batteryPercent = batteryPercent
    const now = Date.now()
    // A strap that has sent nothing yet is put on now: its last beat is now, so its first interval is the first fed.
    if (s.heartRate === 0 && s.messages === 0 && s.due.length === 0) {
      s.lastBeatAt = now
      s.eventTime = s.previousEventTime = eventTimeAt(now, s.epoch)
    }
    s.heartRate = heartRate
    // Beats follow the last one. A pause in the feed (more than two seconds) is the feeder falling behind, not the
    // heart stopping: the strap keeps beating at its last interval until now (after a minute or more, or with no
    // interval yet, it starts again from now).
    let at = s.lastBeatAt
    if (at < now - 2000) {
      if (s.lastRr > 0 && now - at <= 60_000) {
        while (at + s.lastRr <= now) { at += s.lastRr; s.due.push(at) }
      } else {
        at = now
      }
    }
    for (const rr of rrIntervalsMs) { at += rr; s.due.push(at); s.lastRr = rr }
    s.lastBeatAt = at
  }

  /** A strap walks out of the stick's range (false) or back into it (true). */
  setInRange (deviceNumber: number, inRange: boolean): void {
    this.strap(deviceNumber).inRange = inRange
  }

  private strap (deviceNumber: number): StrapState {
    const s = this.straps.get(deviceNumber)
    if (s === undefined) throw new Error(`no strap ${deviceNumber}`)
    return s
  }

  /** Each strap keeps its own period, started at a random phase as straps are switched on at random times. */
  private schedule (s: StrapState): void {
    clearTimeout(s.timer)
    const tick = (): void => {
      s.timer = setTimeout(tick, STRAP_PERIOD_MS)
      s.timer.unref()
      this.sendPage(s)
    }
    s.timer = setTimeout(tick, Math.random() * STRAP_PERIOD_MS)
    s.timer.unref()
  }

  private sendPage (s: StrapState): void {
    const now = Date.now()
    while (s.due.length > 0 && (s.due[0] as number) <= now) {
      const at = s.due.shift() as number
      s.previousEventTime = s.eventTime
      s.eventTime = eventTimeAt(at, s.epoch)
      s.beatCount = (s.beatCount + 1) & 0xff
    }
    if (!this.receiving || this.port === undefined || s.heartRate === 0 || !s.inRange) return
    const n = s.messages++
    // Pages: data page 4 with the toggle bit flipping every four messages; every 65th message starts four of a
    // background page (1, 2, 3 and 7 in turn).
    const block = Math.floor(n / 4)
    const first = block === 0 ? s.firstBackgroundPage : undefined
    const background = first ?? (block % 16 === 15 ? BACKGROUND[Math.floor(block / 16) % BACKGROUND.length] as number : undefined)
    const page = encodeHeartRatePage({
      page: background ?? 4,
      toggle: block % 2 === 1,
      eventTime: s.eventTime,
      beatCount: s.beatCount,
      heartRate: s.heartRate,
      previousEventTime: s.previousEventTime,
      batteryPercent: s.batteryPercent,
      batteryStatus: 2
    })
    const id = { deviceNumber: s.deviceNumber, deviceType: HEART_RATE_DEVICE_TYPE, transmissionType: s.transmissionType }
    this.port.write(Buffer.from(encodeBroadcast(0, page, id, s.rssi)))
    this.broadcasts++
    this.onBroadcast?.(s.deviceNumber, s.beatCount, s.heartRate)
  }

  private reply (id: number, data: number[]): void {
    this.port?.write(Buffer.from(encodeAntMessage(id, data)))
  }

  private onMessage (m: AntMessage): void {
    this.received.push(m)
    const channel = m.data[0] ?? 0
    const ok = (code = RESPONSE_NO_ERROR): void => { this.reply(ANT_MESSAGE.CHANNEL_EVENT, [channel, m.id, code]) }
    switch (m.id) {
      case ANT_MESSAGE.RESET_SYSTEM:
        this.networkKey = undefined
        this.scanning = false
        this.openChannels.clear()
        this.reply(ANT_MESSAGE.STARTUP, [STARTUP_COMMAND_RESET])
        return
      case ANT_MESSAGE.SET_NETWORK_KEY:
        this.networkKey = m.data.slice(1, 9)
        ok()
        return
      case ANT_MESSAGE.OPEN_RX_SCAN_MODE:
        if (this.options.scanMode === false || this.networkKey === undefined) { ok(CHANNEL_IN_WRONG_STATE); return }
        this.scanning = true
        ok()
        return
      case ANT_MESSAGE.OPEN_CHANNEL:
        if (this.networkKey === undefined) { ok(CHANNEL_IN_WRONG_STATE); return }
        this.openChannels.add(channel)
        ok()
        return
      case ANT_MESSAGE.CLOSE_CHANNEL:
        this.openChannels.delete(channel)
        this.scanning = false
        ok()
        return
      default:
        ok()
    }
  }
}
