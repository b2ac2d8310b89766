// The hub's composition root: one stateless instance of a chain's hub. It opens the PostgreSQL stores (which
// bring the schema up to date), starts ingest from the broker and the HTTP API (hub/api.ts), and stops them in
// reverse order. Two instances with the same postgres and mqtt settings are one hub (docs/hub.md).
import type { FastifyInstance, FastifyPluginAsync } from 'fastify'
import type pg from 'pg'
import pino, { type Logger } from 'pino'
import type { HubConfig } from './config.ts'
import { HubIngest } from './ingest/ingest.ts'
import { buildHubApi, type HubApi } from './api.ts'
import { openPgStores, type PgStores } from './store/pg-stores.ts'
import { MembershipPublisher } from './membership/publisher.ts'

export interface RunningHub {
  url: string
  pool: pg.Pool
  stores: PgStores
  ingest: HubIngest
  api: HubApi
  members: MembershipPublisher
  http: FastifyInstance
  stop: () => Promise<void>
}

export interface HubHealth {
  status: 'ok' | 'degraded'
  mqtt: string
  postgres: 'up' | 'failing'
  stored_total: number
  duplicates_total: number
  erasures_total: number
  rejected_total: number
  /** The membership publisher's connection, and the chain revision it last sent to every box (null: none yet). */
  members: { mqtt: string, revision: number | null }
  last_error?: string
}

export async function startHub (config: HubConfig, options: { logger?: Logger } = {}): Promise<RunningHub> {
  const log = options.logger ?? pino({ level: config.log_level })
  let stores: PgStores | undefined
  let ingest: HubIngest | undefined
  let api: HubApi | undefined
  let members: MembershipPublisher | undefined
  try {
    stores = await openPgStores({ url: config.postgres.url, poolSize: config.postgres.pool_size, gapMs: config.data.stream_gap_seconds * 1000, log })
    ingest = new HubIngest(config.mqtt, stores.pool, log, { gapMs: config.data.stream_gap_seconds * 1000 })
    const running = ingest
    // The chain's members and pairings, published to every box (docs/hub.md "Members of the chain").
    members = new MembershipPublisher({ mqtt: config.mqtt, pool: stores.pool, events: stores.events, log })
    const publisher = members
    const health: FastifyPluginAsync = async app => {
      app.get('/health', async (_request, reply) => {
        const health = healthOf(running, publisher)
        return await reply.code(health.status === 'ok' ? 200 : 503).send(health)
      })
    }
    api = await buildHubApi(config, stores, { health, log })
    const url = await api.app.listen({ host: config.http.host, port: config.http.port })
    // Without http.public_url, links the API gives out (verification_uri) name the address it listens on.
    if (config.http.public_url === undefined) api.config.publicUrl = url
    ingest.start()
    await members.start()
    log.info({ url, client_id: config.mqtt.client_id }, 'hub instance started')
    const openApi = api; const openStores = stores
    let stopping: Promise<void> | undefined
    return {
      url,
      pool: stores.pool,
      stores,
      ingest,
      api,
      members,
      http: api.app,
      stop: async () => {
        stopping ??= (async () => {
          await openApi.stop()
          await publisher.stop()
          await running.stop()
          await openStores.close()
        })()
        await stopping
      }
    }
  } catch (err) {
    await api?.stop().catch(() => {})
    await members?.stop().catch(() => {})
    await ingest?.stop().catch(() => {})
    await stores?.close().catch(() => {})
    throw err
  }
}

export function healthOf (ingest: HubIngest, members: MembershipPublisher): HubHealth {
  const w = ingest.writer
  const mqtt = ingest.session.state
  const postgres = w.lastError === null ? 'up' : 'failing'
  return {
    status: mqtt === 'connected' && postgres === 'up' ? 'ok' : 'degraded',
    mqtt,
    postgres,
    stored_total: w.counts.stored,
    duplicates_total: w.counts.duplicates,
    erasures_total: w.counts.erasures,
    rejected_total: ingest.rejected,
    members: { mqtt: members.state, revision: members.revision },
    ...(w.lastError === null ? {} : { last_error: w.lastError })
  }
}
