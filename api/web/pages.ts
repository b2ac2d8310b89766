// The web pages feature (issue 6): static assets (ES modules and CSS under
// api/web/static, uPlot from node_modules), the public overlays (widget,
// room display), the signed-in member pages and the operator pages.
// Registered once in api/http/features.ts. README "Web pages".
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { FastifyInstance } from 'fastify'
import fastifyStatic from '@fastify/static'
import { overlayRoutes } from './overlay.ts'
import { memberRoutes } from './member.ts'
import { operatorRoutes } from './operator.ts'

export const STATIC_DIR = join(dirname(fileURLToPath(import.meta.url)), 'static')
/** node_modules/uplot/dist, found through the package's main entry (uPlot.cjs.js lives there). */
export const UPLOT_DIR = dirname(createRequire(import.meta.url).resolve('uplot'))
const UPLOT_FILES = new Set(['/uPlot.esm.js', '/uPlot.min.css'])

export async function webPlugin (app: FastifyInstance): Promise<void> {
  await app.register(fastifyStatic, { root: STATIC_DIR, prefix: '/web/static/', decorateReply: false, index: false, maxAge: 60_000 })
  await app.register(fastifyStatic, {
    root: UPLOT_DIR,
    prefix: '/web/vendor/uplot/',
    decorateReply: false,
    index: false,
    maxAge: 3_600_000,
    allowedPath: (path: string) => UPLOT_FILES.has(path)
  })
  await app.register(overlayRoutes)
  await app.register(memberRoutes)
  await app.register(operatorRoutes)
}
