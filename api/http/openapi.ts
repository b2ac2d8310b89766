// The API's OpenAPI 3.1 document at GET /openapi.json, generated from the
// routes' own schemas by @fastify/swagger, and a reference page at GET /docs
// (Swagger UI, every file served by the box itself: it may have no internet).
//
// An onRoute hook, added before any route, keeps each route's method, path and
// schema as it is registered. The document is generated on the first request
// for it, in a Fastify instance of its own that is given those routes with
// their schemas and nothing else, and then closed: the generator's modules are
// loaded when someone reads the documentation, not in every running box.
// Tags, summaries and security come from ./openapi-operations.ts; routes that
// are not API (pages, static files, the documentation) are left out there.
import { readFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import Fastify, { type FastifyInstance, type FastifyReply, type RouteOptions } from 'fastify'
import type { FastifyDynamicSwaggerOptions } from '@fastify/swagger'
import { staticFiles } from '../web/static-files.ts'
import { hiddenReason, OPERATIONS, securityOf, securitySchemes, TAGS } from './openapi-operations.ts'

export interface OpenApiOptions {
  /** The base URL clients use (http.public_url, or the listening address): the document's server. */
  publicUrl: () => string
}

interface CollectedRoute { method: string, url: string, schema: Record<string, unknown> | undefined, websocket: boolean }

/** Swagger UI's files (the npm package swagger-ui-dist); the page uses these two. */
const SWAGGER_UI_DIR = dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'))
const SWAGGER_UI_FILES = new Set(['swagger-ui.css', 'swagger-ui-bundle.js'])

/** `/a/:id/b` → `/a/{id}/b`. */
export function openApiPath (url: string): string {
  return url.replace(/:([A-Za-z0-9_]+)/g, '{$1}')
}

const DESCRIPTION = [
  'The HTTP and WebSocket API of an hr-relay box: heart-rate readings from BLE straps, serial sensors, MQTT devices and apps, ' +
    'and what apps, overlays and games read from them.',
  '',
  'Authenticate with an OAuth 2.0 access token as `Authorization: Bearer <token>` (see the security schemes). ' +
    'WebSocket endpoints and the write endpoint also take the token as the `access_token` query parameter. ' +
    'Errors are JSON: `{"error_code": <number>, "error_message": <text>}`; the OAuth endpoints answer as RFC 6749 says.'
].join('\n')

/** The version in hr-relay's package.json, found by walking up from this module (sources and the compiled dist/ alike). */
async function packageVersion (): Promise<string> {
  let dir = dirname(fileURLToPath(import.meta.url))
  for (;;) {
    try {
      const pkg = JSON.parse(await readFile(join(dir, 'package.json'), 'utf8')) as { name?: unknown, version?: unknown }
      if (pkg.name === 'hr-relay' && typeof pkg.version === 'string') return pkg.version
    } catch {}
    const up = dirname(dir)
    if (up === dir) return '0.0.0'
    dir = up
  }
}

/** The route's schema for the document: a JSON copy (without TypeBox's symbols) with its tag, summary and security. */
function documentedSchema (route: CollectedRoute): Record<string, unknown> {
  const schema = route.schema === undefined ? {} : JSON.parse(JSON.stringify(route.schema)) as Record<string, unknown>
  const op = OPERATIONS[`${route.method} ${openApiPath(route.url)}`]
  const websocket = 'WebSocket: connect with `Upgrade: websocket`; a request without it is answered 426.'
  if (route.websocket) {
    schema.description = websocket
    schema.response = { 101: { type: 'null', description: 'Switching Protocols: the stream of messages follows' }, ...(schema.response as object | undefined) }
  }
  if (op === undefined) return { ...schema, tags: ['Service'] }
  return { ...schema, tags: [op.tag], summary: op.summary, security: securityOf(op.access) }
}

/** Generates the document in a Fastify instance of its own, from the routes' method, path and schema only. */
async function generate (routes: CollectedRoute[]): Promise<Record<string, unknown>> {
  const openapi = {
    openapi: '3.1.0',
    info: { title: 'hr-relay', version: await packageVersion(), description: DESCRIPTION, license: { name: 'MIT', identifier: 'MIT' } },
    tags: TAGS.map(t => ({ ...t })),
    // The generator reads the schemes' kinds; their URLs are set per public URL when the document is served.
    components: { securitySchemes: securitySchemes('http://localhost') }
  } as FastifyDynamicSwaggerOptions['openapi']
  const { default: swagger } = await import('@fastify/swagger')
  const app = Fastify({ exposeHeadRoutes: false })
  // No request reaches this instance: its routes need no validator or serializer.
  app.setValidatorCompiler(() => () => true)
  app.setSerializerCompiler(() => data => JSON.stringify(data))
  try {
    await app.register(swagger, { openapi })
    for (const route of routes) {
      app.route({ method: route.method, url: route.url, schema: documentedSchema(route), handler: async () => null })
    }
    await app.ready()
    return app.swagger() as unknown as Record<string, unknown>
  } finally {
    await app.close()
  }
}

/** The reference page: Swagger UI's bundle and style sheet from /docs/static, started by /docs/static/start.js (no inline script). */
const DOCS_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>hr-relay API reference</title>
<link rel="stylesheet" href="/docs/static/swagger-ui.css">
</head>
<body>
<div id="swagger-ui"></div>
<script src="/docs/static/swagger-ui-bundle.js"></script>
<script src="/docs/static/start.js"></script>
</body>
</html>
`

/** Starts Swagger UI on /openapi.json; validatorUrl null: no badge fetched from the validator's site. */
const START_JS = `window.ui = window.SwaggerUIBundle({
  url: '/openapi.json',
  dom_id: '#swagger-ui',
  deepLinking: true,
  validatorUrl: null,
  layout: 'BaseLayout',
  presets: [window.SwaggerUIBundle.presets.apis]
})
`

/** Scripts, styles and the document from this origin only; "Try it out" may also call the public URL. */
function docsHeaders (reply: FastifyReply, publicUrl: string): FastifyReply {
  let origin = ''
  try { origin = new URL(publicUrl).origin } catch {}
  const csp = [
    "default-src 'none'", "script-src 'self'", "style-src 'self' 'unsafe-inline'", "img-src 'self' data:",
    `connect-src 'self'${origin === '' ? '' : ' ' + origin}`, "font-src 'self' data:", "form-action 'none'", "base-uri 'none'", "frame-ancestors 'none'"
  ].join('; ')
  return reply.headers({ 'content-security-policy': csp, 'referrer-policy': 'no-referrer', 'x-frame-options': 'DENY' })
}

/**
 * Adds the route-collecting hook to `app` (the root instance, before any route is registered) and the routes
 * /openapi.json, /docs and /docs/static/*.
 */
export function registerOpenApi (app: FastifyInstance, options: OpenApiOptions): void {
  const routes: CollectedRoute[] = []
  app.addHook('onRoute', (route: RouteOptions) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method]
    for (const method of methods) {
      if (hiddenReason(method, route.url) !== undefined) continue
      // A WebSocket route has its wsHandler once server.ts's own onRoute hook (added earlier) has run.
      routes.push({ method, url: route.url, schema: route.schema as Record<string, unknown> | undefined, websocket: route.wsHandler !== undefined || route.websocket === true })
    }
  })

  let generated: Promise<Record<string, unknown>> | undefined
  const cache = new Map<string, string>()
  const documentFor = async (publicUrl: string): Promise<string> => {
    const hit = cache.get(publicUrl)
    if (hit !== undefined) return hit
    generated ??= generate(routes)
    let doc: Record<string, unknown>
    try {
      doc = await generated
    } catch (err) {
      generated = undefined
      throw err
    }
    const components = (doc.components ?? {}) as Record<string, unknown>
    const text = JSON.stringify({ ...doc, servers: [{ url: publicUrl }], components: { ...components, securitySchemes: securitySchemes(publicUrl) } })
    cache.clear()
    cache.set(publicUrl, text)
    return text
  }

  app.get('/openapi.json', async (_request, reply) => {
    const publicUrl = options.publicUrl()
    return await reply.type('application/json; charset=utf-8').header('cache-control', 'no-cache').send(await documentFor(publicUrl))
  })
  app.get('/docs', async (_request, reply) => {
    return await docsHeaders(reply, options.publicUrl()).type('text/html; charset=utf-8').header('cache-control', 'no-cache').send(DOCS_HTML)
  })
  app.get('/docs/static/start.js', async (_request, reply) => {
    return await reply.type('text/javascript; charset=utf-8').header('cache-control', 'public, max-age=3600').send(START_JS)
  })
  void app.register(staticFiles({ prefix: '/docs/static/', root: SWAGGER_UI_DIR, maxAgeS: 3600, only: SWAGGER_UI_FILES }))
}
