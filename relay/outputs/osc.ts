// OSC output to VRChat (and anything else that reads the same avatar
// parameters, as HRtoVRChat_OSC and VRCOSC do): for each heart rate of the
// configured member, one UDP datagram per parameter to host:port, each one
// OSC message (firmware-protocol/osc.ts) under `parameter_prefix`.
//
// The composition root feeds write() from the live hub. UDP send is
// fire-and-forget: write() never throws and never waits; a send error is
// counted, not thrown. isHRConnected and isHRActive turn false after
// `disconnectAfterMs` without a reading; isHRBeat toggles once per beat at
// the current bpm. Timers are injectable so tests need not wait.
import { createSocket, type Socket } from 'node:dgram'
import { EventEmitter } from 'node:events'
import pino from 'pino'
import { encodeOscMessage, oscBool, type OscArg } from '../../firmware-protocol/osc.ts'

export interface OscTimers {
  setTimeout (fn: () => void, ms: number): unknown
  clearTimeout (handle: unknown): void
}

const REAL_TIMERS: OscTimers = {
  setTimeout: (fn, ms) => { const h = setTimeout(fn, ms); h.unref(); return h },
  clearTimeout: h => { clearTimeout(h as NodeJS.Timeout) }
}

export interface OscOutputOptions {
  host: string
  /** VRChat listens on 9000. */
  port: number
  /** HRPercent is 0 at this bpm. Default 0. */
  minBpm?: number
  /** HRPercent is 1 at this bpm. Default 255. */
  maxBpm?: number
  /** Default '/avatar/parameters/'. */
  parameterPrefix?: string
  /** isHRConnected and isHRActive turn false after this long without a reading. Default 10 000 ms. */
  disconnectAfterMs?: number
  timers?: OscTimers
  logger?: pino.Logger
}

export type OscOutputState = 'idle' | 'running' | 'degraded' | 'stopped'

export interface OscOutputStatus {
  state: OscOutputState
  detail?: string
  /** Datagrams handed to the socket and reported sent. */
  sent: number
  /** Sends that failed (no route, refused, socket closed); never thrown. */
  send_errors: number
  /** Heart rates that could not be encoded (not a finite number). */
  skipped: number
}

/** The avatar parameters for one heart rate (docs/integrations.md "OSC output to VRChat"). */
export function heartRateParameters (bpm: number, min: number, max: number, beat: boolean): Array<[string, OscArg]> {
  const hr = Math.round(bpm)
  const span = max - min
  const percent = span <= 0 ? (hr >= max ? 1 : 0) : Math.min(1, Math.max(0, (hr - min) / span))
  return [
    ['HR', { type: 'i', value: hr }],
    ['onesHR', { type: 'i', value: hr % 10 }],
    ['tensHR', { type: 'i', value: Math.floor(hr / 10) % 10 }],
    ['hundredsHR', { type: 'i', value: Math.floor(hr / 100) % 10 }],
    ['HRPercent', { type: 'f', value: percent }],
    ['FullHRPercent', { type: 'f', value: 2 * percent - 1 }],
    ['isHRConnected', oscBool(true)],
    ['isHRActive', oscBool(true)],
    ['isHRBeat', oscBool(beat)]
  ]
}

/** Emits 'status' (OscOutputStatus) on every state change. */
export class OscOutput extends EventEmitter<{ status: [OscOutputStatus] }> {
  readonly id: string
  private readonly host: string
  private readonly port: number
  private readonly min: number
  private readonly max: number
  private readonly prefix: string
  private readonly disconnectAfterMs: number
  private readonly timers: OscTimers
  private readonly log: pino.Logger
  private socket: Socket | undefined
  private bpm = 0
  private beat = false
  private beatTimer: unknown
  private idleTimer: unknown
  private current: OscOutputStatus = { state: 'idle', sent: 0, send_errors: 0, skipped: 0 }

  constructor (opts: OscOutputOptions) {
    super()
    this.host = opts.host
    this.port = opts.port
    this.min = opts.minBpm ?? 0
    this.max = opts.maxBpm ?? 255
    this.prefix = opts.parameterPrefix ?? '/avatar/parameters/'
    this.disconnectAfterMs = opts.disconnectAfterMs ?? 10_000
    this.timers = opts.timers ?? REAL_TIMERS
    this.id = `osc:${opts.host}:${opts.port}`
    this.log = (opts.logger ?? pino({ enabled: false })).child({ component: 'osc', host: opts.host, port: opts.port })
  }

  /** Opens the UDP socket (no connection: UDP has none). */
  async start (): Promise<void> {
    if (this.current.state !== 'idle') throw new Error(`OscOutput ${this.id} already started`)
    const socket = createSocket(this.host.includes(':') ? 'udp6' : 'udp4')
    // Send errors arrive in send()'s callback; 'error' covers the rest and is only counted.
    socket.on('error', err => { this.sendFailed(err) })
    socket.unref()
    this.socket = socket
    this.setState('running')
  }

  /** Sends the parameters for one heart rate. Never throws, never waits. */
  write (bpm: number): void {
    if (this.socket === undefined) return
    if (!Number.isFinite(bpm) || bpm < 0) { this.current.skipped++; return }
    this.bpm = Math.round(bpm)
    for (const [name, arg] of heartRateParameters(bpm, this.min, this.max, this.beat)) this.send(name, arg)
    this.armIdle()
    if (this.beatTimer === undefined) this.armBeat()
  }

  status (): OscOutputStatus {
    return { ...this.current }
  }

  /** Closes the socket and clears both timers. Idempotent. */
  async stop (): Promise<void> {
    if (this.current.state === 'stopped') return
    this.setState('stopped')
    this.clearTimers()
    const socket = this.socket
    this.socket = undefined
    if (socket !== undefined) await new Promise<void>(resolve => { socket.close(() => { resolve() }) })
  }

  private send (name: string, arg: OscArg): void {
    const socket = this.socket
    if (socket === undefined) return
    let bytes: Uint8Array
    try {
      bytes = encodeOscMessage({ address: this.prefix + name, args: [arg] })
    } catch (err) {
      this.current.skipped++
      this.log.debug({ err, name }, 'OSC parameter not encodable; skipped')
      return
    }
    try {
      socket.send(bytes, this.port, this.host, err => {
        if (err === null || err === undefined) {
          this.current.sent++
          if (this.current.state === 'degraded') this.setState('running')
        } else this.sendFailed(err)
      })
    } catch (err) {
      this.sendFailed(err as Error)
    }
  }

  private sendFailed (err: Error): void {
    this.current.send_errors++
    if (this.current.state === 'running') {
      this.log.warn({ err }, 'OSC send failed')
      this.setState('degraded', `send failed: ${err.message}`)
    }
  }

  private armIdle (): void {
    if (this.idleTimer !== undefined) this.timers.clearTimeout(this.idleTimer)
    this.idleTimer = this.timers.setTimeout(() => {
      this.idleTimer = undefined
      if (this.beatTimer !== undefined) this.timers.clearTimeout(this.beatTimer)
      this.beatTimer = undefined
      this.send('isHRConnected', oscBool(false))
      this.send('isHRActive', oscBool(false))
    }, this.disconnectAfterMs)
  }

  /** One toggle of isHRBeat per beat; the interval follows the latest bpm. */
  private armBeat (): void {
    if (this.bpm <= 0) return
    this.beatTimer = this.timers.setTimeout(() => {
      this.beatTimer = undefined
      this.beat = !this.beat
      this.send('isHRBeat', oscBool(this.beat))
      this.armBeat()
    }, 60_000 / this.bpm)
  }

  private clearTimers (): void {
    if (this.idleTimer !== undefined) this.timers.clearTimeout(this.idleTimer)
    if (this.beatTimer !== undefined) this.timers.clearTimeout(this.beatTimer)
    this.idleTimer = undefined
    this.beatTimer = undefined
  }

  private setState (state: OscOutputState, detail?: string): void {
    const changed = this.current.state !== state || this.current.detail !== detail
    this.current.state = state
    if (detail === undefined) delete this.current.detail
    else this.current.detail = detail
    if (changed) {
      this.log.info({ state, detail }, 'OSC output state')
      this.emit('status', this.status())
    }
  }
}
