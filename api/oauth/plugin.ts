// The OAuth 2.0 feature: token endpoints, validate/revoke, and the
// server-rendered sign-in, consent, device and account pages. Registered as
// one encapsulated plugin, so its strict form parser applies to these routes only.
import type { FastifyPluginAsync } from 'fastify'
import { accountRoutes } from './account.ts'
import { authorizeRoutes } from './authorize.ts'
import { createContext, type OAuthUses } from './context.ts'
import { deviceRoutes } from './device.ts'
import { useStrictForms } from './form.ts'
import { revokeValidateRoutes } from './revoke-validate.ts'
import { signInRoutes } from './signin.ts'
import { tokenRoutes } from './token.ts'

export const oauthPlugin: FastifyPluginAsync<OAuthUses> = async (app, uses) => {
  const ctx = createContext(uses)
  useStrictForms(app)
  signInRoutes(app, ctx)
  authorizeRoutes(app, ctx)
  tokenRoutes(app, ctx)
  deviceRoutes(app, ctx)
  revokeValidateRoutes(app, ctx)
  accountRoutes(app, ctx)
}
