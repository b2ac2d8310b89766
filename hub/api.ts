// The hub's HTTP and WebSocket API: the box's own feature plugins (api/http/), registered over the PostgreSQL
// stores (hub/store/) instead of LevelDB, so the hub answers like a box and like Pulsoid for every member of the
// chain, across every box they trained at. No route is copied: a feature plugin names the services it uses, and
// the hub passes the PostgreSQL ones.
//
// What it serves: latest and posted readings, history, sessions and their exports, statistics, profile and
// feature flags, the real-time WebSocket, token validation and revocation. What stays on the boxes: rooms and
// their displays (they must work without the network), widgets, game-mod configuration, the admin API and the
// operator and member pages. Tokens are issued with `hr-relay hub admin token issue` (docs/hub.md).
//
// Live readings: every instance LISTENs to the readings PostgreSQL notifies on commit (hub/store/pg-readings.ts),
// and hands them to its in-process fan-out, so a WebSocket on any instance receives its member's readings
// whichever box and instance they came through. The ingest pipeline of the readings posted to this instance
// writes through the same store and is heard the same way; its own fan-out has no subscribers.
import type { FastifyInstance, FastifyPluginAsync } from 'fastify'
import type { Logger } from 'pino'
import { Hub } from '../api/hub.ts'
import { Pipeline } from '../api/pipeline/ingest.ts'
import { buildServer } from '../api/http/server.ts'
import { dataPlugin } from '../api/http/data.ts'
import { historyPlugin } from '../api/http/history.ts'
import { sessionsPlugin } from '../api/http/sessions.ts'
import { realtimePlugin } from '../api/http/realtime.ts'
import { statisticsPlugin } from '../api/http/statistics.ts'
import { profilePlugin } from '../api/http/profile.ts'
import { featureFlagsPlugin } from '../api/http/feature-flags.ts'
import { useStrictForms } from '../api/oauth/form.ts'
import { revokeValidateRoutes } from '../api/oauth/revoke-validate.ts'
import type { ApiConfig, HealthEntry, Services } from '../api/services.ts'
import type { ReadingSource, StoredReading } from '../api/pipeline/reading.ts'
import type { HubConfig } from './config.ts'
import type { PgStores } from './store/pg-stores.ts'
import { READINGS_CHANNEL, decodeReadingsNotice } from './store/pg-readings.ts'

/** The services the hub's features use: the store interfaces, the pipeline, the live fan-out, settings and log. */
export type HubServices = Pick<Services, 'log' | 'config' | 'health' | 'tokens' | 'users' | 'clients' | 'devices' | 'readings' | 'pipeline' | 'hub'>

/** Token validation and revocation (the OAuth feature's routes that need no sign-in session or code store). */
const tokenPlugin: FastifyPluginAsync<HubServices> = async (app, uses) => {
  useStrictForms(app)
  revokeValidateRoutes(app, { clients: uses.clients, tokens: uses.tokens, log: uses.log.child({ component: 'oauth' }) })
}

export const hubFeatures: Array<FastifyPluginAsync<HubServices>> = [
  dataPlugin,
  historyPlugin,
  sessionsPlugin,
  realtimePlugin,
  statisticsPlugin,
  profilePlugin,
  featureFlagsPlugin,
  tokenPlugin
]

/** Token lifetimes (seconds): the box's defaults (docs/api.md "Token lifetimes"); the hub issues tokens from its admin command. */
const LIFETIMES: ApiConfig['lifetimes'] = {
  implicit: 90_000,
  authorization_code: 3600,
  refresh_token: 2_592_000,
  client_credentials: 5_184_000,
  device_code: 7_776_000,
  manual: 630_720_000,
  code: 600,
  device_session: 600,
  device_interval: 3
}

const SOURCES = new Set<string>(['http', 'ble', 'serial', 'mqtt', 'sim', 'ant'])

export interface HubApi {
  app: FastifyInstance
  pipeline: Pipeline
  /** The live fan-out the WebSockets subscribe to, fed by PostgreSQL's notifications. */
  live: Hub
  stop (): Promise<void>
}

export interface HubApiOptions {
  /** The hub's own health routes (GET /health), registered beside the features. */
  health: FastifyPluginAsync
  log: Logger
}

export async function buildHubApi (config: HubConfig, stores: PgStores, o: HubApiOptions): Promise<HubApi> {
  const log = o.log
  const live = new Hub({ log: log.child({ component: 'live' }) })
  const unlisten = await stores.events.listen(READINGS_CHANNEL, payload => {
    for (const r of decodeReadingsNotice(payload)) {
      const reading: StoredReading = { profile_id: r.profile_id, measured_at: r.measured_at, heart_rate: r.heart_rate, source: (SOURCES.has(r.source) ? r.source : 'mqtt') as ReadingSource }
      if (r.device_id !== undefined) reading.device_id = r.device_id
      live.publishReading(reading)
    }
  })
  const pipeline = new Pipeline({
    readingLog: stores.readingLog,
    readings: stores.readings,
    // Readings posted here reach the WebSockets through PostgreSQL's notification, like every other: this
    // fan-out has no subscribers.
    hub: new Hub(),
    users: stores.users,
    retention: { rawDays: config.data.raw_retention_days, rollupDays: config.data.rollup_retention_days },
    log: log.child({ component: 'ingest' })
  })
  const health: HealthEntry[] = []
  const services: HubServices = {
    log,
    health: () => health,
    config: {
      publicUrl: config.http.public_url ?? `http://${config.http.host}:${config.http.port}`,
      lifetimes: LIFETIMES,
      rateLimitPerSecond: config.http.rate_limit_per_second,
      data: {
        rawRetentionDays: config.data.raw_retention_days,
        rollupRetentionDays: config.data.rollup_retention_days,
        streamGapSeconds: config.data.stream_gap_seconds,
        sessionGapSeconds: config.data.session_gap_seconds
      }
    },
    tokens: stores.tokens,
    users: stores.users,
    clients: stores.clients,
    devices: stores.devices,
    readings: stores.readings,
    pipeline,
    hub: live
  }
  const app = await buildServer(services, { features: [...hubFeatures, async app => { await app.register(o.health) }], healthRoute: false })
  pipeline.start()
  return {
    app,
    pipeline,
    live,
    stop: async () => {
      unlisten()
      await app.close()
      await pipeline.stop()
    }
  }
}
