// A simulated serial heart-rate sensor. It opens the device end of a pty pair
// (pty.ts) with serialport, as firmware would own a UART, and writes lines in
// one of the formats the relay reads:
//   framed  `$HR,<bpm>[,<rr>...]*XX`, optionally preceded by `$ID,<id>,<fw>*XX`
//   text    one of the plain-text variants real sketches print (see TextVariant)
//   hrmi    answers each `G<n>\r` poll with `<status> <count> <hr newest..oldest>\r`
// Raw writes are there for fault injection: garbage, a wrong checksum, an
// over-long line, a line with no terminator at all.
import { SerialPort } from 'serialport'
import {
  ANY_DELIMITER,
  BoundedLineSplitter,
  checksum,
  encodeFramedReading,
  encodeIdentity,
  HRMI_MAX_VALUES,
  type SerialFormat
} from '../../firmware-protocol/serial.ts'

/**
 * Plain-text variants:
 *   plain        `72`
 *   keyed        `BPM: 72`
 *   csv          `72,98` (bpm first, then other values such as SpO2)
 *   pulsesensor  PulseSensor's visualizer protocol: `S<signal>`, `B<bpm>`, `Q<ibi ms>` per beat
 */
export type TextVariant = 'plain' | 'keyed' | 'csv' | 'pulsesensor'

export interface SerialDeviceSimOptions {
  path: string
  format: SerialFormat
  /** Text format only. Default 'plain'. */
  textVariant?: TextVariant
  baudRate?: number
  /** Terminator appended by writeLine(). Default '\r\n' (Arduino println). */
  lineEnding?: string
  /** HRMI status byte sent in every reply. Default 0. */
  hrmiStatus?: number
}

export class SerialDeviceSim {
  readonly options: SerialDeviceSimOptions
  private port: SerialPort | undefined
  private splitter: BoundedLineSplitter | undefined
  /** HRMI history, newest first. */
  private history: number[] = []
  private beats = 0
  /** `G<n>` polls received (hrmi). */
  polls = 0
  /** The first 4 KiB the relay wrote to the device (hrmi), byte for byte. */
  received: Buffer = Buffer.alloc(0)
  private pollWaiters: Array<{ count: number, resolve: () => void }> = []

  constructor (options: SerialDeviceSimOptions) {
    this.options = options
  }

  get isOpen (): boolean {
    return this.port?.isOpen === true
  }

  async open (): Promise<void> {
    const port = new SerialPort({ path: this.options.path, baudRate: this.options.baudRate ?? 115200, autoOpen: false })
    port.on('error', () => {})
    await new Promise<void>((resolve, reject) => port.open(err => err ? reject(err) : resolve()))
    this.port = port
    if (this.options.format === 'hrmi') {
      const splitter = new BoundedLineSplitter({ maxLength: 16, delimiter: ANY_DELIMITER })
      splitter.on('data', (line: string) => this.onCommand(line))
      port.on('data', (chunk: Buffer) => {
        if (this.received.length < 4096) this.received = Buffer.concat([this.received, chunk]).subarray(0, 4096)
      })
      port.pipe(splitter)
      this.splitter = splitter
    }
  }

  async close (): Promise<void> {
    const port = this.port
    this.port = undefined
    if (port === undefined) return
    if (this.splitter !== undefined) {
      port.unpipe(this.splitter)
      this.splitter.removeAllListeners()
      this.splitter = undefined
    }
    if (port.isOpen) await new Promise<void>(resolve => port.close(() => resolve()))
    port.removeAllListeners()
  }

  /** Writes bytes exactly as given, and waits until they have left the process. */
  async writeRaw (data: string | Uint8Array): Promise<void> {
    const port = this.port
    if (port === undefined) throw new Error('device is not open')
    await new Promise<void>((resolve, reject) => port.write(typeof data === 'string' ? Buffer.from(data, 'latin1') : Buffer.from(data), err => err ? reject(err) : resolve()))
    await new Promise<void>((resolve, reject) => port.drain(err => err ? reject(err) : resolve()))
  }

  async writeLine (line: string): Promise<void> {
    await this.writeRaw(line + (this.options.lineEnding ?? '\r\n'))
  }

  /** framed: the `$ID` line the relay takes the device id from. */
  async sendIdentity (deviceId: string, firmwareVersion: string): Promise<void> {
    await this.writeLine(encodeIdentity(deviceId, firmwareVersion))
  }

  /**
   * One reading in the configured format. framed carries rr; pulsesensor
   * sends its S and Q lines around the B line (Q carries the first rr);
   * hrmi stores the value for the next poll instead of writing.
   */
  async sendReading (bpm: number, rrMs?: number[]): Promise<void> {
    switch (this.options.format) {
      case 'framed':
        await this.writeLine(encodeFramedReading(bpm, rrMs))
        return
      case 'hrmi':
        this.history.unshift(bpm)
        this.history.length = Math.min(this.history.length, HRMI_MAX_VALUES)
        this.beats = (this.beats + 1) % 256
        return
      case 'text':
        await this.sendText(bpm, rrMs)
    }
  }

  private async sendText (bpm: number, rrMs?: number[]): Promise<void> {
    switch (this.options.textVariant ?? 'plain') {
      case 'plain': await this.writeLine(String(bpm)); return
      case 'keyed': await this.writeLine(`BPM: ${bpm}`); return
      case 'csv': await this.writeLine(`${bpm},98`); return
      case 'pulsesensor':
        await this.writeLine('S512')
        await this.writeLine(`B${bpm}`)
        await this.writeLine(`Q${rrMs?.[0] ?? Math.round(60000 / Math.max(bpm, 1))}`)
    }
  }

  /** A line the relay must read as "no value yet" (text: MAX3010x sketches print this; hrmi: empty history). */
  async sendNoValue (): Promise<void> {
    if (this.options.format === 'hrmi') { this.history = []; return }
    await this.writeLine(this.options.textVariant === 'keyed' ? 'Getting reading...' : '-999')
  }

  /** A framed reading whose checksum is wrong (the correct one XOR 0xFF). */
  async sendBadChecksum (bpm: number): Promise<void> {
    const body = `HR,${bpm}`
    const wrong = (parseInt(checksum(body), 16) ^ 0xff).toString(16).toUpperCase().padStart(2, '0')
    await this.writeLine(`$${body}*${wrong}`)
  }

  async sendGarbage (text = 'x#@!~noise'): Promise<void> {
    await this.writeLine(text)
  }

  /** A line of `length` characters followed by a terminator (or none when `terminate` is false). */
  async sendOverlong (length: number, terminate = true): Promise<void> {
    const body = '9'.repeat(length)
    await (terminate ? this.writeLine(body) : this.writeRaw(body))
  }

  /** Resolves once `count` polls in total have been received. */
  waitForPolls (count: number): Promise<void> {
    if (this.polls >= count) return Promise.resolve()
    return new Promise(resolve => this.pollWaiters.push({ count, resolve }))
  }

  private onCommand (line: string): void {
    const m = /^G(\d{1,2})$/.exec(line.trim())
    if (m === null) return
    const n = Math.min(Number(m[1]), HRMI_MAX_VALUES)
    const values = this.history.slice(0, n)
    const reply = [this.options.hrmiStatus ?? 0, this.beats, ...values].join(' ') + '\r'
    this.polls++
    this.pollWaiters = this.pollWaiters.filter(w => {
      if (this.polls < w.count) return true
      w.resolve()
      return false
    })
    void this.writeRaw(reply).catch(() => {})
  }
}
