// The hub's composition root: one stateless instance of a chain's hub. It builds the PostgreSQL pool, brings
// the schema up to date, starts ingest from the broker and the HTTP server, and stops them in reverse order.
// Two instances with the same postgres and mqtt settings are one hub (docs/hub.md).
import Fastify, { type FastifyInstance } from 'fastify'
import pg from 'pg'
import pino, { type Logger } from 'pino'
import type { HubConfig } from './config.ts'
import { HubIngest } from './ingest/ingest.ts'
import { migrate } from './migrate.ts'

export interface RunningHub {
  url: string
  pool: pg.Pool
  ingest: HubIngest
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
  last_error?: string
}

export async function startHub (config: HubConfig, options: { logger?: Logger } = {}): Promise<RunningHub> {
  const log = options.logger ?? pino({ level: config.log_level })
  const pool = new pg.Pool({ connectionString: config.postgres.url, max: config.postgres.pool_size, connectionTimeoutMillis: 5000 })
  // An idle connection that PostgreSQL closes (a restart) is reported here; the next query opens a new one.
  pool.on('error', err => { log.warn({ err: err.message }, 'PostgreSQL closed an idle connection') })
  let ingest: HubIngest | undefined
  let http: FastifyInstance | undefined
  try {
    const applied = await migrate(pool)
    if (applied.length > 0) log.info({ versions: applied }, 'schema migrated')
    ingest = new HubIngest(config.mqtt, pool, log)
    const running = ingest
    http = Fastify({ logger: false })
    http.get('/health', async (_request, reply) => {
      const health = healthOf(running)
      return await reply.code(health.status === 'ok' ? 200 : 503).send(health)
    })
    const url = await http.listen({ host: config.http.host, port: config.http.port })
    ingest.start()
    log.info({ url, client_id: config.mqtt.client_id }, 'hub instance started')
    const server = http
    let stopping: Promise<void> | undefined
    return {
      url,
      pool,
      ingest,
      http,
      stop: async () => {
        stopping ??= (async () => {
          await server.close()
          await running.stop()
          await pool.end()
        })()
        await stopping
      }
    }
  } catch (err) {
    await http?.close().catch(() => {})
    await ingest?.stop().catch(() => {})
    await pool.end().catch(() => {})
    throw err
  }
}

export function healthOf (ingest: HubIngest): HubHealth {
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
    ...(w.lastError === null ? {} : { last_error: w.lastError })
  }
}
