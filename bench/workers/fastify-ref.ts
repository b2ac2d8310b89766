// Worker: the latest-http reference. A bare Fastify app with one route at the
// same path that returns a constant reading: no auth, no store.
import Fastify, { type FastifyInstance } from 'fastify'
import { serve } from '../lib/proc.ts'

let app: FastifyInstance | null = null
const BODY = { measured_at: 1_700_000_000_000, data: { heart_rate: 72 } }

async function start (): Promise<string> {
  app = Fastify({ logger: false })
  app.get('/api/v1/data/heart_rate/latest', async () => BODY)
  return await app.listen({ host: '127.0.0.1', port: 0 })
}

async function stop (): Promise<void> { await app?.close() }

serve({ start, stop })
