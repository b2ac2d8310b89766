// Test harness for the BLE source: a real dbus-daemon, the BlueZ emulator on
// it, and a recording sink. The relay side talks to it only through node-ble.
import { EventEmitter } from 'node:events'
import { Writable } from 'node:stream'
import pino from 'pino'
import { startPrivateBus, type PrivateBus } from '../../../device-sim/ble/private-bus.ts'
import { BluezEmulator } from '../../../device-sim/ble/bluez-emulator.ts'
import type { DeviceSighting, SourceSink, SourceStatus } from '../../../relay/sources/source.ts'
import type { IngestResult, Reading } from '../../../api/pipeline/reading.ts'

export class RecordingSink implements SourceSink {
  readonly readings: Reading[] = []
  readonly statuses: SourceStatus[] = []
  readonly sightings: DeviceSighting[] = []
  readonly drops: string[] = []
  private readonly events = new EventEmitter()

  async reading (reading: Reading): Promise<IngestResult> {
    this.readings.push(reading)
    this.events.emit('change')
    return { status: 'stored', profile_id: 'p1' }
  }

  status (status: SourceStatus): void { this.statuses.push(status); this.events.emit('change') }
  device (sighting: DeviceSighting): void { this.sightings.push(sighting); this.events.emit('change') }
  dropped (reason: string): void { this.drops.push(reason); this.events.emit('change') }

  readingsOf (address: string): Reading[] { return this.readings.filter(r => r.device_id === address) }
  get lastStatus (): SourceStatus | undefined { return this.statuses[this.statuses.length - 1] }

  /** Resolves once `predicate` holds (checked on every recorded event); rejects after `ms`. */
  async waitFor (what: string, predicate: () => boolean, ms = 30_000): Promise<void> {
    if (predicate()) return
    await new Promise<void>((resolve, reject) => {
      const check = (): void => { if (predicate()) { done(); resolve() } }
      const timer = setTimeout(() => { done(); reject(new Error(`timed out waiting for ${what}; last status ${JSON.stringify(this.lastStatus)}`)) }, ms)
      const done = (): void => { clearTimeout(timer); this.events.off('change', check) }
      this.events.on('change', check)
    })
  }
}

/** Waits for an emitter event (with a generous deadline). */
export async function once (emitter: EventEmitter, event: string, what: string, ms = 30_000): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => { emitter.off(event, on); reject(new Error(`timed out waiting for ${what}`)) }, ms)
    const on = (): void => { clearTimeout(timer); resolve() }
    emitter.once(event, on)
  })
}

/** A pino logger writing JSON lines into `lines`. */
export function captureLogger (level: pino.Level = 'info'): { logger: pino.Logger, lines: Array<Record<string, unknown>>, waitForLines: (what: string, predicate: (lines: Array<Record<string, unknown>>) => boolean, ms?: number) => Promise<void> } {
  const lines: Array<Record<string, unknown>> = []
  const events = new EventEmitter()
  const stream = new Writable({
    write (chunk: Buffer, _enc, cb) {
      for (const line of chunk.toString('utf8').split('\n')) if (line.trim() !== '') lines.push(JSON.parse(line) as Record<string, unknown>)
      events.emit('line')
      cb()
    }
  })
  const waitForLines = async (what: string, predicate: (l: typeof lines) => boolean, ms = 30_000): Promise<void> => {
    if (predicate(lines)) return
    await new Promise<void>((resolve, reject) => {
      const check = (): void => { if (predicate(lines)) { done(); resolve() } }
      const timer = setTimeout(() => { done(); reject(new Error(`timed out waiting for ${what}`)) }, ms)
      const done = (): void => { clearTimeout(timer); events.off('line', check) }
      events.on('line', check)
    })
  }
  return { logger: pino({ level }, stream), lines, waitForLines }
}

export interface BleWorld {
  bus: PrivateBus
  emulator: BluezEmulator
  /** Registers something to stop first at teardown (the source). */
  onTeardown (fn: () => Promise<void> | void): void
}

export interface Teardownable { teardown (fn: () => Promise<void> | void): void }

/** Starts dbus-daemon + emulator, points node-ble at them, and tears all down in order. */
export async function startBleWorld (t: Teardownable, options: Omit<Parameters<typeof BluezEmulator.start>[0], 'busAddress'> = {}): Promise<BleWorld> {
  const bus = await startPrivateBus()
  const emulator = await BluezEmulator.start({ ...options, busAddress: bus.address })
  process.env.DBUS_SYSTEM_BUS_ADDRESS = bus.address
  const first: Array<() => Promise<void> | void> = []
  t.teardown(async () => {
    for (const fn of first) await fn()
    await emulator.stop()
    await bus.stop()
  })
  return { bus, emulator, onTeardown: (fn) => { first.push(fn) } }
}

/** Fast, but not timing-sensitive, options for tests (straps that send nothing never count as silent unless a test says so). */
export const FAST = {
  silentAfterMs: 3_600_000,
  rescanIntervalMs: 100,
  backoff: { initialMs: 50, maxMs: 400 },
  connectTimeoutMs: 5000,
  gattTimeoutMs: 5000
} as const
