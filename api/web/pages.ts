// The web pages feature (issue 6): static assets (ES modules and CSS under
// api/web/static, uPlot from node_modules), the public overlays (widget,
// room display), the signed-in member pages and the operator pages.
// Registered once in api/http/features.ts. docs/operator.md "Pages the box serves".
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { FastifyPluginAsync } from 'fastify'
import { staticFiles } from './static-files.ts'
import { overlayRoutes, type OverlayUses } from './overlay.ts'
import { memberRoutes, type MemberUses } from './member.ts'
import { operatorRoutes, type OperatorPagesUses } from './operator.ts'

/** What the web pages use: what the overlays, the member pages and the operator pages each name. */
export type WebUses = OverlayUses & MemberUses & OperatorPagesUses

export const STATIC_DIR = join(dirname(fileURLToPath(import.meta.url)), 'static')
/** node_modules/uplot/dist, found through the package's main entry (uPlot.cjs.js lives there). */
export const UPLOT_DIR = dirname(createRequire(import.meta.url).resolve('uplot'))
const UPLOT_FILES = new Set(['uPlot.esm.js', 'uPlot.min.css'])

export const webPlugin: FastifyPluginAsync<WebUses> = async (app, uses) => {
  await app.register(staticFiles({ prefix: '/web/static/', root: STATIC_DIR, maxAgeS: 60 }))
  await app.register(staticFiles({ prefix: '/web/vendor/uplot/', root: UPLOT_DIR, maxAgeS: 3600, only: UPLOT_FILES }))
  await app.register(overlayRoutes, uses)
  await app.register(memberRoutes, uses)
  await app.register(operatorRoutes, uses)
}
