// Serial source: a heart-rate sensor on a serial port (USB adapter, UART, or a
// pty in tests) sending one line per reading, in one of the formats decoded by
// firmware-protocol/serial.ts: 'framed' ($HR lines with a checksum, an
// optional $ID line first), 'text' (plain bpm lines), or 'hrmi' (polled with
// `G<n>\r`, answered with `<status> <count> <hr...>`).
//
// Lifecycle: start() opens the port; if the port is missing or goes away
// (unplugged adapter), the source reports 'degraded' and reopens the same path
// with exponential backoff and jitter, back to 'running' once open. stop()
// closes the port, clears every timer and removes every listener it added.
import { access } from 'node:fs/promises'
import { constants as fsConstants } from 'node:fs'
import { delimiter, join } from 'node:path'
import { SerialPort } from 'serialport'
import pino from 'pino'
import type { Source, SourceSink, SourceStatus } from './source.ts'
import {
  ANY_DELIMITER,
  BoundedLineSplitter,
  LF_DELIMITER,
  hrmiPollCommand,
  parseLine,
  type SerialEvent,
  type SerialFormat
} from '../../firmware-protocol/serial.ts'
import type { BackoffOptions } from '../reopen-backoff.ts'
import { PortLink } from './port-link.ts'

export interface SerialSourceOptions {
  path: string
  /** Default 115200. */
  baudRate?: number
  format: SerialFormat
  /** Fixed device id; otherwise taken from the device's $ID line, otherwise serialPathDeviceId(path). */
  deviceId?: string
  /** hrmi only: how often to poll with `G1\r`. Default 1000 ms. */
  pollIntervalMs?: number
  /** Longest line kept; longer lines are dropped as serial_too_long. Default 256. */
  maxLineLength?: number
  /** Reopen backoff after the port goes away. Default 500 ms doubling to 30 s. */
  reopen?: BackoffOptions
  /** Readings handed to the sink and not yet settled before new ones are dropped. Default 64. */
  maxInFlight?: number
  /** How often to check that the path still leads to the opened device. Default 1000 ms. */
  presenceCheckMs?: number
  logger?: pino.Logger
}

export const SERIAL_DEFAULTS = {
  baudRate: 115200,
  pollIntervalMs: 1000,
  maxLineLength: 256,
  maxInFlight: 64,
  presenceCheckMs: 1000
} as const

/**
 * The device id for a port whose device never identifies itself: the path
 * made a valid device id (firmware-protocol/device-id.ts: 1..64 of
 * [A-Za-z0-9:_.-], the rule pairing and MQTT topics enforce), so that such a
 * device can still be paired. '/dev/ttyUSB0' → 'dev_ttyUSB0'; a longer path
 * keeps its last 64 characters, the specific end.
 */
export function serialPathDeviceId (path: string): string {
  const id = path.replace(/^\/+/, '').replace(/[^A-Za-z0-9:_.-]+/g, '_')
  const tail = id.length > 64 ? id.slice(-64) : id
  return tail === '' ? 'serial' : tail
}

export class SerialSource implements Source {
  readonly id: string
  private readonly pathId: string
  private readonly opts: SerialSourceOptions
  private readonly log: pino.Logger
  private sink: SourceSink | undefined
  private signal: AbortSignal | undefined
  private readonly link: PortLink
  private splitter: BoundedLineSplitter | undefined
  private learnedId: string | undefined
  private sighted = false
  private inFlight = 0
  private started = false
  private stopped = false
  private pollTimer: NodeJS.Timeout | undefined
  private current: SourceStatus = { state: 'starting', connected: 0 }
  private readonly onAbort = (): void => { void this.stop() }

  constructor (options: SerialSourceOptions) {
    this.opts = options
    this.id = `serial:${options.path}`
    this.pathId = serialPathDeviceId(options.path)
    this.log = (options.logger ?? pino({ enabled: false })).child({ component: 'serial', path: options.path })
    this.link = new PortLink({
      path: options.path,
      baudRate: options.baudRate ?? SERIAL_DEFAULTS.baudRate,
      ...(options.reopen === undefined ? {} : { reopen: options.reopen }),
      presenceCheckMs: options.presenceCheckMs ?? SERIAL_DEFAULTS.presenceCheckMs,
      log: this.log
    }, {
      opened: port => { this.attachPort(port) },
      closed: (port, reason) => { this.detachPort(port, reason) },
      degraded: detail => { this.setStatus({ state: 'degraded', detail, connected: 0 }) }
    })
  }

  /** The id readings carry: configured, else from the $ID line, else derived from the path. */
  get deviceId (): string {
    return this.opts.deviceId ?? this.learnedId ?? this.pathId
  }

  status (): SourceStatus {
    return { ...this.current }
  }

  /** Opens the port. Resolves once open or once a retry is scheduled; a missing port is not an error. */
  async start (signal: AbortSignal, sink: SourceSink): Promise<void> {
    if (this.started) throw new Error(`${this.id} already started`)
    this.started = true
    this.sink = sink
    this.signal = signal
    if (signal.aborted) { await this.stop(); return }
    signal.addEventListener('abort', this.onAbort, { once: true })
    this.setStatus({ state: 'starting', connected: 0 }, true)
    await this.link.open()
  }

  async stop (): Promise<void> {
    if (this.stopped) return
    this.stopped = true
    this.signal?.removeEventListener('abort', this.onAbort)
    await this.link.stop()
    this.setStatus({ state: 'stopped', connected: 0 })
  }

  // --- port lifecycle (PortLink opens, watches and reopens the port) ---------

  private attachPort (port: SerialPort): void {
    // A fresh splitter per open, so a half line from before an unplug is
    // never glued to the first line after it.
    //
    // Framing: @serialport/parser-readline's ReadlineParser keeps every byte
    // until it sees a delimiter, so a device that never sends a newline grows
    // its buffer without bound. BoundedLineSplitter (firmware-protocol) splits
    // the same way but drops a line once it passes maxLength and reports it
    // with 'overflow', so memory stays bounded whatever the device sends.
    // (ReadlineParser behind a byte guard was tried: the guard had to scan
    // every byte for terminators itself, so the parser only repeated its work;
    // it is no direct dependency, only serialport's own.)
    // The HRMI ends its replies with a bare CR; the other formats with LF or CR LF.
    const splitter = new BoundedLineSplitter({
      maxLength: this.opts.maxLineLength ?? SERIAL_DEFAULTS.maxLineLength,
      delimiter: this.opts.format === 'hrmi' ? ANY_DELIMITER : LF_DELIMITER
    })
    splitter.on('data', (line: string) => this.onLine(line))
    splitter.on('overflow', () => this.drop('too_long'))
    splitter.on('error', (err: Error) => this.log.warn({ err }, 'line splitter error'))
    port.pipe(splitter)
    this.splitter = splitter
    this.setStatus({ state: 'running', connected: 1 })
    this.log.info('serial port open')
    if (this.opts.format === 'hrmi') this.startPolling(port)
  }

  /** Unhooks the splitter and the poll timer from a port that went away or is closing. */
  private detachPort (port: SerialPort, reason: string | undefined): void {
    if (this.pollTimer !== undefined) clearInterval(this.pollTimer)
    this.pollTimer = undefined
    const splitter = this.splitter
    this.splitter = undefined
    port.removeAllListeners('data')
    if (splitter !== undefined) {
      port.unpipe(splitter)
      splitter.removeAllListeners()
      splitter.destroy()
    }
    // A reason: the port went away (not a stop), and the device with it.
    if (reason !== undefined && this.sighted) this.sight(false)
  }

  private startPolling (port: SerialPort): void {
    const poll = (): void => {
      if (this.link.current !== port) return
      port.write(hrmiPollCommand(1), err => {
        if (err) this.log.debug({ err }, 'hrmi poll write failed')
      })
    }
    poll()
    this.pollTimer = setInterval(poll, this.opts.pollIntervalMs ?? SERIAL_DEFAULTS.pollIntervalMs)
  }

  // --- lines -----------------------------------------------------------------

  private onLine (line: string): void {
    const event: SerialEvent = parseLine(this.opts.format, line)
    switch (event.kind) {
      case 'reading':
        this.onReading(event.heart_rate, event.rr_intervals_ms)
        break
      case 'identity':
        this.learnedId = event.device_id
        this.log.info({ device_id: event.device_id, firmware_version: event.firmware_version }, 'device identified')
        this.sight(true, event.firmware_version)
        break
      case 'error':
        this.drop(event.reason)
        break
      case 'no_value':
      case 'ignored':
        break
    }
  }

  private onReading (heartRate: number, rr: number[] | undefined): void {
    const sink = this.sink
    if (sink === undefined) return
    if (!this.sighted) this.sight(true)
    const maxInFlight = this.opts.maxInFlight ?? SERIAL_DEFAULTS.maxInFlight
    if (this.inFlight >= maxInFlight) {
      this.drop('backpressure')
      return
    }
    this.inFlight++
    const reading = {
      device_id: this.deviceId,
      source: 'serial' as const,
      measured_at: Date.now(),
      heart_rate: heartRate,
      ...(rr !== undefined && rr.length > 0 ? { rr_intervals_ms: rr } : {})
    }
    sink.reading(reading).then(
      result => { if (result.status === 'dropped') this.log.debug({ reason: result.reason }, 'reading dropped by pipeline') },
      (err: Error) => this.log.error({ err }, 'pipeline rejected a serial reading')
    ).finally(() => { this.inFlight-- })
  }

  private drop (reason: string): void {
    this.log.debug({ reason }, 'serial line dropped')
    this.sink?.dropped(`serial_${reason}`)
  }

  private sight (connected: boolean, firmwareVersion?: string): void {
    this.sighted = connected
    this.sink?.device({
      device_id: this.deviceId,
      source: 'serial',
      name: firmwareVersion !== undefined ? `${this.opts.path} (firmware ${firmwareVersion})` : this.opts.path,
      connected,
      seen_at: Date.now()
    })
  }

  private setStatus (status: SourceStatus, always = false): void {
    const changed = always || status.state !== this.current.state || status.detail !== this.current.detail
    this.current = status
    if (changed) this.sink?.status({ ...status })
  }
}

export interface SerialPortListing {
  path: string
  manufacturer?: string
  serialNumber?: string
  vendorId?: string
  productId?: string
}

async function onPath (command: string): Promise<boolean> {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (dir === '') continue
    try {
      await access(join(dir, command), fsConstants.X_OK)
      return true
    } catch {}
  }
  return false
}

/**
 * The serial ports the system knows, for the operator's pairing list. On
 * Linux serialport lists through `udevadm`; where it is missing (containers,
 * minimal images) SerialPort.list() takes the process down, so this checks
 * first and returns [] with a warning instead. Never rejects.
 */
export async function listSerialPorts (logger?: pino.Logger): Promise<SerialPortListing[]> {
  const log = (logger ?? pino({ enabled: false })).child({ component: 'serial' })
  if (process.platform === 'linux' && !await onPath('udevadm')) {
    log.warn('udevadm is not installed; cannot list serial ports (configure the path explicitly)')
    return []
  }
  try {
    const ports = await SerialPort.list()
    return ports.map(p => ({
      path: p.path,
      ...(p.manufacturer !== undefined ? { manufacturer: p.manufacturer } : {}),
      ...(p.serialNumber !== undefined ? { serialNumber: p.serialNumber } : {}),
      ...(p.vendorId !== undefined ? { vendorId: p.vendorId } : {}),
      ...(p.productId !== undefined ? { productId: p.productId } : {})
    }))
  } catch (err) {
    log.warn({ err }, 'listing serial ports failed')
    return []
  }
}
