// mqtt-packet, the MQTT codec under aedes and the mqtt client, calls debug()
// dozens of times for every packet it parses or writes. With DEBUG unset each
// call does nothing, yet still allocates its arguments array (debug's function
// takes ...args) and reads an `enabled` getter: about 1 KB of garbage and some
// microseconds of CPU per reading. When DEBUG is unset at start, `debug`
// hands out a function that returns at once instead. With DEBUG set nothing
// changes, so DEBUG=mqtt-packet:* still prints the codec's trace. What no
// longer reaches those functions is a debug.enable() made later by code
// (nothing in hr-relay makes one). Imported for its effect, before anything
// loads mqtt-packet.
import { createRequire } from 'node:module'

type Debug = ((...args: unknown[]) => void) & { enabled: boolean }
type CreateDebug = ((namespace: string) => Debug) & Record<string, unknown>

const require = createRequire(import.meta.url)

/** Makes `require('debug')`, as mqtt-packet resolves it, return silent functions for disabled namespaces. */
export function quietDebug (env: NodeJS.ProcessEnv = process.env): boolean {
  if ((env.DEBUG ?? '') !== '') return false
  const id = createRequire(require.resolve('mqtt-packet')).resolve('debug')
  const real = require(id) as CreateDebug
  const cached = require.cache[id]
  if (cached === undefined || real.quiet === true) return false
  const quiet = Object.assign((namespace: string): Debug => {
    const debug = real(namespace)
    if (debug.enabled) return debug
    // Everything but the call itself (enabled, namespace, extend, ...) is the real instance's.
    return Object.setPrototypeOf(function silent (): void {}, debug) as Debug
  }, real, { quiet: true })
  cached.exports = quiet
  return true
}

quietDebug()
