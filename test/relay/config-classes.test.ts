// classes.* of the configuration: defaults and bounds.
import t from 'tap'
import { ConfigError, validateConfig } from '../../relay/config.ts'

t.test('classes: defaults, and what is refused', async t => {
  t.same(validateConfig({}).classes, { learn_max_heart_rate: true, results_seconds: 120 })
  t.same(validateConfig({ classes: { learn_max_heart_rate: false, results_seconds: 0 } }).classes, { learn_max_heart_rate: false, results_seconds: 0 })
  let err: unknown
  try { validateConfig({ classes: { results_seconds: 3601, learn: true } }) } catch (e) { err = e }
  t.ok(err instanceof ConfigError)
  t.same([...(err as ConfigError).problems].sort(), ['classes.results_seconds: must be <= 3600', "classes: must NOT have additional properties 'learn'"].sort())
})
