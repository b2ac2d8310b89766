// The configuration's JSON Schema is written with TypeBox so that the Config
// type is derived from it (issue 11, item 4). What ajv validates must stay
// what the hand-written schema said: the fixture is that schema, serialised
// before the rewrite (JSON.stringify drops TypeBox's [Kind] symbols).
import t from 'tap'
import { readFile } from 'node:fs/promises'
import { CONFIG_SCHEMA } from '../../relay/config-schema.ts'

/** For every schema with `properties`, its path and its keys in order (the order docs/operator.md and error lists follow). */
function propertyOrder (schema: unknown, path = '(root)', out: string[] = []): string[] {
  if (schema === null || typeof schema !== 'object') return out
  const properties = (schema as { properties?: object }).properties
  if (properties !== undefined) out.push(`${path}: ${Object.keys(properties).join(', ')}`)
  for (const [k, v] of Object.entries(schema)) propertyOrder(v, `${path}/${k}`, out)
  return out
}

t.test('the TypeBox configuration schema emits the same JSON Schema as before', async t => {
  const expected = JSON.parse(await readFile(new URL('./fixtures/config-schema.json', import.meta.url), 'utf8')) as Record<string, unknown>
  const actual = JSON.parse(JSON.stringify(CONFIG_SCHEMA)) as Record<string, unknown>
  t.same(actual, expected, 'same keywords, bounds, defaults, required and additionalProperties')
  t.strictSame(propertyOrder(actual), propertyOrder(expected), 'the keys of every section in the same order')
})
