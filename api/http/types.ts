import type { AuthContext } from './auth.ts'
import type { IncomingMessage, ServerResponse } from 'node:http'

/**
 * Answers a request before Fastify routes it, and says so (true), or leaves it to Fastify (false, having
 * written nothing). For the one request a client repeats many times a second where the answer is already
 * in memory; see `app.addFastLane` (api/http/server.ts).
 */
export type FastLane = (request: IncomingMessage, response: ServerResponse) => boolean

declare module 'fastify' {
  interface FastifyRequest { auth?: AuthContext }
  interface FastifyInstance {
    /** Puts a lane in front of the router (`FastLane` above); lanes are tried in the order added. */
    addFastLane: (lane: FastLane) => void
  }
}
