// The JSON Schema every route declares (body, querystring, params, headers,
// response), compared with a committed fixture: the schemas are written with
// TypeBox (issue 11, item 4), and what reaches the validator must stay what it
// was, because the 400 answers (`detail` is the validator's message) and the
// response filtering follow from it. After an intended schema change, rewrite
// the fixture: HR_RELAY_WRITE_ROUTE_SCHEMAS=1 and run this file once.
import t from 'tap'
import { readFile, writeFile } from 'node:fs/promises'
import { buildServer } from '../../../api/http/server.ts'
import { apiFeatures } from '../../../api/http/features.ts'
import { adminIntegrationsPlugin } from '../../../api/http/admin-integrations.ts'
import { Integrations } from '../../../api/store/integrations.ts'
import { startTestService } from '../../helpers/service.ts'

const FIXTURE = new URL('./fixtures/route-schemas.json', import.meta.url)
const PARTS = ['body', 'querystring', 'params', 'headers', 'response'] as const

/**
 * Routes whose path parameters had no schema before: with the type provider they declare them (strings,
 * none required, no bounds), so that the handler reads typed params. The router gives every path parameter
 * as a string, so no answer changes.
 */
const ADDED_PARAMS: Record<string, string[]> = {
  'POST /admin/users/:username/features': ['username'],
  'DELETE /admin/users/:username/clients/:client_id': ['username', 'client_id'],
  'DELETE /admin/devices/:device_id': ['device_id'],
  'GET /api/v1/data/sessions/:id/export': ['id'],
  'PUT /admin/users/:username/home-assistant': ['username']
}

t.test('every route declares the same JSON Schema as the fixture', async t => {
  const svc = await startTestService(t)
  const services = svc.service.services
  const routes: Record<string, unknown> = {}
  const app = await buildServer(services, {
    features: [async app => {
      app.addHook('onRoute', route => {
        const schema = route.schema as Record<string, unknown> | undefined
        if (schema === undefined) return
        const methods = Array.isArray(route.method) ? route.method : [route.method]
        const parts: Record<string, unknown> = {}
        for (const p of PARTS) if (schema[p] !== undefined) parts[p] = schema[p]
        // JSON.stringify keeps what the validator sees (TypeBox's [Kind] symbols are dropped).
        for (const m of methods) if (m !== 'HEAD') routes[`${m} ${route.url}`] = JSON.parse(JSON.stringify(parts))
      })
      for (const feature of [...apiFeatures, adminIntegrationsPlugin(new Integrations(services.store))]) await app.register(feature, services)
    }]
  })
  t.teardown(async () => { await app.close() })
  await app.ready()
  if (process.env.HR_RELAY_WRITE_ROUTE_SCHEMAS === '1') await writeFile(FIXTURE, JSON.stringify(routes, null, 2) + '\n')
  const expected = JSON.parse(await readFile(FIXTURE, 'utf8')) as Record<string, Record<string, unknown>>
  for (const [key, names] of Object.entries(ADDED_PARAMS)) {
    expected[key] = { params: { type: 'object', properties: Object.fromEntries(names.map(n => [n, { type: 'string' }])) }, ...expected[key] }
  }
  t.same(Object.keys(routes).sort(), Object.keys(expected).sort(), 'the same routes have schemas')
  for (const [key, schema] of Object.entries(expected)) t.same(routes[key], schema, key)
})
