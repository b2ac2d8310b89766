// The hub's HTTP and WebSocket API: the box's own feature plugins (api/http/), registered over the PostgreSQL
// stores (hub/store/) instead of LevelDB, so the hub answers like a box and like Pulsoid for every member of the
// chain, across every box they trained at. No route is copied: a feature plugin names the services it uses, and
// the hub passes the PostgreSQL ones.
//
// What it serves: latest and posted readings, history, sessions and their exports, statistics, profile and
// feature flags, the real-time WebSocket, and the OAuth feature (api/oauth/): every grant, token validation and
// revocation, the sign-in, consent, device and account pages. Its codes, device sessions and sign-in sessions are
// kept in PostgreSQL (hub/store/pg-oauth.ts), so a flow may hop between instances at every step. What stays on the
// boxes: rooms and their displays (they must work without the network), widgets, game-mod configuration, the
// admin API and the operator and member pages. Tokens are also issued with `hr-relay hub admin token issue`.
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
import { oauthPlugin } from '../api/oauth/plugin.ts'
import type { OAuthCodeStore } from '../api/oauth/codes.ts'
import type { OAuthAttempts } from '../api/oauth/context.ts'
import { sharedSessions } from '../api/oauth/session.ts'
import type { ApiConfig, HealthEntry, Services } from '../api/services.ts'
import type { ReadingSource, StoredReading } from '../api/pipeline/reading.ts'
import type { HubConfig } from './config.ts'
import type { PgStores } from './store/pg-stores.ts'
import { READINGS_CHANNEL, decodeReadingsNotice } from './store/pg-readings.ts'
import { PgOAuthCodes, PgSignInSessions } from './store/pg-oauth.ts'
import { pgOAuthAttempts } from './store/pg-attempts.ts'
import { pgUnavailable } from './store/pg-op.ts'

/**
 * The services the hub's features use: the store interfaces, the OAuth codes and device sessions, the pipeline,
 * the live fan-out, settings and log.
 */
export type HubServices = Pick<Services, 'log' | 'config' | 'health' | 'tokens' | 'users' | 'clients' | 'devices' | 'readings' | 'pipeline' | 'hub'> & {
  oauthCodes: OAuthCodeStore
  oauthAttempts: OAuthAttempts
}

export const hubFeatures: Array<FastifyPluginAsync<HubServices>> = [
  dataPlugin,
  historyPlugin,
  sessionsPlugin,
  realtimePlugin,
  statisticsPlugin,
  profilePlugin,
  featureFlagsPlugin,
  oauthPlugin
]

/** Token, code and device-session lifetimes (seconds): the box's defaults (docs/api.md "Token lifetimes"). */
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
  /** The API's settings; publicUrl is this instance's address until it listens, unless http.public_url is set. */
  config: ApiConfig
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
  const oauthLog = log.child({ component: 'oauth' })
  const signIns = new PgSignInSessions(stores.pool, stores.events, oauthLog)
  await signIns.start()
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
    hub: live,
    oauthCodes: new PgOAuthCodes(stores.pool, oauthLog),
    oauthAttempts: pgOAuthAttempts(stores.pool, { log: oauthLog })
  }
  // The sign-in sessions of the OAuth pages, one per server (keyed by its configuration, as on a box).
  const sessions = sharedSessions(services.config, { secure: services.config.publicUrl.startsWith('https:') })
  await sessions.persistWith(signIns)
  const app = await buildServer(services, { features: [...hubFeatures, async app => { await app.register(o.health) }], healthRoute: false, storeUnavailable: pgUnavailable })
  pipeline.start()
  return {
    app,
    pipeline,
    live,
    config: services.config,
    stop: async () => {
      unlisten()
      await app.close()
      await sessions.flushed()
      sessions.stop()
      signIns.stop()
      await pipeline.stop()
    }
  }
}
