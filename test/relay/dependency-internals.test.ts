// The private internals hr-relay relies on are present in the installed
// versions (the ones pinned in package.json), and a missing one is a loud,
// named error at start rather than a silent leak.
import t from 'tap'
import { createRequire } from 'node:module'
import {
  assertDbusNextInternals, assertDependencyInternals, assertNodeBleInternals, DependencyInternalsError, installedVersion
} from '../../relay/dependency-internals.ts'

const require = createRequire(import.meta.url)
const pkg = require('../../package.json') as { dependencies: Record<string, string> }

t.test('each dependency whose internals are used is pinned to the exact installed version', async t => {
  for (const name of ['dbus-next', 'node-ble']) {
    const installed = installedVersion(name)
    t.match(installed, /^\d+\.\d+\.\d+$/)
    t.equal(pkg.dependencies[name], installed, name)
  }
})

t.test('the installed versions have every internal the relay relies on', async t => {
  t.doesNotThrow(() => { assertDependencyInternals() })
})

t.test('a missing internal fails with a clear, named error', async t => {
  const MessageBus = require('dbus-next/lib/bus.js') as { prototype: Record<string, unknown> }
  const saved = MessageBus.prototype._addMatch
  delete MessageBus.prototype._addMatch
  t.teardown(() => { MessageBus.prototype._addMatch = saved })
  t.throws(() => { assertDbusNextInternals() }, { message: /^dbus-next 0\.10\.2 no longer has MessageBus#_addMatch/ })
  MessageBus.prototype._addMatch = saved
  const BusHelper = require('node-ble/src/BusHelper.js') as { prototype: Record<string, unknown> }
  const remove = BusHelper.prototype.removeListeners
  delete BusHelper.prototype.removeListeners
  t.teardown(() => { BusHelper.prototype.removeListeners = remove })
  const err = (() => { try { assertNodeBleInternals() } catch (e) { return e } })()
  BusHelper.prototype.removeListeners = remove
  t.ok(err instanceof DependencyInternalsError)
  t.match((err as Error).message, /^node-ble 1\.13\.0 no longer has Device\.helper\.removeListeners\(\)/)
})
