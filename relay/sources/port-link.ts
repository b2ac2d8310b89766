// The life of one serial port that a source keeps open: open it, notice when
// it goes away (unplugged adapter or stick), and reopen the same path with
// exponential backoff and jitter until it is back. The serial source and the
// ANT source share it; each gives it what to do with an open port.
//
// serialport reports an unplug only when the hangup reaches a read parked in
// poll(). If the read is issued after the hangup, read(2) returns 0 and
// @serialport/bindings-cpp's unixRead retries for ever (bindings-cpp issue
// 162), so no 'close' comes. A presence watchdog catches that case: once the
// path no longer leads to the device that was opened (the USB node or the pty
// link is gone, or points elsewhere), it closes the port itself, which also
// ends that retry loop (a closed binding cancels the read).
import { realpath } from 'node:fs/promises'
import { SerialPort } from 'serialport'
import type pino from 'pino'
import { reopenDelay, DEFAULT_REOPEN, type BackoffOptions } from '../reopen-backoff.ts'

export interface PortLinkOptions {
  path: string
  baudRate: number
  /** Reopen backoff after the port goes away. Default 500 ms doubling to 30 s. */
  reopen?: BackoffOptions
  /** How often to check that the path still leads to the opened device (ms). */
  presenceCheckMs: number
  /**
   * Whether an open port counts as the device being back (the backoff starts over). False for a device that must
   * answer first: its source calls healthy() once it has.
   */
  healthyOnOpen?: boolean
  log: pino.Logger
}

export interface PortLinkHandlers {
  /** The port is open: attach readers and writers. Called again after every reopen, with the new port. */
  opened (port: SerialPort): void
  /** The port went away (or the link is stopping): detach what `opened` attached. */
  closed (port: SerialPort, reason: string | undefined): void
  /** The port could not be opened, or went away: a reopen is scheduled. */
  degraded (detail: string): void
}

/**
 * Drops every listener on a port no longer used, leaving one no-op 'error' listener: serialport can still emit
 * 'error' on a later tick (a failed write, a failed close), and an 'error' with no listener would throw out of the
 * event loop.
 */
export function retirePort (port: SerialPort): void {
  port.removeAllListeners()
  port.on('error', () => {})
}

export class PortLink {
  private port: SerialPort | undefined
  private attempt = 0
  private stopped = false
  private reopenTimer: NodeJS.Timeout | undefined
  private presenceTimer: NodeJS.Timeout | undefined

  constructor (private readonly o: PortLinkOptions, private readonly h: PortLinkHandlers) {}

  get current (): SerialPort | undefined { return this.port }

  /** Opens the port once; on failure schedules a reopen. Resolves either way. */
  async open (): Promise<void> {
    const { path } = this.o
    const port = new SerialPort({ path, baudRate: this.o.baudRate, autoOpen: false })
    // serialport emits 'error' for failures with no callback; an 'error' without a listener would throw.
    port.on('error', (err: Error) => this.o.log.warn({ err }, 'serial port error'))
    try {
      await new Promise<void>((resolve, reject) => port.open(err => err ? reject(err) : resolve()))
    } catch (err) {
      retirePort(port)
      this.scheduleReopen(`cannot open ${path}: ${(err as Error).message}`)
      return
    }
    if (this.stopped) {
      await new Promise<void>(resolve => port.close(() => resolve()))
      retirePort(port)
      return
    }
    // 'close' comes with a DisconnectedError from serialport, or with nothing when a failed write destroyed the
    // stream first; either way it is gone.
    port.on('close', (err?: Error | null) => this.onClosed(port, err ?? null))
    this.port = port
    if (this.o.healthyOnOpen !== false) this.attempt = 0
    this.h.opened(port)
    await this.watchPresence(port)
  }

  /** The device answered on the open port: the next outage's backoff starts from its first delay. */
  healthy (): void {
    this.attempt = 0
  }

  /** Closes the port for good and clears every timer. Idempotent. */
  async stop (): Promise<void> {
    if (this.stopped) return
    this.stopped = true
    if (this.reopenTimer !== undefined) clearTimeout(this.reopenTimer)
    this.reopenTimer = undefined
    const port = this.detach(undefined)
    if (port?.isOpen === true) await new Promise<void>(resolve => port.close(() => resolve()))
    if (port !== undefined) retirePort(port)
  }

  private async watchPresence (port: SerialPort): Promise<void> {
    const opened = await realpath(this.o.path).catch(() => undefined)
    if (this.port !== port) return
    const check = (): void => {
      realpath(this.o.path).catch(() => undefined).then(now => {
        if (this.port !== port || now === opened) return
        this.o.log.warn({ opened, now }, 'serial device path changed or vanished; closing the port')
        this.onClosed(port, new Error(now === undefined ? 'device path vanished' : 'device path now leads elsewhere'))
      }, () => {})
    }
    this.presenceTimer = setInterval(check, this.o.presenceCheckMs)
  }

  private detach (reason: string | undefined): SerialPort | undefined {
    if (this.presenceTimer !== undefined) clearInterval(this.presenceTimer)
    this.presenceTimer = undefined
    const port = this.port
    this.port = undefined
    if (port !== undefined) {
      port.removeAllListeners('close')
      this.h.closed(port, reason)
    }
    return port
  }

  private onClosed (port: SerialPort, err: Error | null): void {
    if (this.port !== port || this.stopped) return
    const reason = err !== null ? err.message : 'closed'
    this.detach(reason)
    // Keep the no-op 'error' listener until the port is really closed.
    if (port.isOpen) port.close(() => retirePort(port))
    else retirePort(port)
    this.o.log.warn({ err }, 'serial port went away')
    this.scheduleReopen(`port went away (${reason}); reopening`)
  }

  private scheduleReopen (detail: string): void {
    if (this.stopped) return
    this.h.degraded(detail)
    const delay = reopenDelay(this.attempt++, this.o.reopen ?? DEFAULT_REOPEN)
    this.o.log.debug({ delay, attempt: this.attempt }, 'reopen scheduled')
    this.reopenTimer = setTimeout(() => {
      this.reopenTimer = undefined
      void this.open()
    }, delay)
  }
}
