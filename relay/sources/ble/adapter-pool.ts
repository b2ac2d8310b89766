// The Bluetooth adapters the BLE source spreads its straps over, each with a
// limit: which adapters are on D-Bus and powered, how well each hears every
// strap, how many links each holds, and which are held full because BlueZ
// refused a Connect or a link stayed silent. StrapLinks ask it for an
// adapter before every attempt; it reserves the slot at once, so that
// parallel attempts cannot all take an adapter's last place.
import type NodeBle from 'node-ble'

export interface AdapterConfig {
  name: string
  /** Links the relay makes through this adapter at most. */
  maxConnections: number
}

/** What /health, /metrics and /operator/devices show of one adapter. */
export interface AdapterStatus {
  name: string
  /** up; full (at max_connections, or held full after a refusal or a silent link); powered_off; missing (not on D-Bus: unplugged, or never seen). */
  state: 'up' | 'full' | 'powered_off' | 'missing'
  /** Straps connected through it now. */
  connections: number
  /** max_connections, or the count it was held full at while the hold lasts. */
  limit: number
  /** Links that connected and subscribed but delivered nothing (monotonic). */
  silent_total: number
  /** Connect calls refused while it held links (monotonic). */
  refused_total: number
}

export interface AdapterSlot { name: string, adapter: NodeBle.Adapter }

interface Entry {
  readonly name: string
  readonly max: number
  present: boolean
  powered: boolean
  adapter: NodeBle.Adapter | undefined
  /** Addresses with an attempt or a link through this adapter (reserved before the first await). */
  readonly assigned: Set<string>
  readonly connected: Set<string>
  /** RSSI of the strap in this adapter's discovery (null: listed without RSSI). */
  readonly heard: Map<string, number | null>
  fullAt: number
  fullUntil: number
  silent: number
  refused: number
}

export class AdapterPool {
  private readonly entries = new Map<string, Entry>()
  /** address -> adapter -> until when the strap avoids it (it was silent there). */
  private readonly avoid = new Map<string, Map<string, number>>()

  constructor (configs: AdapterConfig[], private readonly holdMs: number, private readonly now: () => number) {
    for (const c of configs) {
      this.entries.set(c.name, {
        name: c.name, max: c.maxConnections, present: false, powered: false, adapter: undefined,
        assigned: new Set(), connected: new Set(), heard: new Map(), fullAt: 0, fullUntil: 0, silent: 0, refused: 0
      })
    }
  }

  get names (): string[] { return [...this.entries.keys()] }

  isPresent (name: string): boolean { return this.entries.get(name)?.present === true }

  /** The adapter is on D-Bus with this node-ble object. */
  present (name: string, adapter: NodeBle.Adapter): void {
    const e = this.entry(name)
    e.present = true
    e.adapter = adapter
  }

  /** The adapter left D-Bus: nothing is heard through it until it is back. */
  gone (name: string): void {
    const e = this.entry(name)
    e.present = false
    e.powered = false
    e.adapter = undefined
    e.heard.clear()
  }

  setPowered (name: string, on: boolean): void {
    const e = this.entry(name)
    e.powered = on
    if (!on) e.heard.clear()
  }

  /** One scan's view of what the adapter hears: every heart-rate strap it lists, with its RSSI. */
  heard (name: string, rssi: Map<string, number | null>): void {
    const e = this.entry(name)
    e.heard.clear()
    for (const [address, value] of rssi) e.heard.set(address, value)
  }

  /** Usable adapters that hear `address`, best first. */
  private candidates (address: string): Entry[] {
    const order = this.names
    return [...this.entries.values()]
      .filter(e => e.present && e.powered && e.adapter !== undefined && e.heard.has(address))
      .sort((a, b) => ((b.heard.get(address) ?? -Infinity) - (a.heard.get(address) ?? -Infinity)) ||
        (a.assigned.size - b.assigned.size) || (order.indexOf(a.name) - order.indexOf(b.name)))
  }

  private held (e: Entry, address: string): boolean {
    const others = e.assigned.size - (e.assigned.has(address) ? 1 : 0)
    return this.now() < e.fullUntil && others >= e.fullAt
  }

  private avoided (e: Entry, address: string): boolean {
    return this.now() < (this.avoid.get(address)?.get(e.name) ?? 0)
  }

  private room (e: Entry, address: string): boolean {
    return e.assigned.size - (e.assigned.has(address) ? 1 : 0) < e.max
  }

  /**
   * The adapter for the next attempt at `address`, reserved: the one that
   * hears it best among those with room and not held full, else (when every
   * adapter that hears it is held full or was silent for it) the best one
   * below its max_connections. Undefined when no adapter can take it.
   */
  choose (address: string): AdapterSlot | undefined {
    const all = this.candidates(address).filter(e => this.room(e, address))
    const e = all.find(c => !this.held(c, address) && !this.avoided(c, address)) ?? all[0]
    if (e?.adapter === undefined) return undefined
    e.assigned.add(address)
    return { name: e.name, adapter: e.adapter }
  }

  /** True when an adapter other than `name` would take `address` now without falling back. */
  hasOtherFor (address: string, name: string): boolean {
    return this.candidates(address).some(e => e.name !== name && this.room(e, address) && !this.held(e, address) && !this.avoided(e, address))
  }

  /** The attempt or link through `name` ended. */
  release (name: string, address: string): void {
    const e = this.entries.get(name)
    e?.assigned.delete(address)
    e?.connected.delete(address)
  }

  linked (name: string, address: string): void {
    this.entries.get(name)?.connected.add(address)
  }

  /**
   * Connect was refused with org.bluez.Error.Failed. While the adapter holds
   * other links, that is the controller out of room: it is held full at its
   * current count for the hold time. Returns whether it was.
   */
  refused (name: string, address: string): boolean {
    const e = this.entries.get(name)
    if (e === undefined) return false
    const others = [...e.connected].filter(a => a !== address).length
    if (others === 0) return false
    e.refused++
    e.fullAt = others
    e.fullUntil = this.now() + this.holdMs
    return true
  }

  /**
   * A link through `name` connected and subscribed but delivered nothing: the
   * strap avoids that adapter for the hold time, and while the adapter holds
   * other links it is held full at their count.
   */
  silent (name: string, address: string): void {
    const e = this.entries.get(name)
    if (e === undefined) return
    e.silent++
    const until = this.now() + this.holdMs
    let mine = this.avoid.get(address)
    if (mine === undefined) { mine = new Map(); this.avoid.set(address, mine) }
    mine.set(name, until)
    const others = [...e.connected].filter(a => a !== address).length
    if (others > 0) { e.fullAt = others; e.fullUntil = until }
  }

  /** Forgets a strap the source no longer follows. */
  forget (address: string): void {
    this.avoid.delete(address)
  }

  status (): AdapterStatus[] {
    const now = this.now()
    return [...this.entries.values()].map(e => {
      const holding = now < e.fullUntil
      const full = (holding && e.assigned.size >= e.fullAt) || e.assigned.size >= e.max
      const state = !e.present ? 'missing' : !e.powered ? 'powered_off' : full ? 'full' : 'up'
      return { name: e.name, state, connections: e.connected.size, limit: holding ? Math.min(e.fullAt, e.max) : e.max, silent_total: e.silent, refused_total: e.refused }
    })
  }

  private entry (name: string): Entry {
    const e = this.entries.get(name)
    if (e === undefined) throw new Error(`adapter ${name} is not configured`)
    return e
  }
}
