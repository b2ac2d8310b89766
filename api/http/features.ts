// The feature plugins of the API, registered in this order by buildServer.
// Each feature is one fastify plugin in its own file; buildServer registers it
// with the services as its options, and the plugin's options type names the
// services it uses.
import type { FastifyPluginAsync } from 'fastify'
import type { Services } from '../services.ts'
import { adminPlugin } from './admin.ts'
import { dataPlugin } from './data.ts'
import { historyPlugin } from './history.ts'
import { sessionsPlugin } from './sessions.ts'
import { realtimePlugin, widgetStreamPlugin } from './realtime.ts'
import { statisticsPlugin } from './statistics.ts'
import { widgetsPlugin } from './widgets.ts'
import { profilePlugin } from './profile.ts'
import { gameModPlugin } from './gamemod.ts'
import { richPresencePlugin } from './rich-presence.ts'
import { featureFlagsPlugin } from './feature-flags.ts'
import { ingestionPausePlugin } from './ingestion-pause.ts'
import { roomsPlugin } from './rooms.ts'
import { adminRoomsPlugin } from './admin-rooms.ts'
import { adminClassesPlugin } from './admin-classes.ts'
import { classesPlugin } from './classes.ts'
import { adminDevicesPlugin } from './admin-devices.ts'
import { adminPrivacyPlugin } from './admin-privacy.ts'
import { adminAuditPlugin } from './admin-audit.ts'
import { adminOperatorsPlugin } from './admin-operators.ts'
import { oauthPlugin } from '../oauth/plugin.ts'
import { webPlugin } from '../web/pages.ts'

export const apiFeatures: Array<FastifyPluginAsync<Services>> = [
  adminPlugin,
  dataPlugin,
  historyPlugin,
  sessionsPlugin,
  realtimePlugin,
  widgetStreamPlugin,
  statisticsPlugin,
  widgetsPlugin,
  profilePlugin,
  gameModPlugin,
  richPresencePlugin,
  featureFlagsPlugin,
  ingestionPausePlugin,
  roomsPlugin,
  adminRoomsPlugin,
  adminClassesPlugin,
  classesPlugin,
  adminDevicesPlugin,
  adminPrivacyPlugin,
  adminAuditPlugin,
  adminOperatorsPlugin,
  oauthPlugin,
  webPlugin
]
