// The feature plugins of the API, registered in this order by buildServer.
// Each feature is one fastify plugin in its own file.
import type { FastifyPluginAsync } from 'fastify'
import { adminPlugin } from './admin.ts'
import { oauthPlugin } from '../oauth/plugin.ts'

export const apiFeatures: FastifyPluginAsync[] = [
  adminPlugin,
  oauthPlugin
]
