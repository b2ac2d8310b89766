// ANT source: an ANT USB stick on a serial port (USB1 sticks are USB-serial
// chips; USB2 and USB-m sticks once the kernel's usbserial driver is bound to
// them, see deploy/), speaking the ANT serial message protocol of
// firmware-protocol/ant.ts. One stick in continuous scan mode hears every
// ANT+ heart-rate strap in the room: each broadcast carries the strap's
// device number (extended data), and each strap's pages go through its own
// AntHeartRateBeats, which makes at most one reading a second from its new
// beats. A stick that refuses scan mode gets one wildcard heart-rate channel
// per strap slot instead.
//
// Readings carry `device_id: ant:<device number>`; the pipeline stores those of
// paired straps only. Every strap heard is reported as a sighting (signal
// strength and battery) for the operator's pairing list, at most once a second.
//
// Lifecycle: as the serial source (PortLink): an unplugged stick makes the
// source 'degraded' and the same path is reopened with backoff; every open
// configures the stick again.
import pino from 'pino'
import type { SerialPort } from 'serialport'
import type { Source, SourceSink, SourceStatus } from './source.ts'
import {
  ANT_MESSAGE, HEART_RATE_DEVICE_TYPE, RESPONSE_NO_ERROR, antDeviceId, channelsSetup, decodeAntMessage, decodeBroadcast,
  decodeChannelEvent, scanModeSetup, type AntMessage
} from '../../firmware-protocol/ant.ts'
import { AntFrameSplitter } from '../../firmware-protocol/ant-framing.ts'
import { AntHeartRateBeats } from '../../firmware-protocol/ant-heart-rate.ts'
import { isProtocolError } from '../../firmware-protocol/errors.ts'
import type { BackoffOptions } from '../reopen-backoff.ts'
import { PortLink } from './port-link.ts'

export interface AntSourceOptions {
  path: string
  /** The ANT+ network key, 8 bytes. */
  networkKey: Uint8Array
  /** Default 115200 (ANT USB sticks). */
  baudRate?: number
  /** Channels opened when the stick has no scan mode. Default 8. */
  fallbackChannels?: number
  /** How long the stick may take to answer one configuration message (ms). Default 2000. */
  answerTimeoutMs?: number
  /** A strap unheard for this long is reported gone (ms). Default 5000. */
  silentAfterMs?: number
  reopen?: BackoffOptions
  presenceCheckMs?: number
  /** Readings handed to the sink and not yet settled before new ones are dropped. Default 256. */
  maxInFlight?: number
  /**
   * Whether a strap's readings go to the sink; the composition root passes "is this device paired", so that the
   * straps of everyone else in range cost the pipeline nothing. Every strap heard is still sighted. Default: all.
   */
  shouldSubmit?: (deviceId: string) => boolean
  logger?: pino.Logger
}

export const ANT_DEFAULTS = {
  baudRate: 115200,
  fallbackChannels: 8,
  answerTimeoutMs: 2000,
  silentAfterMs: 5000,
  presenceCheckMs: 1000,
  maxInFlight: 256
} as const

interface Strap {
  beats: AntHeartRateBeats
  rssi: number | undefined
  heardAt: number
  reportedAt: number
  connected: boolean
}

/** The stick did not answer, or refused, a configuration message. */
class StickSetupError extends Error {
  constructor (readonly messageId: number, readonly code: number | undefined) {
    super(code === undefined
      ? `the stick did not answer message 0x${messageId.toString(16)}`
      : `the stick refused message 0x${messageId.toString(16)} (code 0x${code.toString(16)})`)
  }
}

export class AntSource implements Source {
  readonly id: string
  private readonly o: AntSourceOptions
  private readonly log: pino.Logger
  private readonly link: PortLink
  private readonly straps = new Map<number, Strap>()
  private sink: SourceSink | undefined
  private signal: AbortSignal | undefined
  private splitter: AntFrameSplitter | undefined
  private configured = false
  private answer: ((m: AntMessage) => void) | undefined
  private sweepTimer: NodeJS.Timeout | undefined
  private inFlight = 0
  private started = false
  private stopped = false
  private current: SourceStatus = { state: 'starting', connected: 0 }
  private readonly onAbort = (): void => { void this.stop() }

  constructor (options: AntSourceOptions) {
    this.o = options
    this.id = `ant:${options.path}`
    this.log = (options.logger ?? pino({ enabled: false })).child({ component: 'ant', path: options.path })
    this.link = new PortLink({
      path: options.path,
      baudRate: options.baudRate ?? ANT_DEFAULTS.baudRate,
      ...(options.reopen === undefined ? {} : { reopen: options.reopen }),
      presenceCheckMs: options.presenceCheckMs ?? ANT_DEFAULTS.presenceCheckMs,
      // A stick counts as back once it has answered its configuration, not when its port opens.
      healthyOnOpen: false,
      log: this.log
    }, {
      opened: port => { this.attach(port) },
      closed: (port, reason) => { this.detach(port, reason) },
      degraded: detail => { this.setStatus({ state: 'degraded', detail, connected: 0 }) }
    })
  }

  status (): SourceStatus { return { ...this.current } }

  async start (signal: AbortSignal, sink: SourceSink): Promise<void> {
    if (this.started) throw new Error(`${this.id} already started`)
    this.started = true
    this.sink = sink
    this.signal = signal
    if (signal.aborted) { await this.stop(); return }
    signal.addEventListener('abort', this.onAbort, { once: true })
    this.setStatus({ state: 'starting', connected: 0 }, true)
    this.sweepTimer = setInterval(() => { this.sweep(Date.now()) }, 1000)
    await this.link.open()
  }

  async stop (): Promise<void> {
    if (this.stopped) return
    this.stopped = true
    this.signal?.removeEventListener('abort', this.onAbort)
    if (this.sweepTimer !== undefined) clearInterval(this.sweepTimer)
    this.sweepTimer = undefined
    await this.link.stop()
    this.setStatus({ state: 'stopped', connected: 0 })
  }

  // --- the stick ------------------------------------------------------------

  private attach (port: SerialPort): void {
    const splitter = new AntFrameSplitter()
    splitter.on('data', (frame: Uint8Array) => { this.onFrame(frame) })
    splitter.on('garbage', (n: number) => { this.drop('ant_garbage'); this.log.debug({ bytes: n }, 'ANT bytes dropped') })
    port.pipe(splitter)
    this.splitter = splitter
    this.configured = false
    void this.configure(port).catch((err: Error) => {
      if (this.link.current !== port) return
      this.log.warn({ err }, 'ANT stick setup failed; closing the port to start again')
      this.setStatus({ state: 'degraded', detail: err.message, connected: 0 })
      // The link sees the close and reopens with backoff; the next open configures the stick again.
      port.close(() => {})
    })
  }

  private detach (port: SerialPort, reason: string | undefined): void {
    const splitter = this.splitter
    this.splitter = undefined
    this.configured = false
    this.answer = undefined
    port.removeAllListeners('data')
    if (splitter !== undefined) { port.unpipe(splitter); splitter.removeAllListeners(); splitter.destroy() }
    if (reason !== undefined) {
      // The stick went away: every strap is gone with it, and their beat counts start over when it is back.
      this.sweep(Infinity)
      this.straps.clear()
    }
  }

  /** Sends the setup one message at a time, each after the stick answered the one before. */
  private async configure (port: SerialPort): Promise<void> {
    let mode = 'continuous scan mode'
    try {
      await this.run(port, scanModeSetup(this.o.networkKey))
    } catch (err) {
      if (!(err instanceof StickSetupError) || err.messageId !== ANT_MESSAGE.OPEN_RX_SCAN_MODE || err.code === undefined) throw err
      const channels = this.o.fallbackChannels ?? ANT_DEFAULTS.fallbackChannels
      mode = `${channels} heart-rate channels`
      this.log.info('the stick has no scan mode; opening heart-rate channels instead')
      await this.run(port, channelsSetup(this.o.networkKey, channels))
    }
    if (this.link.current !== port) return
    this.configured = true
    this.link.healthy()
    this.log.info({ mode }, 'ANT stick receiving')
    this.setStatus({ state: 'running', detail: mode, connected: this.heardCount() })
  }

  private async run (port: SerialPort, frames: Uint8Array[]): Promise<void> {
    for (const frame of frames) {
      if (this.link.current !== port) return
      const id = frame[2] as number
      const reply = this.await(id)
      await new Promise<void>((resolve, reject) => port.write(Buffer.from(frame), err => err ? reject(err) : resolve()))
      const m = await reply
      if (m.id === ANT_MESSAGE.CHANNEL_EVENT) {
        const ev = decodeChannelEvent(m.data)
        if (ev.code !== RESPONSE_NO_ERROR) throw new StickSetupError(id, ev.code)
      }
    }
  }

  /** The stick's answer to message `id`: a startup message for a reset, a channel response naming it otherwise. */
  private await (id: number): Promise<AntMessage> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => { this.answer = undefined; reject(new StickSetupError(id, undefined)) }, this.o.answerTimeoutMs ?? ANT_DEFAULTS.answerTimeoutMs)
      this.answer = m => {
        const answers = id === ANT_MESSAGE.RESET_SYSTEM
          ? m.id === ANT_MESSAGE.STARTUP
          : m.id === ANT_MESSAGE.CHANNEL_EVENT && m.data[1] === id
        if (!answers) return
        clearTimeout(timer)
        this.answer = undefined
        resolve(m)
      }
    })
  }

  private onFrame (frame: Uint8Array): void {
    let m: AntMessage
    try {
      m = decodeAntMessage(frame)
    } catch (err) {
      if (!isProtocolError(err)) throw err
      this.drop('ant_bad_message')
      return
    }
    this.answer?.(m)
    if (m.id === ANT_MESSAGE.BROADCAST_DATA && this.configured) this.onBroadcast(m.data)
  }

  private onBroadcast (data: Uint8Array): void {
    let number: number
    let payload: Uint8Array
    let rssi: number | undefined
    try {
      const b = decodeBroadcast(data)
      // Without the channel id there is no telling straps apart; other device types are not heart-rate straps.
      if (b.id === undefined || b.id.deviceType !== HEART_RATE_DEVICE_TYPE) return
      number = b.id.deviceNumber
      payload = b.payload
      rssi = b.rssi
    } catch (err) {
      if (!isProtocolError(err)) throw err
      this.drop('ant_bad_message')
      return
    }
    const now = Date.now()
    let strap = this.straps.get(number)
    if (strap === undefined) {
      strap = { beats: new AntHeartRateBeats(), rssi, heardAt: now, reportedAt: 0, connected: false }
      this.straps.set(number, strap)
    }
    strap.heardAt = now
    if (rssi !== undefined) strap.rssi = rssi
    let reading
    try {
      reading = strap.beats.payload(payload, now)
    } catch (err) {
      if (!isProtocolError(err)) throw err
      this.drop('ant_bad_page')
      return
    }
    if (!strap.connected || now - strap.reportedAt >= 1000) this.sight(number, strap, true, now)
    if (reading !== undefined) this.submit(number, reading, now)
  }

  private submit (number: number, r: { heart_rate: number, rr_intervals_ms: number[], battery_percent?: number }, now: number): void {
    const sink = this.sink
    if (sink === undefined) return
    const deviceId = antDeviceId(number)
    if (this.o.shouldSubmit !== undefined && !this.o.shouldSubmit(deviceId)) return
    if (this.inFlight >= (this.o.maxInFlight ?? ANT_DEFAULTS.maxInFlight)) { this.drop('ant_backpressure'); return }
    this.inFlight++
    sink.reading({
      device_id: deviceId,
      source: 'ant',
      measured_at: now,
      heart_rate: r.heart_rate,
      ...(r.rr_intervals_ms.length > 0 ? { rr_intervals_ms: r.rr_intervals_ms } : {}),
      ...(r.battery_percent === undefined ? {} : { battery_percent: r.battery_percent })
    }).then(
      result => { if (result.status === 'dropped') this.log.debug({ reason: result.reason }, 'reading dropped by pipeline') },
      (err: Error) => this.log.error({ err }, 'pipeline rejected an ANT reading')
    ).finally(() => { this.inFlight-- })
  }

  /** Reports straps unheard for silentAfterMs (all of them, for Infinity) as gone. */
  private sweep (now: number): void {
    const after = this.o.silentAfterMs ?? ANT_DEFAULTS.silentAfterMs
    let changed = false
    for (const [n, s] of this.straps) {
      if (s.connected && (now === Infinity || now - s.heardAt > after)) { this.sight(n, s, false, Date.now()); changed = true }
    }
    if (changed && this.current.state === 'running') this.setStatus({ ...this.current, connected: this.heardCount() })
  }

  private heardCount (): number {
    let n = 0
    for (const s of this.straps.values()) if (s.connected) n++
    return n
  }

  private sight (number: number, s: Strap, connected: boolean, now: number): void {
    const wasConnected = s.connected
    s.connected = connected
    s.reportedAt = now
    this.sink?.device({
      device_id: antDeviceId(number),
      source: 'ant',
      name: `ANT+ strap ${number}`,
      ...(s.rssi === undefined ? {} : { rssi: s.rssi }),
      ...(s.beats.batteryPercent === undefined ? {} : { battery_percent: s.beats.batteryPercent }),
      connected,
      seen_at: s.heardAt
    })
    if (connected !== wasConnected && this.current.state === 'running') this.setStatus({ ...this.current, connected: this.heardCount() })
  }

  private drop (reason: string): void {
    this.sink?.dropped(reason)
  }

  private setStatus (status: SourceStatus, always = false): void {
    const changed = always || status.state !== this.current.state || status.detail !== this.current.detail || status.connected !== this.current.connected
    this.current = status
    if (changed) this.sink?.status({ ...status })
  }
}
