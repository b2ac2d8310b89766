// One heart-rate strap's connection, kept up for as long as the source wants
// it: take an adapter from the pool, connect, wait for services, subscribe to
// 0x2A37, read 0x2A38 and the battery once, hand every notification to the
// sink; on a drop or an error, release everything and try again after an
// exponential, jittered delay. When the adapter refused for lack of room or
// the link stayed silent, it tries another adapter at once.
import type pino from 'pino'
import type NodeBle from 'node-ble'
import {
  BODY_SENSOR_LOCATION_UUID,
  decodeBodySensorLocation,
  decodeHeartRateMeasurement,
  measurementReading,
  HEART_RATE_MEASUREMENT_UUID,
  HEART_RATE_SERVICE_UUID
} from '../../../firmware-protocol/ble.ts'
import { isProtocolError } from '../../../firmware-protocol/errors.ts'
import type { SourceSink } from '../source.ts'
import { reopenDelay, type BackoffOptions } from '../../reopen-backoff.ts'
import { BleError, bluezErrorName, describeError, isBleError } from './errors.ts'
import { releaseDevice, releaseGatt } from './node-ble-quirks.ts'
import { devicePath, type BluezSession } from './session.ts'
import type { AdapterPool, AdapterSlot } from './adapter-pool.ts'
import { sleep } from './timeout.ts'

export interface StrapLinkOptions {
  address: string
  pool: AdapterPool
  session: BluezSession
  sink: SourceSink
  log: pino.Logger
  connectTimeoutMs: number
  gattTimeoutMs: number
  backoff: BackoffOptions
  maxInFlight: number
  /** A link that connected and subscribed but delivered nothing for this long is moved to another adapter. */
  silentAfterMs: number
  /** True while no adapter is usable: no attempts until kick(). */
  paused: () => boolean
  /** Called whenever `connected` changes. */
  onChange: () => void
  /** An attempt through this adapter found it gone from D-Bus: the source checks it. */
  adapterTrouble: (name: string) => void
}

const SERVICES_POLL_MS = 100
/** While paused, look again this often even without a kick (belt and braces). */
const PAUSED_RECHECK_MS = 60_000

export class StrapLink {
  readonly address: string
  connected = false
  battery: number | undefined
  location: string | undefined
  /** Completed connections (for diagnostics and tests). */
  connections = 0
  /** The adapter of the current attempt or link. */
  slot: AdapterSlot | undefined
  private path = ''
  private moveNow = false
  private delivered = false
  private silenceTimer: NodeJS.Timeout | undefined
  private attempt = 0
  private readonly stopController = new AbortController()
  private wake = new AbortController()
  private dropped: (() => void) | undefined
  private inFlight = 0
  private running: Promise<void> | undefined
  private readonly log: pino.Logger

  // What the current attempt holds, released by release().
  private device: NodeBle.Device | undefined
  private gatt: NodeBle.GattServer | undefined
  private measurement: NodeBle.GattCharacteristic | undefined
  private readonly onDisconnect = (): void => { this.dropped?.() }
  private readonly onValue = (value: Buffer): void => { this.handleValue(value) }

  constructor (private readonly o: StrapLinkOptions) {
    this.address = o.address
    this.log = o.log.child({ device: o.address })
  }

  start (): void {
    this.running ??= this.run()
  }

  /** Cuts a backoff wait short and restarts the delays from the beginning (adapter back on). */
  kick (): void {
    this.attempt = 0
    this.wake.abort()
  }

  /** Ends the link or attempt through the current adapter and tries another at once (its adapter went away). */
  move (): void {
    this.moveNow = true
    this.dropped?.()
    this.wake.abort()
  }

  /** Disconnects (when `disconnect`), releases every listener and ends the loop. Idempotent. */
  async stop (disconnect = true): Promise<void> {
    this.stopController.abort()
    this.wake.abort()
    this.dropped?.()
    await this.running
    await this.release(disconnect)
  }

  private get stopped (): boolean { return this.stopController.signal.aborted }

  private async run (): Promise<void> {
    while (!this.stopped) {
      while (this.o.paused() && !this.stopped) await this.pausedUntilKicked()
      if (this.stopped) break
      this.moveNow = false
      const slot = this.o.pool.choose(this.address)
      if (slot !== undefined) {
        this.slot = slot
        this.path = devicePath(slot.name, this.address)
        try {
          await this.connectOnce(slot)
          this.attempt = 0
          await this.untilDropped()
          if (!this.stopped && !this.moveNow) this.log.warn({ adapter: slot.name }, 'strap link dropped')
        } catch (err) {
          if (!this.stopped) this.attemptFailed(err, slot.name)
        }
        if (this.stopped) break
        await this.release(true)
        if (this.moveNow) continue
      } else {
        this.log.debug('no adapter with room hears the strap; waiting')
      }
      const delay = reopenDelay(this.attempt++, this.o.backoff)
      this.log.debug({ delay_ms: delay }, 'reconnecting after backoff')
      if (this.wake.signal.aborted) this.wake = new AbortController()
      await sleep(delay, AbortSignal.any([this.wake.signal, this.stopController.signal]))
      if (this.wake.signal.aborted) this.wake = new AbortController()
    }
  }

  /** Logs a failed attempt; moves on at once when the adapter refused for lack of room or is gone and another can take the strap. */
  private attemptFailed (err: unknown, adapter: string): void {
    this.logFailure(err)
    const name = bluezErrorName(err)
    if (err === this.connectError && name === 'org.bluez.Error.Failed' && this.o.pool.refused(adapter, this.address)) {
      this.log.warn({ adapter, err: describeError(err) }, 'adapter refused a connection while holding others; holding it full')
      this.moveNow = this.o.pool.hasOtherFor(this.address, adapter)
    } else if (name === 'org.freedesktop.DBus.Error.UnknownObject' || isBleError(err, 'vanished')) {
      this.o.adapterTrouble(adapter)
    }
  }

  private async pausedUntilKicked (): Promise<void> {
    if (this.wake.signal.aborted) this.wake = new AbortController()
    await sleep(PAUSED_RECHECK_MS, AbortSignal.any([this.wake.signal, this.stopController.signal]))
  }

  private logFailure (err: unknown): void {
    const name = bluezErrorName(err)
    const detail = describeError(err)
    if (name !== undefined || isBleError(err)) this.log.info({ err: detail, attempt: this.attempt }, 'strap connection attempt failed')
    else this.log.warn({ err: detail, attempt: this.attempt }, 'strap connection attempt failed unexpectedly')
  }

  /** The error Device1.Connect answered in this attempt (a refusal there is the adapter's, not the link's). */
  private connectError: unknown

  private async connectOnce (slot: AdapterSlot): Promise<void> {
    const { session, gattTimeoutMs, connectTimeoutMs } = this.o
    const signal = this.stopController.signal
    let linkLost = false
    this.dropped = () => { linkLost = true }
    // A notification may arrive as soon as StartNotify is answered, before the link counts as connected.
    this.delivered = false
    this.connectError = undefined

    let device: NodeBle.Device
    try {
      device = await session.call(slot.adapter.getDevice(this.address), 'getDevice', signal)
    } catch (err) {
      if (err instanceof Error && err.message === 'Device not found') throw new BleError('vanished', this.address)
      throw err
    }
    this.device = device
    device.on('disconnect', this.onDisconnect)
    try {
      await session.call(device.connect(), 'Connect', signal, connectTimeoutMs)
    } catch (err) {
      if (bluezErrorName(err) !== 'org.bluez.Error.AlreadyConnected') {
        this.connectError = err
        throw err
      }
    }
    // Wait for ServicesResolved ourselves, with a deadline: node-ble's gatt()
    // would wait forever and leave its listener behind.
    await this.waitServicesResolved(signal, () => linkLost)
    const gatt = await session.call(device.gatt(), 'gatt()', signal, gattTimeoutMs)
    this.gatt = gatt
    let service: NodeBle.GattService
    let measurement: NodeBle.GattCharacteristic
    try {
      service = await gatt.getPrimaryService(HEART_RATE_SERVICE_UUID)
      measurement = await service.getCharacteristic(HEART_RATE_MEASUREMENT_UUID)
    } catch (err) {
      throw new BleError('no_hr_service', this.address, { cause: err })
    }
    this.measurement = measurement
    measurement.on('valuechanged', this.onValue)
    await session.call(measurement.startNotifications(), 'StartNotify', signal, gattTimeoutMs)

    if (this.location === undefined) {
      try {
        const location = await service.getCharacteristic(BODY_SENSOR_LOCATION_UUID)
        this.location = decodeBodySensorLocation(await session.call(location.readValue(), 'read 2A38', signal))
      } catch (err) {
        if (this.stopped) throw err
        this.log.debug({ err: describeError(err) }, 'no body sensor location')
      }
    }
    this.battery = await session.battery(this.path, signal)
    if (linkLost) throw new BleError('vanished', `${this.address} dropped while connecting`)
    this.connected = true
    this.connections++
    this.o.pool.linked(slot.name, this.address)
    if (!this.delivered) this.silenceTimer = setTimeout(() => { this.silenceElapsed(slot.name) }, this.o.silentAfterMs)
    this.log.info({ adapter: slot.name, location: this.location, battery_percent: this.battery }, 'strap connected')
    this.o.onChange()
  }

  /** Connected and subscribed, and nothing arrived: the adapter accepted a link it cannot serve. */
  private silenceElapsed (adapter: string): void {
    this.silenceTimer = undefined
    if (this.delivered || !this.connected || this.stopped) return
    this.o.pool.silent(adapter, this.address)
    this.log.warn({ adapter, silent_ms: this.o.silentAfterMs }, 'strap connected and subscribed but silent; trying another adapter')
    this.moveNow = true
    this.dropped?.()
  }

  private async waitServicesResolved (signal: AbortSignal, lost: () => boolean): Promise<void> {
    const deadline = Date.now() + this.o.gattTimeoutMs
    for (;;) {
      if (lost()) throw new BleError('vanished', `${this.address} dropped before its services resolved`)
      const resolved = await this.o.session.get(this.path, 'org.bluez.Device1', 'ServicesResolved', signal)
      if (resolved === true) return
      if (Date.now() >= deadline) throw new BleError('timeout', `ServicesResolved after ${this.o.gattTimeoutMs} ms`)
      await sleep(SERVICES_POLL_MS, signal)
      if (signal.aborted) throw new BleError('stopped')
    }
  }

  private async untilDropped (): Promise<void> {
    if (this.stopped) return
    await new Promise<void>(resolve => { this.dropped = resolve })
  }

  private handleValue (value: Buffer): void {
    const measuredAt = Date.now()
    if (!this.delivered) {
      this.delivered = true
      clearTimeout(this.silenceTimer)
      this.silenceTimer = undefined
    }
    let m
    try {
      m = decodeHeartRateMeasurement(new Uint8Array(value.buffer, value.byteOffset, value.byteLength))
    } catch (err) {
      // The codec throws only ProtocolError; anything else is counted the same
      // way, since an event handler must never throw into node-ble.
      this.o.sink.dropped('ble_malformed')
      this.log.debug({ code: isProtocolError(err) ? err.code : 'unknown', length: value.length }, 'malformed heart rate measurement')
      return
    }
    let fields
    try {
      fields = measurementReading(m, measuredAt)
    } catch (err) {
      // Decoded, but outside the reading contract: the pipeline would not store it.
      this.o.sink.dropped('ble_out_of_range')
      this.log.debug({ detail: isProtocolError(err) ? err.message : 'unknown' }, 'heart rate measurement outside the reading contract')
      return
    }
    if (this.inFlight >= this.o.maxInFlight) {
      this.o.sink.dropped('ble_backpressure')
      return
    }
    this.inFlight++
    const reading = {
      device_id: this.address,
      source: 'ble' as const,
      measured_at: measuredAt,
      ...fields,
      ...(this.battery !== undefined ? { battery_percent: this.battery } : {})
    }
    let pending: Promise<unknown>
    try {
      pending = this.o.sink.reading(reading)
    } catch (err) {
      pending = Promise.reject(err)
    }
    pending
      .catch((err: unknown) => { this.log.error({ err: describeError(err) }, 'sink rejected a reading') })
      .finally(() => { this.inFlight-- })
  }

  /** Removes every listener this attempt added; disconnects best-effort when asked. */
  private async release (disconnect: boolean): Promise<void> {
    const { device, gatt, measurement, slot } = this
    clearTimeout(this.silenceTimer)
    this.silenceTimer = undefined
    this.slot = undefined
    this.device = undefined
    this.gatt = undefined
    this.measurement = undefined
    this.dropped = undefined
    const wasConnected = this.connected
    this.connected = false
    if (wasConnected) this.o.onChange()
    measurement?.off('valuechanged', this.onValue)
    device?.off('disconnect', this.onDisconnect)
    const quiet = async (p: Promise<unknown>, what: string): Promise<void> => {
      try { await this.o.session.call(p, what, undefined, this.o.gattTimeoutMs) } catch { /* best effort */ }
    }
    if (disconnect && device !== undefined && !this.o.session.failed) {
      if (measurement !== undefined && wasConnected) await quiet(measurement.stopNotifications(), 'StopNotify')
      const isConnected = await this.o.session.get(this.path, 'org.bluez.Device1', 'Connected').catch(() => false)
      if (isConnected === true) await quiet(device.disconnect(), 'Disconnect')
    }
    if (gatt !== undefined) await releaseGatt(gatt).catch(() => {})
    if (device !== undefined) releaseDevice(device)
    if (slot !== undefined) this.o.pool.release(slot.name, this.address)
  }
}
