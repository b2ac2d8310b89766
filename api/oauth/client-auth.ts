// Client authentication at the token endpoints (RFC 6749 2.3.1): HTTP Basic
// with the form-urlencoded id and secret, or client_id/client_secret in the
// body, never both. Failures are invalid_client (401), with
// `WWW-Authenticate: Basic` when the client tried Basic.
import type { FastifyRequest } from 'fastify'
import { OAuthError } from '../errors.ts'
import type { ClientRecord } from '../store/clients.ts'
import type { FormParams } from './form.ts'
import type { Services } from '../services.ts'

export const BASIC_CHALLENGE = 'Basic realm="hr-relay", charset="UTF-8"'

export interface AuthenticatedClient {
  client: ClientRecord
  /** True when a secret was checked (confidential client). */
  authenticated: boolean
  basic: boolean
}

interface Presented { id: string, secret: string | undefined, basic: boolean }

function invalidClient (basic: boolean, description: string): OAuthError {
  return new OAuthError('invalid_client', description, 401, basic ? { 'www-authenticate': BASIC_CHALLENGE } : {})
}

function decodePart (text: string): string | null {
  try { return decodeURIComponent(text.replaceAll('+', ' ')) } catch { return null }
}

/** The client id and secret the request presents. */
export function presentedClient (request: FastifyRequest, form: FormParams): Presented {
  const header = request.headers.authorization
  const bodyId = form.get('client_id')
  const bodySecret = form.get('client_secret')
  if (typeof header === 'string' && header.length > 0) {
    const m = /^Basic +([A-Za-z0-9+/=]+) *$/i.exec(header)
    if (m === null || m[1] === undefined) throw invalidClient(true, 'the Authorization header must use the Basic scheme')
    let decoded: string
    try { decoded = new TextDecoder('utf-8', { fatal: true }).decode(Buffer.from(m[1], 'base64')) } catch { throw invalidClient(true, 'the Basic credentials are not valid UTF-8') }
    const colon = decoded.indexOf(':')
    if (colon <= 0) throw invalidClient(true, 'the Basic credentials must be client_id:client_secret')
    const id = decodePart(decoded.slice(0, colon))
    const secret = decodePart(decoded.slice(colon + 1))
    if (id === null || secret === null) throw invalidClient(true, 'the Basic credentials are not form-urlencoded')
    if (bodySecret !== undefined) throw new OAuthError('invalid_request', 'use only one client authentication method')
    if (bodyId !== undefined && bodyId !== id) throw invalidClient(true, 'client_id does not match the Basic credentials')
    return { id, secret, basic: true }
  }
  if (bodyId === undefined || bodyId === '') throw invalidClient(false, 'client_id is missing')
  return { id: bodyId, secret: bodySecret, basic: false }
}

/**
 * Identifies the client; confidential clients must authenticate when
 * `requireSecret` (the code, refresh and client-credentials grants). A public
 * client (no secret) is identified by its id alone.
 */
export async function authenticateClient (clients: Services['clients'], request: FastifyRequest, form: FormParams, requireSecret: boolean): Promise<AuthenticatedClient> {
  const p = presentedClient(request, form)
  if (p.secret !== undefined) {
    const client = await clients.authenticate(p.id, p.secret)
    if (client === undefined) throw invalidClient(p.basic, 'client authentication failed')
    return { client, authenticated: true, basic: p.basic }
  }
  const client = await clients.get(p.id)
  if (client === undefined) throw invalidClient(p.basic, 'unknown client')
  if (requireSecret && client.secret_hash !== null) throw invalidClient(p.basic, 'client authentication is required (client_secret or HTTP Basic)')
  return { client, authenticated: false, basic: p.basic }
}
