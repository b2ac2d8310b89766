// One connection to BlueZ through node-ble: the node-ble Bluetooth object,
// its D-Bus connection with the error listener node-ble never adds, and
// direct property reads (Get/GetAll) for what node-ble does not cover
// (Adapter1.Powered, Device1 in one call, Battery1.Percentage).
import type { Socket } from 'node:net'
import * as dbus from 'dbus-next'
import NodeBle from 'node-ble'
import { BleError, bluezErrorName, describeError } from './errors.ts'
import { withDeadline } from './timeout.ts'

export type Props = Record<string, unknown>

export class BluezSession {
  readonly bluetooth: NodeBle.Bluetooth
  readonly bus: dbus.MessageBus
  /** Rejects with BleError('no_bluez') once the D-Bus connection fails. */
  readonly broken: Promise<never>
  private readonly destroyBus: () => void
  private failure: unknown
  private closed = false
  private readonly onBusError: (err: unknown) => void

  /**
   * Opens the system bus named by DBUS_SYSTEM_BUS_ADDRESS (node-ble reads the
   * environment itself). Does no call yet; a missing bus shows up as
   * `broken` rejecting.
   */
  constructor (readonly callTimeoutMs: number) {
    const { bluetooth, destroy } = NodeBle.createBluetooth()
    this.bluetooth = bluetooth
    this.destroyBus = destroy
    this.bus = (bluetooth as unknown as { dbus: dbus.MessageBus }).dbus
    let reject!: (err: unknown) => void
    this.broken = new Promise<never>((_resolve, rej) => { reject = rej })
    this.broken.catch(() => {})
    const address = process.env.DBUS_SYSTEM_BUS_ADDRESS ?? 'unix:path=/var/run/dbus/system_bus_socket'
    this.onBusError = (err: unknown) => {
      // A D-Bus error reply (e.g. an AddMatch refused) is not a broken connection.
      if (bluezErrorName(err) !== undefined) { this.callErrors++; return }
      if (this.failure !== undefined) return
      this.failure = err
      reject(new BleError('no_bluez', `${address}: ${describeError(err)}`, { cause: err }))
    }
    this.bus.on('error', this.onBusError)
    fixMatchRuleRefcount(this.bus)
  }

  /** D-Bus error replies reported on the connection rather than to a caller. */
  callErrors = 0

  /** The connection's unique name once connected (e.g. ':1.7'). */
  get uniqueName (): string | undefined {
    const name = (this.bus as unknown as { name?: unknown }).name
    return typeof name === 'string' ? name : undefined
  }

  get failed (): boolean { return this.failure !== undefined }

  /** Races `promise` against the deadline, the bus failing and `signal`. */
  async call<T> (promise: Promise<T>, what: string, signal?: AbortSignal, ms = this.callTimeoutMs): Promise<T> {
    return await withDeadline(Promise.race([promise, this.broken]), ms, what, signal)
  }

  async getAll (path: string, iface: string, signal?: AbortSignal): Promise<Props> {
    const reply = await this.call(this.bus.call(new dbus.Message({
      destination: 'org.bluez',
      path,
      interface: 'org.freedesktop.DBus.Properties',
      member: 'GetAll',
      signature: 's',
      body: [iface]
    })), `GetAll ${iface} on ${path}`, signal)
    const dict = (reply?.body[0] ?? {}) as Record<string, dbus.Variant>
    const out: Props = {}
    for (const [k, v] of Object.entries(dict)) out[k] = v.value
    return out
  }

  async get (path: string, iface: string, name: string, signal?: AbortSignal): Promise<unknown> {
    const reply = await this.call(this.bus.call(new dbus.Message({
      destination: 'org.bluez',
      path,
      interface: 'org.freedesktop.DBus.Properties',
      member: 'Get',
      signature: 'ss',
      body: [iface, name]
    })), `Get ${iface}.${name} on ${path}`, signal)
    return (reply?.body[0] as dbus.Variant | undefined)?.value
  }

  /** Battery1.Percentage, or undefined when BlueZ shows no battery for the device. */
  async battery (path: string, signal?: AbortSignal): Promise<number | undefined> {
    try {
      const value = await this.get(path, 'org.bluez.Battery1', 'Percentage', signal)
      return typeof value === 'number' ? value : undefined
    } catch (err) {
      if (bluezErrorName(err) !== undefined) return undefined
      throw err
    }
  }

  /**
   * Ends the connection and resolves once its socket is closed (at most
   * CLOSE_WAIT_MS), so that a stopped source leaves no handle behind. The
   * error listener stays on the discarded bus: a socket that is still
   * connecting may report its failure after end(), and an 'error' event
   * without a listener would crash the process.
   */
  async close (): Promise<void> {
    if (this.closed) return
    this.closed = true
    this.bus.off('error', this.onBusError)
    this.bus.on('error', () => {})
    const stream = (this.bus as unknown as MatchInternals)._connection?.stream
    const closed = stream === undefined || stream.destroyed === true
      ? undefined
      : new Promise<void>(resolve => { stream.once('close', () => { resolve() }) })
    try { this.destroyBus() } catch { /* already gone */ }
    if (stream === undefined || closed === undefined) return
    // node-ble's destroy() only ends the writable side: the socket stayed open until dbus-daemon answered with its
    // own end, which a busy machine schedules late (the conformance suite saw a pipe outlive stop()). Nothing is
    // read from a closed session, so the socket closes as soon as our end is written.
    if (stream.writableFinished === true) stream.destroy()
    else stream.once('finish', () => { stream.destroy() })
    let timer: NodeJS.Timeout | undefined
    await Promise.race([closed, new Promise<void>(resolve => { timer = setTimeout(resolve, CLOSE_WAIT_MS) })])
    clearTimeout(timer)
  }
}

interface MatchInternals {
  _addMatch?: (rule: string) => Promise<unknown>
  _removeMatch?: (rule: string) => Promise<unknown>
  /** dbus-next's connection: a net.Socket to the bus. */
  _connection?: { stream?: Socket }
  call: (msg: dbus.Message) => Promise<unknown>
}

/** How long close() waits for the socket to close before it gives up waiting (it is destroyed either way). */
const CLOSE_WAIT_MS = 2000

/**
 * dbus-next 0.10.2 refcounts match rules with the arguments of hasOwnProperty
 * swapped, so it sends AddMatch every time a signal gets its first listener
 * and never sends RemoveMatch. Every reconnect then leaves rules behind in
 * dbus-daemon, and the system bus refuses more than 512 per connection.
 * Replace the pair on this connection with a correct refcount.
 */
function fixMatchRuleRefcount (bus: dbus.MessageBus): void {
  const b = bus as unknown as MatchInternals
  if (typeof b._addMatch !== 'function' || typeof b._removeMatch !== 'function') return
  const counts = new Map<string, number>()
  const send = async (member: 'AddMatch' | 'RemoveMatch', rule: string): Promise<unknown> => await b.call(new dbus.Message({
    destination: 'org.freedesktop.DBus',
    path: '/org/freedesktop/DBus',
    interface: 'org.freedesktop.DBus',
    member,
    signature: 's',
    body: [rule]
  }))
  b._addMatch = async (rule) => {
    const n = counts.get(rule) ?? 0
    counts.set(rule, n + 1)
    return n === 0 ? await send('AddMatch', rule) : undefined
  }
  b._removeMatch = async (rule) => {
    const n = counts.get(rule) ?? 0
    if (n > 1) { counts.set(rule, n - 1); return undefined }
    if (n === 0) return undefined
    counts.delete(rule)
    if (b._connection?.stream?.writable !== true) return undefined
    return await send('RemoveMatch', rule)
  }
}

export function adapterPath (adapter: string): string { return `/org/bluez/${adapter}` }

export function devicePath (adapter: string, address: string): string {
  return `/org/bluez/${adapter}/dev_${address.toUpperCase().replace(/:/g, '_')}`
}
