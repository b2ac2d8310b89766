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
import { access, realpath } from 'node:fs/promises'
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
import { reopenDelay, DEFAULT_REOPEN, type BackoffOptions } from '../reopen-backoff.ts'

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

/**
 * Drops every listener this source put on a port it no longer uses, leaving
 * one no-op 'error' listener: serialport can still emit 'error' on a later
 * tick (a failed write, a failed close), and an 'error' with no listener
 * would throw out of the event loop.
 */
function retire (port: SerialPort): void {
  port.removeAllListeners()
  port.on('error', () => {})
}

export class SerialSource implements Source {
  readonly id: string
  private readonly pathId: string
  private readonly opts: SerialSourceOptions
  private readonly log: pino.Logger
  private sink: SourceSink | undefined
  private signal: AbortSignal | undefined
  private port: SerialPort | undefined
  private splitter: BoundedLineSplitter | undefined
  private learnedId: string | undefined
  private sighted = false
  private attempt = 0
  private inFlight = 0
  private started = false
  private stopped = false
  private reopenTimer: NodeJS.Timeout | undefined
  private pollTimer: NodeJS.Timeout | undefined
  private presenceTimer: NodeJS.Timeout | undefined
  private current: SourceStatus = { state: 'starting', connected: 0 }
  private readonly onAbort = (): void => { void this.stop() }

  constructor (options: SerialSourceOptions) {
    this.opts = options
    this.id = `serial:${options.path}`
    this.pathId = serialPathDeviceId(options.path)
    this.log = (options.logger ?? pino({ enabled: false })).child({ component: 'serial', path: options.path })
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
    await this.openOnce()
  }

  async stop (): Promise<void> {
    if (this.stopped) return
    this.stopped = true
    this.signal?.removeEventListener('abort', this.onAbort)
    if (this.reopenTimer !== undefined) clearTimeout(this.reopenTimer)
    this.reopenTimer = undefined
    const port = this.detachPort()
    if (port?.isOpen === true) {
      await new Promise<void>(resolve => port.close(() => resolve()))
    }
    if (port !== undefined) retire(port)
    this.setStatus({ state: 'stopped', connected: 0 })
  }

  // --- port lifecycle -------------------------------------------------------

  private async openOnce (): Promise<void> {
    const { path } = this.opts
    const port = new SerialPort({ path, baudRate: this.opts.baudRate ?? SERIAL_DEFAULTS.baudRate, autoOpen: false })
    // serialport emits 'error' for failures with no callback; an EventEmitter
    // 'error' without a listener would throw, so one is always attached.
    port.on('error', (err: Error) => this.log.warn({ err }, 'serial port error'))
    try {
      await new Promise<void>((resolve, reject) => port.open(err => err ? reject(err) : resolve()))
    } catch (err) {
      retire(port)
      this.scheduleReopen(`cannot open ${path}: ${(err as Error).message}`)
      return
    }
    if (this.stopped) {
      await new Promise<void>(resolve => port.close(() => resolve()))
      retire(port)
      return
    }
    this.attachPort(port)
    this.attempt = 0
    this.setStatus({ state: 'running', connected: 1 })
    this.log.info('serial port open')
    if (this.opts.format === 'hrmi') this.startPolling(port)
    await this.watchPresence(port)
  }

  // serialport reports an unplug only when the hangup reaches a read parked in
  // poll(). If the read is issued after the hangup, read(2) returns 0 and
  // @serialport/bindings-cpp's unixRead retries for ever (bindings-cpp issue
  // 162), so no 'close' comes. The watchdog catches that case: once the path
  // no longer leads to the device that was opened (the USB node or the pty
  // link is gone, or points elsewhere), it closes the port itself, which also
  // ends that retry loop (a closed binding cancels the read).
  private async watchPresence (port: SerialPort): Promise<void> {
    const opened = await realpath(this.opts.path).catch(() => undefined)
    if (this.port !== port) return
    const check = (): void => {
      realpath(this.opts.path).catch(() => undefined).then(now => {
        if (this.port !== port || now === opened) return
        this.log.warn({ opened, now }, 'serial device path changed or vanished; closing the port')
        this.onPortClosed(port, new Error(now === undefined ? 'device path vanished' : 'device path now leads elsewhere'))
      }, () => {})
    }
    this.presenceTimer = setInterval(check, this.opts.presenceCheckMs ?? SERIAL_DEFAULTS.presenceCheckMs)
  }

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
    // 'close' comes with a DisconnectedError from serialport, or with nothing
    // when a failed write destroyed the stream first; either way it is gone.
    port.on('close', (err?: Error | null) => this.onPortClosed(port, err ?? null))
    port.pipe(splitter)
    this.port = port
    this.splitter = splitter
  }

  /** Unhooks the current port and splitter; returns the port for closing. */
  private detachPort (): SerialPort | undefined {
    if (this.pollTimer !== undefined) clearInterval(this.pollTimer)
    this.pollTimer = undefined
    if (this.presenceTimer !== undefined) clearInterval(this.presenceTimer)
    this.presenceTimer = undefined
    const port = this.port
    const splitter = this.splitter
    this.port = undefined
    this.splitter = undefined
    if (port !== undefined) {
      port.removeAllListeners('close')
      port.removeAllListeners('data')
      if (splitter !== undefined) port.unpipe(splitter)
    }
    if (splitter !== undefined) {
      splitter.removeAllListeners()
      splitter.destroy()
    }
    return port
  }

  private onPortClosed (port: SerialPort, err: Error | null): void {
    if (this.port !== port || this.stopped) return
    this.detachPort()
    // Keep the no-op 'error' listener until the port is really closed.
    if (port.isOpen) port.close(() => retire(port))
    else retire(port)
    const reason = err !== null ? err.message : 'closed'
    this.log.warn({ err }, 'serial port went away')
    if (this.sighted) this.sight(false)
    this.scheduleReopen(`port went away (${reason}); reopening`)
  }

  private scheduleReopen (detail: string): void {
    if (this.stopped) return
    this.setStatus({ state: 'degraded', detail, connected: 0 })
    const delay = reopenDelay(this.attempt++, this.opts.reopen ?? DEFAULT_REOPEN)
    this.log.debug({ delay, attempt: this.attempt }, 'reopen scheduled')
    this.reopenTimer = setTimeout(() => {
      this.reopenTimer = undefined
      void this.openOnce()
    }, delay)
  }

  private startPolling (port: SerialPort): void {
    const poll = (): void => {
      if (this.port !== port) return
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
