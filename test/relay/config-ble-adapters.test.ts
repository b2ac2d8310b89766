// ble.adapters and the older ble.adapter: validated by the schema and by the
// rules it cannot state (not both, no name twice), and turned into the one
// list of adapters the BLE source uses.
import t from 'tap'
import { bleAdapters, ConfigError, validateConfig } from '../../relay/config.ts'

const problemsOf = (input: unknown): string[] => {
  try {
    validateConfig(input)
  } catch (err) {
    if (err instanceof ConfigError) return err.problems
    throw err
  }
  return []
}

t.test('ble.adapters: each with a limit, 7 by default', async t => {
  const config = validateConfig({ ble: { adapters: [{ name: 'hci0', max_connections: 3 }, { name: 'hci1' }] } })
  t.same(config.ble.adapters, [{ name: 'hci0', max_connections: 3 }, { name: 'hci1', max_connections: 7 }])
  t.same(bleAdapters(config.ble), [{ name: 'hci0', max_connections: 3 }, { name: 'hci1', max_connections: 7 }])
  t.equal(config.ble.full_hold_ms, 30000)
  t.equal(config.ble.silent_after_ms, 5000)
})

t.test('ble.adapter still works, as one adapter with the default limit; neither key means hci0', async t => {
  t.same(bleAdapters(validateConfig({ ble: { adapter: 'hci1' } }).ble), [{ name: 'hci1', max_connections: 7 }])
  t.same(bleAdapters(validateConfig({}).ble), [{ name: 'hci0', max_connections: 7 }])
})

t.test('both keys, a name listed twice and bad items are refused with a clear message', async t => {
  t.same(problemsOf({ ble: { adapter: 'hci0', adapters: [{ name: 'hci1' }] } }), ['ble: adapter and adapters are both given; list every adapter under adapters'])
  t.same(problemsOf({ ble: { adapters: [{ name: 'hci0' }, { name: 'hci1' }, { name: 'hci0', max_connections: 2 }] } }), ['ble.adapters: hci0 is listed more than once'])
  t.same(problemsOf({ ble: { adapters: [] } }), ['ble.adapters: must NOT have fewer than 1 items'])
  t.same(problemsOf({ ble: { adapters: [{ max_connections: 0, speed: 1 }] } }).sort(), [
    'ble.adapters.0.max_connections: must be >= 1',
    "ble.adapters.0: must NOT have additional properties 'speed'",
    "ble.adapters.0: must have required property 'name'"
  ])
  const err = (() => { try { validateConfig({ ble: { adapter: 'hci0', adapters: [{ name: 'hci1' }] } }, 'relay.json') } catch (e) { return e as Error } })()
  t.match(err?.message, /relay\.json[\s\S]*ble: adapter and adapters are both given/)
})
