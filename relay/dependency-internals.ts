// The private internals of dependencies that hr-relay relies on: only the
// BLE stack's, each working around a defect of node-ble 1.13.0 or dbus-next
// 0.10.2 that a relay which reconnects for days would otherwise hit. Both
// versions are pinned exactly in package.json, and the BLE source checks
// these at load (assertDependencyInternals), so that an upgrade which changes
// one fails loudly with a named error instead of silently leaking. Bump a pin
// only after these checks and the BLE tests pass against the new version,
// and drop an entry once its upstream fix is released.
//
//   dbus-next 0.10.2  MessageBus#_addMatch / #_removeMatch, replaced per connection
//     relay/sources/ble/session.ts (fixMatchRuleRefcount). The refcount check passes
//     its arguments to hasOwnProperty swapped, so AddMatch is sent for every first
//     listener and RemoveMatch never, and dbus-daemon refuses a connection's 513th
//     rule. Upstream: dbusjs/node-dbus-next pull requests #110 and #126 (not
//     released), reported through chrvadala/node-ble issue #36.
//   dbus-next 0.10.2  MessageBus#_connection.stream, destroyed after end
//     relay/sources/ble/session.ts (close). MessageBus#disconnect(), which node-ble's
//     destroy() calls, only ends the writable side of the socket, which stays
//     open until dbus-daemon answers with its own end. No upstream issue known.
//   dbus-next 0.10.2  MessageBus#_signals (the router of signal listeners), counted
//     relay/sources/ble/node-ble-quirks.ts (signalListenerCount): the BLE source's
//     diagnostics, which the reconnect tests use to show that the two listener
//     leaks here stay fixed. Read only; no defect of its own.
//   node-ble 1.13.0   Bluetooth#dbus, the MessageBus createBluetooth() made
//     relay/sources/ble/session.ts: node-ble adds no 'error' listener to its bus,
//     so a lost D-Bus connection would be an uncaught 'error' event; the session
//     adds one, and reads properties node-ble does not cover through the same bus.
//     createBluetooth() returns only the Bluetooth object and destroy(). No
//     upstream issue known.
//   node-ble 1.13.0   Device/GattServer/GattService/GattCharacteristic .helper.removeListeners()
//     relay/sources/ble/node-ble-quirks.ts. node-ble adds PropertiesChanged listeners
//     to its BusHelper proxies and removes them only when Disconnect or StopNotify
//     succeeds (Device#disconnect() is the only caller of removeListeners()),
//     which never happens after a link drop. Upstream: chrvadala/node-ble issues
//     #35, #12 and #76, and pull request #37.
import { createRequire } from 'node:module'
import { EventEmitter } from 'node:events'
import { existsSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { relayErrorMessage } from './error-codes.ts'

const require = createRequire(import.meta.url)

export class DependencyInternalsError extends Error {
  readonly code = 'HR_DEPENDENCY_INTERNALS'
  constructor (pkg: string, what: string) {
    super(relayErrorMessage('HR_DEPENDENCY_INTERNALS', { pkg, version: installedVersion(pkg), what }))
    this.name = 'DependencyInternalsError'
  }
}

/** The installed version of a package (read from its package.json next to its entry point; some packages do not export it). */
export function installedVersion (pkg: string): string {
  try {
    for (let dir = dirname(require.resolve(pkg)); dir !== dirname(dir); dir = dirname(dir)) {
      const file = join(dir, 'package.json')
      if (!existsSync(file)) continue
      const meta = JSON.parse(readFileSync(file, 'utf8')) as { name?: unknown, version?: unknown }
      if (meta.name === pkg) return String(meta.version)
    }
  } catch { /* fall through */ }
  return '(version unknown)'
}

/** dbus-next's private match-rule pair (replaced per connection), its connection's stream and its signal router. */
export function assertDbusNextInternals (): void {
  const MessageBus = require('dbus-next/lib/bus.js') as { prototype: Record<string, unknown> } & (new (conn: unknown) => Record<string, unknown>)
  for (const name of ['_addMatch', '_removeMatch']) {
    if (typeof MessageBus.prototype[name] !== 'function') throw new DependencyInternalsError('dbus-next', `MessageBus#${name}`)
  }
  // A connection that drops what it is given: the constructor stores it and queues a Hello call that is never sent.
  const stream = {}
  const conn = Object.assign(new EventEmitter(), { stream, message (): void {} })
  const bus = new MessageBus(conn)
  if ((bus._connection as { stream?: unknown } | undefined)?.stream !== stream) throw new DependencyInternalsError('dbus-next', 'MessageBus#_connection.stream')
  if (!(bus._signals instanceof EventEmitter)) throw new DependencyInternalsError('dbus-next', 'MessageBus#_signals (an EventEmitter)')
}

/** node-ble's Bluetooth#dbus, and its per-object BusHelper with removeListeners() (node-ble-quirks.ts). */
export function assertNodeBleInternals (): void {
  const Bluetooth = require('node-ble/src/Bluetooth.js') as new (dbus: unknown) => { dbus?: unknown }
  // The constructor only stores the bus (no D-Bus traffic).
  const bus = {}
  if (new Bluetooth(bus).dbus !== bus) throw new DependencyInternalsError('node-ble', 'Bluetooth#dbus')
  const classes: Record<string, new (...args: unknown[]) => unknown> = {
    Device: require('node-ble/src/Device.js'),
    GattServer: require('node-ble/src/GattServer.js'),
    GattService: require('node-ble/src/GattService.js'),
    GattCharacteristic: require('node-ble/src/GattCharacteristic.js')
  }
  for (const [name, Cls] of Object.entries(classes)) {
    // The constructors only store their arguments (no D-Bus traffic).
    const helper = (new Cls(null, 'hci0', 'dev_00_00_00_00_00_00', 'service0001', 'char0001') as { helper?: { removeListeners?: unknown } }).helper
    if (typeof helper?.removeListeners !== 'function') throw new DependencyInternalsError('node-ble', `${name}.helper.removeListeners()`)
  }
}

/** Every check, run when the BLE source loads (relay/sources/ble.ts). */
export function assertDependencyInternals (): void {
  assertDbusNextInternals()
  assertNodeBleInternals()
}
