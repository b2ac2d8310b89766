import type { Services } from '../services.ts'
import type { AuthContext } from './auth.ts'

declare module 'fastify' {
  interface FastifyInstance { hr: Services }
  interface FastifyRequest { auth?: AuthContext }
}

export {}
