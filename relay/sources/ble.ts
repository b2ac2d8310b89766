// BLE source: heart-rate straps through BlueZ, over D-Bus, with node-ble.
//
// A supervisor keeps one BluezSession (node-ble + its D-Bus connection) open;
// while it is healthy, a scan tick checks every configured adapter (on D-Bus,
// powered), keeps discovery running on each, reports every device
// advertising the Heart Rate service (0x180D) to sink.device(), and starts a
// StrapLink for each allowed strap. Each link takes the adapter that hears
// its strap best and has room from the AdapterPool, and reconnects on its own
// with exponential backoff and jitter. When the bus or bluetoothd is missing,
// the status is 'unavailable', logged once per outage, and the session is
// reopened quietly with backoff.
import pino from 'pino'
import type NodeBle from 'node-ble'
import { HEART_RATE_SERVICE_UUID } from '../../firmware-protocol/ble.ts'
import type { Source, SourceSink, SourceState, SourceStatus } from './source.ts'
import { reopenDelay, type BackoffOptions } from '../reopen-backoff.ts'
import { BleError, bluezErrorName, describeError, isBleError, isNoBluez } from './ble/errors.ts'
import { signalListenerCount } from './ble/node-ble-quirks.ts'
import { adapterPath, BluezSession, devicePath } from './ble/session.ts'
import { StrapLink } from './ble/strap-link.ts'
import { AdapterPool, type AdapterConfig, type AdapterStatus } from './ble/adapter-pool.ts'
import { sleep } from './ble/timeout.ts'
import { assertDependencyInternals } from '../dependency-internals.ts'

// The private internals of dbus-next and node-ble this source relies on: checked when the module loads, which
// is when a BLE source is configured (relay/sources/manager.ts loads it lazily), so a start fails loudly.
assertDependencyInternals()

export interface BleSourceOptions {
  /** Adapter name, e.g. 'hci0', as one adapter with DEFAULT_MAX_CONNECTIONS. Default: the first adapter BlueZ lists. */
  adapter?: string
  /** The adapters to spread straps over, each with its limit (instead of `adapter`). */
  adapters?: AdapterConfig[]
  /** How long an adapter that refused a Connect while holding links, or held a silent link, counts as full. Default 30000 ms. */
  fullHoldMs?: number
  /** A link connected and subscribed that delivers nothing for this long is moved to another adapter. Default 5000 ms. */
  silentAfterMs?: number
  /** The clock of the full hold (tests replace it). Default Date.now. */
  now?: () => number
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
  maxInFlight: 64,
  fullHoldMs: 30_000,
  silentAfterMs: 5000,
  maxConnections: 7
} as const

export interface BleDiagnostics {
  /** dbus-next signal listeners on the current connection (0 without one). */
  signalListeners: number
  /** Unique name of the current D-Bus connection (for the daemon's per-connection statistics). */
  busName?: string
  links: Array<{ address: string, connected: boolean, connections: number, adapter?: string }>
}

export class BleSource implements Source {
  readonly id = 'ble'
  private readonly o: Required<Omit<BleSourceOptions, 'adapter' | 'adapters' | 'allow' | 'shouldConnect' | 'logger' | 'now'>>
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
  private readonly discoveryLogged = new Set<string>()
  private discoveryFailureLogged: string | undefined
  private onExternalAbort: (() => void) | undefined
  private externalSignal: AbortSignal | undefined

  constructor (private readonly options: BleSourceOptions = {}) {
    this.o = {
      connectTimeoutMs: options.connectTimeoutMs ?? BLE_DEFAULTS.connectTimeoutMs,
      gattTimeoutMs: options.gattTimeoutMs ?? BLE_DEFAULTS.gattTimeoutMs,
      backoff: options.backoff ?? BLE_DEFAULTS.backoff,
      rescanIntervalMs: options.rescanIntervalMs ?? BLE_DEFAULTS.rescanIntervalMs,
      maxInFlight: options.maxInFlight ?? BLE_DEFAULTS.maxInFlight,
      fullHoldMs: options.fullHoldMs ?? BLE_DEFAULTS.fullHoldMs,
      silentAfterMs: options.silentAfterMs ?? BLE_DEFAULTS.silentAfterMs
    }
    this.configured = options.adapters ?? (options.adapter === undefined ? undefined : [{ name: options.adapter, maxConnections: BLE_DEFAULTS.maxConnections }])
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

  /** Every configured adapter with its connections, limit and state (empty before the first session). */
  adapters (): AdapterStatus[] {
    return this.pool?.status() ?? (this.configured ?? []).map(c => ({ name: c.name, state: 'missing' as const, connections: 0, limit: c.maxConnections, silent_total: 0, refused_total: 0 }))
  }

  status (): SourceStatus {
    const connected = [...this.links.values()].filter(l => l.connected).length
    return { ...this.base, connected }
  }

  diagnostics (): BleDiagnostics {
    return {
      signalListeners: this.session === undefined ? 0 : signalListenerCount(this.session.bus),
      ...(this.session?.uniqueName !== undefined ? { busName: this.session.uniqueName } : {}),
      links: [...this.links.values()].map(l => ({ address: l.address, connected: l.connected, connections: l.connections, ...(l.slot === undefined ? {} : { adapter: l.slot.name }) }))
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
    const discovering = [...this.nodeAdapters]
    this.nodeAdapters.clear()
    if (!session.failed && this.controller?.signal.aborted === true) {
      // node-ble's stopDiscovery checks Discovering first.
      for (const [, adapter] of discovering) {
        try { await session.call(adapter.stopDiscovery(), 'StopDiscovery') } catch { /* best effort on the way out */ }
      }
    }
    for (const name of this.pool?.names ?? []) this.pool?.gone(name)
    await session.close()
    if (this.session === session) this.session = undefined
    this.emitStatus()
  }

  /** node-ble's Adapter objects of this session, by name, for the adapters on D-Bus. */
  private readonly nodeAdapters = new Map<string, NodeBle.Adapter>()
  private readonly configured: AdapterConfig[] | undefined
  private pool: AdapterPool | undefined
  /** Adapters that are powered off or missing, with the reason, for the status. */
  private readonly trouble = new Map<string, string>()

  private async runSession (session: BluezSession, signal: AbortSignal, established: () => void): Promise<void> {
    const names = await session.call(session.bluetooth.adapters(), 'list adapters', signal)
    const configured = this.configured ?? (names[0] === undefined ? [] : [{ name: names[0], maxConnections: BLE_DEFAULTS.maxConnections }])
    if (!configured.some(c => names.includes(c.name))) {
      const wanted = this.configured === undefined ? 'any' : configured.map(c => c.name).join(', ')
      throw new BleError('no_adapter', `${wanted}; BlueZ lists ${names.length === 0 ? 'none' : names.join(', ')}`)
    }
    this.pool ??= new AdapterPool(configured, this.o.fullHoldMs, this.options.now ?? Date.now)
    if (this.unavailableLogged) this.log.info('BlueZ reachable again')
    this.unavailableLogged = false
    this.lastFailureLogged = undefined
    this.discoveryLogged.clear()
    this.log.info({ adapters: configured.map(c => c.name) }, 'BlueZ session open')
    established()
    while (!signal.aborted) {
      await this.tick(session, signal)
      await Promise.race([sleep(this.o.rescanIntervalMs, signal), session.broken])
    }
  }

  private async tick (session: BluezSession, signal: AbortSignal): Promise<void> {
    const pool = this.pool as AdapterPool
    const listed = new Set(await session.call(session.bluetooth.adapters(), 'list adapters', signal))
    const heard = new Map<string, Array<{ adapter: string, props: Record<string, unknown> }>>()
    for (const name of pool.names) {
      const hearing = listed.has(name) ? await this.scanAdapter(session, name, signal) : undefined
      if (hearing === undefined) continue
      for (const [address, props] of hearing) {
        const list = heard.get(address) ?? []
        list.push({ adapter: name, props })
        heard.set(address, list)
      }
    }
    for (const name of pool.names) if (!listed.has(name)) this.adapterGone(name)
    const problems = [...this.trouble.values()]
    if (problems.length === 0) this.setState('running')
    else this.setState('degraded', problems.join('; '))
    for (const [address, hearings] of heard) await this.visit(session, address, hearings, signal)
    for (const [address, link] of this.links) {
      if (!heard.has(address)) {
        this.log.info({ device: address }, 'strap vanished')
        this.links.delete(address)
        pool.forget(address)
        await link.stop(false)
      }
    }
  }

  /** Checks one adapter on D-Bus: power and discovery; returns the heart-rate straps it lists, or undefined when it cannot hear. */
  private async scanAdapter (session: BluezSession, name: string, signal: AbortSignal): Promise<Map<string, Record<string, unknown>> | undefined> {
    const pool = this.pool as AdapterPool
    let adapterProps
    try {
      adapterProps = await session.getAll(adapterPath(name), 'org.bluez.Adapter1', signal)
    } catch (err) {
      if (bluezErrorName(err) === 'org.freedesktop.DBus.Error.UnknownObject') { this.adapterGone(name); return undefined }
      throw err
    }
    let adapter = this.nodeAdapters.get(name)
    if (adapter === undefined) {
      adapter = await session.call(session.bluetooth.getAdapter(name), 'get adapter', signal)
      this.nodeAdapters.set(name, adapter)
      pool.present(name, adapter)
      if (this.trouble.get(name)?.endsWith('is not there') === true) this.log.info({ adapter: name }, 'adapter is back')
      this.trouble.delete(name)
      this.kickAll()
    }
    if (adapterProps.Powered !== true) {
      if (this.trouble.get(name) === undefined) this.log.warn({ adapter: name }, 'adapter is powered off; waiting for it')
      this.trouble.set(name, `adapter ${name} is powered off`)
      this.discoveryLogged.delete(name)
      pool.setPowered(name, false)
      return undefined
    }
    if (this.trouble.has(name)) {
      this.trouble.delete(name)
      this.log.info({ adapter: name }, 'adapter powered on')
      pool.setPowered(name, true)
      this.kickAll()
    }
    pool.setPowered(name, true)
    if (adapterProps.Discovering !== true) {
      try {
        await session.call(adapter.startDiscovery(), 'StartDiscovery', signal)
        if (!this.discoveryLogged.has(name)) this.log.info({ adapter: name }, 'discovery started')
        this.discoveryLogged.add(name)
        this.discoveryFailureLogged = undefined
      } catch (err) {
        // InProgress, NotReady (powered off meanwhile), node-ble's "already in
        // progress": the next scan tries again. Bus and timeout errors end the session.
        if (isBleError(err) || isNoBluez(err)) throw err
        const detail = describeError(err)
        if (bluezErrorName(err) !== 'org.bluez.Error.InProgress' && detail !== this.discoveryFailureLogged) {
          this.discoveryFailureLogged = detail
          this.log.warn({ adapter: name, err: detail }, 'could not start discovery; retrying on the next scan')
        }
      }
    }
    const out = new Map<string, Record<string, unknown>>()
    const rssi = new Map<string, number | null>()
    for (const raw of await session.call(adapter.devices(), 'list devices', signal)) {
      const address = raw.toUpperCase()
      let props
      try {
        props = await session.getAll(devicePath(name, address), 'org.bluez.Device1', signal)
      } catch (err) {
        if (bluezErrorName(err) !== undefined) continue // removed between listing and reading
        throw err
      }
      const uuids = Array.isArray(props.UUIDs) ? props.UUIDs as unknown[] : []
      if (!uuids.includes(HEART_RATE_SERVICE_UUID)) continue
      out.set(address, props)
      rssi.set(address, typeof props.RSSI === 'number' ? props.RSSI : null)
    }
    pool.heard(name, rssi)
    return out
  }

  /** The adapter left D-Bus (unplugged): its links move to the other adapters; it stays listed as missing. */
  private adapterGone (name: string): void {
    const pool = this.pool as AdapterPool
    const known = this.nodeAdapters.delete(name)
    if (!known && this.trouble.has(name)) return
    if (known) this.log.warn({ adapter: name }, 'adapter went away; moving its straps to the other adapters')
    this.trouble.set(name, `adapter ${name} is not there`)
    this.discoveryLogged.delete(name)
    pool.gone(name)
    for (const link of this.links.values()) if (link.slot?.name === name) link.move()
  }

  /** A link found its adapter gone from D-Bus before the next scan: check it now. */
  private checkAdapter (name: string): void {
    const session = this.session
    if (session === undefined || !this.nodeAdapters.has(name)) return
    session.getAll(adapterPath(name), 'org.bluez.Adapter1').catch((err: unknown) => {
      if (bluezErrorName(err) === 'org.freedesktop.DBus.Error.UnknownObject' && this.session === session) this.adapterGone(name)
    })
  }

  private kickAll (): void {
    for (const link of this.links.values()) link.kick()
  }

  /** Whether any configured adapter can take a link now (otherwise links wait for a kick). */
  private get noAdapter (): boolean {
    return this.pool === undefined || this.pool.names.every(n => this.trouble.has(n) || !this.nodeAdapters.has(n))
  }

  private async visit (session: BluezSession, address: string, hearings: Array<{ adapter: string, props: Record<string, unknown> }>, signal: AbortSignal): Promise<void> {
    const link = this.links.get(address)
    const via = link?.connected === true ? link.slot?.name : undefined
    // The props of the adapter it is linked through, else of the one that hears it best.
    const best = hearings.find(h => h.adapter === via) ?? [...hearings].sort((x, y) => rssiOf(y.props) - rssiOf(x.props))[0]
    if (best === undefined) return
    const props = best.props
    const path = devicePath(best.adapter, address)
    // BlueZ < 5.80 shows the battery as Battery1 on the device while connected.
    const battery = props.Connected === true ? await session.battery(path, signal) : undefined
    if (link !== undefined && battery !== undefined) link.battery = battery
    const name = typeof props.Alias === 'string' ? props.Alias : typeof props.Name === 'string' ? props.Name : undefined
    const rssi = Math.max(...hearings.map(h => rssiOf(h.props)))
    this.sink?.device({
      device_id: address,
      source: 'ble',
      ...(name !== undefined ? { name } : {}),
      ...(Number.isFinite(rssi) ? { rssi } : {}),
      ...(battery !== undefined ? { battery_percent: battery } : {}),
      connected: link?.connected ?? false,
      ...(via !== undefined ? { adapter: via } : {}),
      seen_at: Date.now()
    })
    const wanted = await this.wanted(address)
    if (wanted && link === undefined && !signal.aborted && this.sink !== undefined && this.pool !== undefined) {
      const created = new StrapLink({
        address,
        pool: this.pool,
        session,
        sink: this.sink,
        log: this.log,
        connectTimeoutMs: this.o.connectTimeoutMs,
        gattTimeoutMs: this.o.gattTimeoutMs,
        backoff: this.o.backoff,
        maxInFlight: this.o.maxInFlight,
        silentAfterMs: this.o.silentAfterMs,
        paused: () => this.noAdapter,
        onChange: () => { this.emitStatus() },
        adapterTrouble: (adapter) => { this.checkAdapter(adapter) }
      })
      this.links.set(address, created)
      this.log.info({ device: address, name }, 'connecting to strap')
      created.start()
    } else if (!wanted && link !== undefined) {
      this.log.info({ device: address }, 'strap no longer allowed; disconnecting')
      this.links.delete(address)
      this.pool?.forget(address)
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

function rssiOf (props: Record<string, unknown>): number {
  return typeof props.RSSI === 'number' ? props.RSSI : -Infinity
}

export type { AdapterConfig, AdapterStatus }
