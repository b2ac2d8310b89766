// The private internals of dependencies that hr-relay still relies on, each
// checked at start so that an upgrade which changes one fails loudly here
// (the BLE checks when the BLE source loads, the aedes check when the broker starts)
// instead of silently leaking (D-Bus match rules, node-ble listeners) or
// letting one client take over another's session (aedes). The versions are
// pinned exactly in package.json; bump a pin only after these checks and
// their tests pass against the new version.
//   dbus-next 0.10.2  MessageBus#_addMatch / #_removeMatch   relay/sources/ble/session.ts (refcount fix)
//   node-ble 1.13.0   Device/GattServer/... .helper.removeListeners()   relay/sources/ble/node-ble-quirks.ts
//   aedes 1.2.0       Aedes#clients (client id → Client)     relay/broker/auth.ts (client-id rule)
// One more is not checked at start, because a change there only costs speed:
// the code falls back to the documented way, and a test notices.
//   node 20 http      ServerResponse fields _keepAliveTimeout, _defaultKeepAlive, _maxRequestsPerSocket,
//                     _removedConnection, shouldKeepAlive, finished; the socket's _httpMessage
//                     api/http/latest-lane.ts: the raw keep-alive answer, else writeHead
//                     (test/api/http/latest-lane.test.ts counts the writeHead calls)
import { createRequire } from 'node:module'
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

/** dbus-next's private match-rule pair, replaced per connection by session.ts. */
export function assertDbusNextInternals (): void {
  const MessageBus = require('dbus-next/lib/bus.js') as { prototype: Record<string, unknown> }
  for (const name of ['_addMatch', '_removeMatch']) {
    if (typeof MessageBus.prototype[name] !== 'function') throw new DependencyInternalsError('dbus-next', `MessageBus#${name}`)
  }
}

/** node-ble's per-object BusHelper with removeListeners(), called by node-ble-quirks.ts. */
export function assertNodeBleInternals (): void {
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

/** aedes's table of connected clients by client id, read by the broker's client-id rule. */
export function assertAedesInternals (aedes: object): void {
  const clients = (aedes as { clients?: unknown }).clients
  if (typeof clients !== 'object' || clients === null || Array.isArray(clients)) throw new DependencyInternalsError('aedes', 'Aedes#clients (an object of clients by id)')
}

/** The checks that need no instance, run once at start (relay/main.ts). */
export function assertDependencyInternals (): void {
  assertDbusNextInternals()
  assertNodeBleInternals()
}
