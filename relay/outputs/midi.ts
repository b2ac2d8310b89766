// MIDI output: one 3-byte Note On per heart rate (spec 4.8, service-notes
// "MIDI byte order"), written to an ALSA rawmidi device (/dev/snd/midiC*D*,
// a plain character device) or to a serial MIDI adapter at 31250 baud.
//
// The composition root subscribes write() to the live hub for one profile.
// write() never throws and never blocks the hub: out-of-range values are
// skipped and counted, writes while the port is away are dropped and counted,
// and the port is reopened with backoff. A missing path never crashes.
import { EventEmitter } from 'node:events'
import { open as openFile, type FileHandle } from 'node:fs/promises'
import { constants as fsConstants } from 'node:fs'
import { SerialPort } from 'serialport'
import pino from 'pino'
import { encodeMidiHeartRate } from '../../firmware-protocol/midi.ts'
import { isProtocolError } from '../../firmware-protocol/errors.ts'
import { reopenDelay, DEFAULT_REOPEN, type BackoffOptions } from '../reopen-backoff.ts'

export type MidiKind = 'auto' | 'rawmidi' | 'serial'
export type MidiByteOrder = 'ones-tens' | 'tens-ones'

export interface MidiOutputOptions {
  path: string
  /** auto: paths under /dev/snd/ are rawmidi, anything else is serial. Default auto. */
  kind?: MidiKind
  /** Default 'ones-tens' (0x90, ones, tens; spec 4.8 raw example `90 07 06` for 67). */
  order?: MidiByteOrder
  /** MIDI channel index 0..15. Default 0. */
  channel?: number
  reopen?: BackoffOptions
  /** Writes allowed in flight before further values are dropped. Default 16. */
  maxPending?: number
  logger?: pino.Logger
}

export type MidiOutputState = 'idle' | 'starting' | 'running' | 'degraded' | 'stopped'

export interface MidiOutputStatus {
  state: MidiOutputState
  detail?: string
  /** Messages written to the device. */
  written: number
  /** Values skipped because they cannot be encoded (bpm outside 0..1279, not an integer...). */
  skipped_out_of_range: number
  /** Values dropped because the device was away, busy, or a write failed. */
  dropped: number
}

/** The one place each device API's callbacks are adapted to promises. */
interface MidiPort {
  write (bytes: Uint8Array): Promise<void>
  close (): Promise<void>
}

async function openRawMidi (path: string): Promise<MidiPort> {
  // O_WRONLY without O_CREAT: a missing device is an error, never a new file.
  // O_APPEND keeps every message when the path is a regular file (tests, logs).
  const fh: FileHandle = await openFile(path, fsConstants.O_WRONLY | fsConstants.O_APPEND)
  return {
    async write (bytes) { await fh.write(bytes) },
    async close () { await fh.close() }
  }
}

async function openSerialMidi (path: string, onGone: (err: Error) => void): Promise<MidiPort> {
  const port = new SerialPort({ path, baudRate: 31250, autoOpen: false })
  const onError = (err: Error): void => onGone(err)
  // Any close we did not ask for (close() removes this listener first) means
  // the device went away; a failed write may destroy the stream before
  // serialport's own close, and then 'close' carries no error.
  const onClose = (err?: Error | null): void => { onGone(err ?? new Error('port closed')) }
  port.on('error', onError)
  await new Promise<void>((resolve, reject) => port.open(err => err ? reject(err) : resolve()))
  port.on('close', onClose)
  return {
    async write (bytes) {
      await new Promise<void>((resolve, reject) => {
        port.write(Buffer.from(bytes), err => err ? reject(err) : resolve())
      })
      // Resolve only when the bytes have left the process.
      await new Promise<void>((resolve, reject) => port.drain(err => err ? reject(err) : resolve()))
    },
    async close () {
      // A failed write is followed by an 'error' event on a later tick; the
      // dropped port keeps a no-op listener so that it can never throw.
      port.off('close', onClose)
      port.off('error', onError)
      port.on('error', () => {})
      if (port.isOpen) await new Promise<void>(resolve => port.close(() => resolve()))
    }
  }
}

export function resolveMidiKind (path: string, kind: MidiKind = 'auto'): 'rawmidi' | 'serial' {
  if (kind !== 'auto') return kind
  return path.startsWith('/dev/snd/') ? 'rawmidi' : 'serial'
}

/** Emits 'status' (MidiOutputStatus) on every state change. */
export class MidiOutput extends EventEmitter<{ status: [MidiOutputStatus] }> {
  readonly id: string
  private readonly path: string
  private readonly kind: 'rawmidi' | 'serial'
  private readonly order: MidiByteOrder
  private readonly channel: number
  private readonly reopenOptions: BackoffOptions
  private readonly maxPending: number
  private readonly log: pino.Logger
  private port: MidiPort | undefined
  private opening = false
  private pending = 0
  /** Writes are chained so that messages reach the device in order. */
  private tail: Promise<void> = Promise.resolve()
  private attempt = 0
  private reopenTimer: NodeJS.Timeout | undefined
  private signal: AbortSignal | undefined
  private readonly onAbort = (): void => { void this.stop() }
  private current: MidiOutputStatus = { state: 'idle', written: 0, skipped_out_of_range: 0, dropped: 0 }

  constructor (opts: MidiOutputOptions) {
    super()
    this.path = opts.path
    this.kind = resolveMidiKind(opts.path, opts.kind)
    this.order = opts.order ?? 'ones-tens'
    this.channel = opts.channel ?? 0
    this.reopenOptions = opts.reopen ?? DEFAULT_REOPEN
    this.maxPending = opts.maxPending ?? 16
    this.id = `midi:${opts.path}`
    this.log = (opts.logger ?? pino({ enabled: false })).child({ component: 'midi', path: opts.path, kind: this.kind })
  }

  /** Opens the device; resolves once opened or once a retry is scheduled. Never rejects for a missing device. */
  async start (signal: AbortSignal): Promise<void> {
    if (this.current.state !== 'idle') throw new Error(`MidiOutput ${this.id} already started`)
    this.signal = signal
    if (signal.aborted) { this.setState('stopped'); return }
    signal.addEventListener('abort', this.onAbort, { once: true })
    this.setState('starting')
    await this.openOnce()
  }

  /** Sends one heart rate. Never throws; see status() for what was skipped or dropped. */
  write (bpm: number): void {
    if (this.current.state === 'stopped' || this.current.state === 'idle') return
    let bytes: Uint8Array
    try {
      bytes = encodeMidiHeartRate(bpm, { order: this.order, channel: this.channel })
    } catch (err) {
      if (!isProtocolError(err)) throw err
      this.current.skipped_out_of_range++
      this.log.debug({ bpm, code: err.code }, 'heart rate not encodable as MIDI; skipped')
      return
    }
    const port = this.port
    if (port === undefined || this.pending >= this.maxPending) {
      this.current.dropped++
      return
    }
    this.pending++
    this.tail = this.tail.then(async () => {
      if (this.port !== port) { this.current.dropped++; return }
      try {
        await port.write(bytes)
        this.current.written++
      } catch (err) {
        this.current.dropped++
        this.portGone(port, err as Error)
      }
    }).finally(() => { this.pending-- })
  }

  /** Resolves when every write accepted so far has reached the device or been dropped. */
  async flush (): Promise<void> {
    await this.tail
  }

  status (): MidiOutputStatus {
    return { ...this.current }
  }

  /** Closes the device and clears every timer and listener. Idempotent. */
  async stop (): Promise<void> {
    if (this.current.state === 'stopped') return
    this.setState('stopped')
    this.signal?.removeEventListener('abort', this.onAbort)
    if (this.reopenTimer !== undefined) clearTimeout(this.reopenTimer)
    this.reopenTimer = undefined
    await this.tail
    const port = this.port
    this.port = undefined
    await port?.close().catch((err: Error) => this.log.warn({ err }, 'closing MIDI device failed'))
  }

  private setState (state: MidiOutputState, detail?: string): void {
    const changed = this.current.state !== state || this.current.detail !== detail
    this.current.state = state
    if (detail === undefined) delete this.current.detail
    else this.current.detail = detail
    if (changed) {
      this.log.info({ state, detail }, 'MIDI output state')
      this.emit('status', this.status())
    }
  }

  private async openOnce (): Promise<void> {
    if (this.opening || this.current.state === 'stopped') return
    this.opening = true
    try {
      const port: MidiPort = this.kind === 'rawmidi'
        ? await openRawMidi(this.path)
        : await openSerialMidi(this.path, err => this.portGone(port, err))
      if ((this.current.state as MidiOutputState) === 'stopped') {
        await port.close().catch(() => {})
        return
      }
      this.port = port
      this.attempt = 0
      this.setState('running')
    } catch (err) {
      this.scheduleReopen(`cannot open ${this.path}: ${(err as Error).message}`)
    } finally {
      this.opening = false
    }
  }

  // `port` is a late-bound reference for serial (the callback may fire after open).
  private portGone (port: MidiPort | undefined, err: Error): void {
    if (port === undefined || this.port !== port || this.current.state === 'stopped') return
    this.port = undefined
    void port.close().catch(() => {})
    this.log.warn({ err }, 'MIDI device went away')
    this.scheduleReopen(`device went away: ${err.message}`)
  }

  private scheduleReopen (detail: string): void {
    if (this.current.state === 'stopped') return
    this.setState('degraded', detail)
    const delay = reopenDelay(this.attempt++, this.reopenOptions)
    this.reopenTimer = setTimeout(() => {
      this.reopenTimer = undefined
      void this.openOnce()
    }, delay)
  }
}
