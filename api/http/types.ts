import type { AuthContext } from './auth.ts'

declare module 'fastify' {
  interface FastifyRequest { auth?: AuthContext }
}
