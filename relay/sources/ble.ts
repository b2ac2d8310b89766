// BLE source: heart-rate straps through BlueZ, over D-Bus, with node-ble.
//
// A supervisor keeps one BluezSession (node-ble + its D-Bus connection) open;
// while it is healthy, a scan tick checks the adapter's power, keeps
// discovery running, reports every device advertising the Heart Rate service
// (0x180D) to sink.device(), and starts a StrapLink for each allowed strap.
// Each link reconnects on its own with exponential backoff and jitter. When
// the bus or bluetoothd is missing, the status is 'unavailable', logged once
// per outage, and the session is reopened quietly with backoff.
import pino from 'pino'
import type NodeBle from 'node-ble'
import { HEART_RATE_SERVICE_UUID } from '../../firmware-protocol/ble.ts'
import type { Source, SourceSink, SourceState, SourceStatus } from './source.ts'
import { reopenDelay, type BackoffOptions } from '../reopen-backoff.ts'
import { BleError, bluezErrorName, describeError, isBleError, isNoBluez } from './ble/errors.ts'
import { signalListenerCount } from './ble/node-ble-quirks.ts'
import { adapterPath, BluezSession, devicePath } from './ble/session.ts'
import { StrapLink } from './ble/strap-link.ts'
import { sleep } from './ble/timeout.ts'
import { assertDependencyInternals } from '../dependency-internals.ts'

// The private internals of dbus-next and node-ble this source relies on: checked when the module loads, which
// is when a BLE source is configured (relay/sources/manager.ts loads it lazily), so a start fails loudly.
assertDependencyInternals()

export interface BleSourceOptions {
  /** Adapter name, e.g. 'hci0'. Default: the first adapter BlueZ lists. */
  adapter?: string
  /** Addresses to connect. Empty or absent: ask shouldConnect. */
  allow?: string[]
  /** Used when `allow` is empty; the composition root passes "is this device paired". Default: connect every HR strap. */
  shouldConnect?: (address: string) => boolean | Promise<boolean>
  /** Deadline for Device1.Connect. Default 15000 ms. */
  connectTimeoutMs?: number
  /** Deadline for service resolution, GATT and other BlueZ calls. Default 15000 ms. */
  gattTimeoutMs?: number
  /** Reconnect and reopen delays. Default 1000 ms doubling to 30000 ms, jittered. */
  backoff?: BackoffOptions
  /** How often devices are listed and the adapter checked. Default 5000 ms. */
  rescanIntervalMs?: number
  /** Readings handed to the sink and not yet settled, per strap, before new ones are dropped. Default 64. */
  maxInFlight?: number
  logger?: pino.Logger
}

export const BLE_DEFAULTS = {
  connectTimeoutMs: 15_000,
  gattTimeoutMs: 15_000,
  backoff: { initialMs: 1000, maxMs: 30_000 },
  rescanIntervalMs: 5000,
  maxInFlight: 64
} as const

export interface BleDiagnostics {
  /** dbus-next signal listeners on the current connection (0 without one). */
  signalListeners: number
  /** Unique name of the current D-Bus connection (for the daemon's per-connection statistics). */
  busName?: string
  links: Array<{ address: string, connected: boolean, connections: number }>
}

export class BleSource implements Source {
  readonly id = 'ble'
  private readonly o: Required<Omit<BleSourceOptions, 'adapter' | 'allow' | 'shouldConnect' | 'logger'>>
  private readonly allow: Set<string>
  private readonly log: pino.Logger
  private sink: SourceSink | undefined
  private base: { state: SourceState, detail?: string } = { state: 'stopped' }
  private lastEmitted = ''
  private readonly links = new Map<string, StrapLink>()
  private session: BluezSession | undefined
  private controller: AbortController | undefined
  private supervisor: Promise<void> | undefined
  private unavailableLogged = false
  private lastFailureLogged: string | undefined
  private poweredOff = false
  private discoveryLogged = false
  private discoveryFailureLogged: string | undefined
  private onExternalAbort: (() => void) | undefined
  private externalSignal: AbortSignal | undefined

  constructor (private readonly options: BleSourceOptions = {}) {
    this.o = {
      connectTimeoutMs: options.connectTimeoutMs ?? BLE_DEFAULTS.connectTimeoutMs,
      gattTimeoutMs: options.gattTimeoutMs ?? BLE_DEFAULTS.gattTimeoutMs,
      backoff: options.backoff ?? BLE_DEFAULTS.backoff,
      rescanIntervalMs: options.rescanIntervalMs ?? BLE_DEFAULTS.rescanIntervalMs,
      maxInFlight: options.maxInFlight ?? BLE_DEFAULTS.maxInFlight
    }
    this.allow = new Set((options.allow ?? []).map(a => a.toUpperCase()))
    this.log = (options.logger ?? pino({ enabled: false })).child({ component: 'ble' })
  }

  /** Starts the supervisor; resolves after the first attempt to reach BlueZ, whatever its outcome. */
  async start (signal: AbortSignal, sink: SourceSink): Promise<void> {
    if (this.supervisor !== undefined) return
    this.sink = sink
    this.controller = new AbortController()
    this.externalSignal = signal
    this.onExternalAbort = () => { void this.stop() }
    signal.addEventListener('abort', this.onExternalAbort, { once: true })
    this.setState('starting')
    let firstDone!: () => void
    const first = new Promise<void>(resolve => { firstDone = resolve })
    this.supervisor = this.supervise(this.controller.signal, firstDone)
    if (signal.aborted) void this.stop()
    await first
  }

  async stop (): Promise<void> {
    if (this.controller === undefined) return
    this.controller.abort()
    if (this.onExternalAbort !== undefined) this.externalSignal?.removeEventListener('abort', this.onExternalAbort)
    this.onExternalAbort = undefined
    await this.supervisor
    this.supervisor = undefined
    this.controller = undefined
    this.setState('stopped')
  }

  status (): SourceStatus {
    const connected = [...this.links.values()].filter(l => l.connected).length
    return { ...this.base, connected }
  }

  diagnostics (): BleDiagnostics {
    return {
      signalListeners: this.session === undefined ? 0 : signalListenerCount(this.session.bus),
      ...(this.session?.uniqueName !== undefined ? { busName: this.session.uniqueName } : {}),
      links: [...this.links.values()].map(l => ({ address: l.address, connected: l.connected, connections: l.connections }))
    }
  }

  // ---- supervisor ----

  private async supervise (signal: AbortSignal, firstDone: () => void): Promise<void> {
    let attempt = 0
    while (!signal.aborted) {
      const session = new BluezSession(this.o.gattTimeoutMs)
      this.session = session
      try {
        await this.runSession(session, signal, () => { attempt = 0; firstDone() })
      } catch (err) {
        if (!signal.aborted) this.sessionFailed(err)
      } finally {
        await this.closeSession(session)
        firstDone()
      }
      if (signal.aborted) break
      await sleep(reopenDelay(attempt++, this.o.backoff), signal)
    }
  }

  private sessionFailed (err: unknown): void {
    if (isNoBluez(err) || isBleError(err, 'timeout')) {
      const detail = `no BlueZ on the system bus (${isBleError(err, 'no_bluez') ? describeError(err.cause) : describeError(err)})`
      if (!this.unavailableLogged) {
        this.unavailableLogged = true
        this.log.error({ detail }, 'BLE unavailable; retrying quietly with backoff')
      } else {
        this.log.debug({ detail }, 'BlueZ still unreachable')
      }
      this.setState('unavailable', detail)
      return
    }
    const detail = describeError(err)
    // Once per distinct reason, like the unavailable case: no log line per retry.
    if (detail !== this.lastFailureLogged) this.log.warn({ err: detail }, 'BLE session ended; reopening with backoff')
    else this.log.debug({ err: detail }, 'BLE session still failing')
    this.lastFailureLogged = detail
    this.setState('degraded', detail)
  }

  private async closeSession (session: BluezSession): Promise<void> {
    const links = [...this.links.values()]
    this.links.clear()
    await Promise.all(links.map(async l => { await l.stop(!session.failed) }))
    const adapter = this.adapter
    this.adapter = undefined
    if (adapter !== undefined && !session.failed && this.controller?.signal.aborted === true) {
      // node-ble's stopDiscovery checks Discovering first.
      try { await session.call(adapter.stopDiscovery(), 'StopDiscovery') } catch { /* best effort on the way out */ }
    }
    await session.close()
    if (this.session === session) this.session = undefined
    this.emitStatus()
  }

  private adapter: NodeBle.Adapter | undefined

  private async runSession (session: BluezSession, signal: AbortSignal, established: () => void): Promise<void> {
    const names = await session.call(session.bluetooth.adapters(), 'list adapters', signal)
    const name = this.options.adapter ?? names[0]
    if (name === undefined || !names.includes(name)) {
      throw new BleError('no_adapter', `${this.options.adapter ?? 'any'}; BlueZ lists ${names.length === 0 ? 'none' : names.join(', ')}`)
    }
    const adapter = await session.call(session.bluetooth.getAdapter(name), 'get adapter', signal)
    this.adapter = adapter
    if (this.unavailableLogged) this.log.info('BlueZ reachable again')
    this.unavailableLogged = false
    this.lastFailureLogged = undefined
    this.discoveryLogged = false
    this.log.info({ adapter: name }, 'BlueZ session open')
    established()
    while (!signal.aborted) {
      await this.tick(session, adapter, name, signal)
      await Promise.race([sleep(this.o.rescanIntervalMs, signal), session.broken])
    }
  }

  private async tick (session: BluezSession, adapter: NodeBle.Adapter, name: string, signal: AbortSignal): Promise<void> {
    let adapterProps
    try {
      adapterProps = await session.getAll(adapterPath(name), 'org.bluez.Adapter1', signal)
    } catch (err) {
      if (bluezErrorName(err) === 'org.freedesktop.DBus.Error.UnknownObject') throw new BleError('no_adapter', `${name} went away`, { cause: err })
      throw err
    }
    if (adapterProps.Powered !== true) {
      if (!this.poweredOff) this.log.warn({ adapter: name }, 'adapter is powered off; waiting for it')
      this.poweredOff = true
      this.discoveryLogged = false
      this.setState('degraded', `adapter ${name} is powered off`)
      return
    }
    if (this.poweredOff) {
      this.poweredOff = false
      this.log.info({ adapter: name }, 'adapter powered on')
      for (const link of this.links.values()) link.kick()
    }
    if (adapterProps.Discovering !== true) {
      try {
        await session.call(adapter.startDiscovery(), 'StartDiscovery', signal)
        if (!this.discoveryLogged) this.log.info({ adapter: name }, 'discovery started')
        this.discoveryLogged = true
        this.discoveryFailureLogged = undefined
      } catch (err) {
        // InProgress, NotReady (powered off meanwhile), node-ble's "already in
        // progress": the next scan tries again. Bus and timeout errors end the session.
        if (isBleError(err) || isNoBluez(err)) throw err
        const detail = describeError(err)
        if (bluezErrorName(err) !== 'org.bluez.Error.InProgress' && detail !== this.discoveryFailureLogged) {
          this.discoveryFailureLogged = detail
          this.log.warn({ err: detail }, 'could not start discovery; retrying on the next scan')
        }
      }
    }
    this.setState('running')
    const addresses = await session.call(adapter.devices(), 'list devices', signal)
    const present = new Set<string>()
    for (const raw of addresses) {
      const address = raw.toUpperCase()
      present.add(address)
      await this.visit(session, name, address, adapter, signal)
    }
    for (const [address, link] of this.links) {
      if (!present.has(address)) {
        this.log.info({ device: address }, 'strap vanished')
        this.links.delete(address)
        await link.stop(false)
      }
    }
  }

  private async visit (session: BluezSession, adapterName: string, address: string, adapter: NodeBle.Adapter, signal: AbortSignal): Promise<void> {
    const path = devicePath(adapterName, address)
    let props
    try {
      props = await session.getAll(path, 'org.bluez.Device1', signal)
    } catch (err) {
      if (bluezErrorName(err) !== undefined) return // removed between listing and reading
      throw err
    }
    const uuids = Array.isArray(props.UUIDs) ? props.UUIDs as unknown[] : []
    if (!uuids.includes(HEART_RATE_SERVICE_UUID)) return
    const link = this.links.get(address)
    // BlueZ < 5.80 shows the battery as Battery1 on the device while connected.
    const battery = props.Connected === true ? await session.battery(path, signal) : undefined
    if (link !== undefined && battery !== undefined) link.battery = battery
    const name = typeof props.Alias === 'string' ? props.Alias : typeof props.Name === 'string' ? props.Name : undefined
    this.sink?.device({
      device_id: address,
      source: 'ble',
      ...(name !== undefined ? { name } : {}),
      ...(typeof props.RSSI === 'number' ? { rssi: props.RSSI } : {}),
      ...(battery !== undefined ? { battery_percent: battery } : {}),
      connected: link?.connected ?? false,
      seen_at: Date.now()
    })
    const wanted = await this.wanted(address)
    if (wanted && link === undefined && !signal.aborted && this.sink !== undefined) {
      const created = new StrapLink({
        address,
        adapterName,
        adapter,
        session,
        sink: this.sink,
        log: this.log,
        connectTimeoutMs: this.o.connectTimeoutMs,
        gattTimeoutMs: this.o.gattTimeoutMs,
        backoff: this.o.backoff,
        maxInFlight: this.o.maxInFlight,
        paused: () => this.poweredOff,
        onChange: () => { this.emitStatus() }
      })
      this.links.set(address, created)
      this.log.info({ device: address, name }, 'connecting to strap')
      created.start()
    } else if (!wanted && link !== undefined) {
      this.log.info({ device: address }, 'strap no longer allowed; disconnecting')
      this.links.delete(address)
      await link.stop(true)
    }
  }

  private async wanted (address: string): Promise<boolean> {
    if (this.allow.size > 0) return this.allow.has(address)
    if (this.options.shouldConnect === undefined) return true
    try {
      return await this.options.shouldConnect(address)
    } catch (err) {
      this.log.warn({ device: address, err: describeError(err) }, 'shouldConnect failed; not connecting')
      return false
    }
  }

  // ---- status ----

  private setState (state: SourceState, detail?: string): void {
    this.base = detail === undefined ? { state } : { state, detail }
    this.emitStatus()
  }

  private emitStatus (): void {
    const status = this.status()
    const key = JSON.stringify(status)
    if (key === this.lastEmitted) return
    this.lastEmitted = key
    this.sink?.status(status)
  }
}
