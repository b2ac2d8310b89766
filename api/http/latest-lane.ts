// GET /api/v1/data/heart_rate/latest in front of the router: the request OBS
// widgets and apps repeat every second, answered from memory without
// Fastify's per-request work (routing, hooks, schema, reply), which costs
// more than the answer itself. Only the plain case is taken: no query string,
// no body, a Bearer token that the token cache knows as live with the read
// scope, a reading in the latest-reading cache, and the token within its rate
// limit. Everything else (a token or reading not cached yet, an expired or
// unknown token, a missing scope, a query, the limit reached) goes on to the
// route in data.ts, which checks it the long way and answers. Both give the
// same bytes: the same headers in the same order, and the same counter for the
// rate limit (test/api/http/latest-lane.test.ts compares them).
//
// On a keep-alive connection whose turn it is (the usual poll), the answer is
// written to the socket as one preformatted string, the header block Node
// would build included, instead of through ServerResponse's writeHead/end
// (header validation, corking, its write bookkeeping): about a sixth of the
// CPU an answer costs. The response is then finished the way Node finishes
// one, so the server's keep-alive, pipelining and timeouts run as before.
// This leans on ServerResponse fields that Node sets but does not document;
// when one is missing or not the default, the lane answers through writeHead.
import type { ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import type { FastLane } from './types.ts'
import { bearerToken } from './auth.ts'
import { tokenLimitOf, type GuardUses } from './data-auth.ts'
import type { Services } from '../services.ts'

export const LATEST_PATH = '/api/v1/data/heart_rate/latest'
const SCOPE = 'data:heart_rate:read'
const JSON_TYPE = 'application/json; charset=utf-8'

export function latestLane (uses: GuardUses & Pick<Services, 'readings'>): FastLane {
  const { tokens, readings } = uses
  const limit = tokenLimitOf(uses.config)
  return (request, response) => {
    if (request.url !== LATEST_PATH || request.method !== 'GET') return false
    const h = request.headers
    if (h['content-length'] !== undefined || h['transfer-encoding'] !== undefined) return false
    const token = h.authorization === undefined ? undefined : bearerToken(h.authorization)
    if (token === undefined) return false
    const now = Date.now()
    const found = tokens.cachedLookup(token, now)
    if (found === undefined || !found.ok) return false
    const { profile_id: profile, scopes } = found.token
    if (profile === null || !scopes.includes(SCOPE)) return false
    const latest = readings.cachedLatest(profile)
    if (latest === undefined || latest === null) return false
    // Counted only when answered here; past the limit, the route counts it and answers 429.
    const state = limit === null ? null : limit.takeIfAllowed(found.digest, now)
    if (state === undefined) return false
    // JSON of two finite numbers (the reading contract): String(n) is their JSON form.
    const body = `{"measured_at":${latest.measured_at},"data":{"heart_rate":${latest.heart_rate}}}`
    const length = String(body.length) // ASCII
    // The route's headers, in the order Fastify writes them: the guard's, the reply's, the onSend hook's.
    // As a flat list of strings: Node takes it without building and walking a headers object.
    const fields = state === null
      ? ['content-type', JSON_TYPE, 'x-content-type-options', 'nosniff', 'content-length', length]
      : [
          'ratelimit-limit', String(state.limit), 'ratelimit-remaining', String(state.remaining), 'ratelimit-reset', String(state.resetS),
          'content-type', JSON_TYPE, 'x-content-type-options', 'nosniff', 'content-length', length
        ]
    const tail = rawTail(response as NodeResponse, now)
    if (tail !== undefined) {
      writeRaw(response as NodeResponse, rawHead(fields) + tail + body)
      return true
    }
    response.writeHead(200, fields)
    response.end(body)
    return true
  }
}

/** The fields of a Node 20 ServerResponse that the raw write reads (set by http's server for each request). */
interface NodeResponse extends ServerResponse {
  socket: (Socket & { _httpMessage?: unknown, _hadError?: boolean }) | null
  finished: boolean
  _keepAliveTimeout?: unknown
  _defaultKeepAlive?: unknown
  _maxRequestsPerSocket?: unknown
  _removedConnection?: unknown
  maxRequestsOnConnectionReached?: unknown
}

let dateSecond = -1
let dateLine = ''
let keepAliveMs = -1
let keepAliveLine = ''

/**
 * The header lines Node's ServerResponse ends a keep-alive answer with (Date, Connection, Keep-Alive, then the
 * blank line), as its _storeHeader writes them; undefined when this response is not the plain keep-alive case,
 * or not the socket's current one (a pipelined request queued behind another answer).
 */
function rawTail (response: NodeResponse, now: number): string | undefined {
  const socket = response.socket
  if (socket === null || socket._httpMessage !== response || socket.destroyed || !socket.writable) return undefined
  if (response.sendDate !== true || response.shouldKeepAlive !== true || response.maxRequestsOnConnectionReached === true ||
    response._removedConnection !== false || response._defaultKeepAlive !== true || response.finished !== false) return undefined
  const timeout = response._keepAliveTimeout
  if (typeof timeout !== 'number' || timeout < 1000 || response._maxRequestsPerSocket !== 0) return undefined
  const second = Math.floor(now / 1000)
  if (second !== dateSecond) {
    dateSecond = second
    dateLine = `Date: ${new Date(second * 1000).toUTCString()}\r\n`
  }
  if (timeout !== keepAliveMs) {
    keepAliveMs = timeout
    keepAliveLine = `Connection: keep-alive\r\nKeep-Alive: timeout=${Math.floor(timeout / 1000)}\r\n\r\n`
  }
  return dateLine + keepAliveLine
}

/** The status line and `fields` as Node's _storeHeader writes them (`name: value` lines). */
function rawHead (fields: string[]): string {
  let head = 'HTTP/1.1 200 OK\r\n'
  for (let i = 0; i < fields.length; i += 2) head += `${fields[i] as string}: ${fields[i + 1] as string}\r\n`
  return head
}

/** Writes a whole answer and finishes the response as OutgoingMessage#end does: 'finish' once the socket took it. */
function writeRaw (response: NodeResponse, answer: string): void {
  const socket = response.socket as NonNullable<NodeResponse['socket']>
  response.statusCode = 200
  response.finished = true
  socket.write(answer, 'latin1', () => {
    if (response.socket?._hadError !== true) response.emit('finish')
  })
}
