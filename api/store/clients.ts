// OAuth clients: applications that read users' data. Secrets are stored as
// scrypt hashes and shown once, when the client is created.
import type { Store, Sub } from './db.ts'
import { dummyVerify, hashSecret, newId, newSecret, verifySecret } from './secrets.ts'
import { apiErrorMessage } from '../error-codes.ts'

import type { ClientRecord, NewClient } from './records.ts'
import type { ClientStore } from './types.ts'
export type { ClientRecord, NewClient } from './records.ts'

export class InvalidRedirectUriError extends Error {
  readonly code = 'HR_REDIRECT_URI_INVALID'
  constructor (uri: string, why: string) { super(apiErrorMessage('HR_REDIRECT_URI_INVALID', { uri: JSON.stringify(uri), why })); this.name = 'InvalidRedirectUriError' }
}

/** Registered redirect URIs must be absolute, without a fragment (RFC 6749 3.1.2), https or loopback http or a private-use scheme. */
export function checkRedirectUri (uri: string): void {
  let u: URL
  try { u = new URL(uri) } catch { throw new InvalidRedirectUriError(uri, 'not an absolute URL') }
  if (u.hash !== '' || uri.includes('#')) throw new InvalidRedirectUriError(uri, 'must not contain a fragment')
  if (u.protocol === 'javascript:' || u.protocol === 'data:' || u.protocol === 'file:') throw new InvalidRedirectUriError(uri, `scheme ${u.protocol} is not allowed`)
}

export function isLoopbackHost (host: string): boolean {
  return host === '127.0.0.1' || host === '[::1]' || host === '::1' || host === 'localhost'
}

/**
 * Exact match of a redirect URI against the registered ones (RFC 9700 2.1);
 * loopback redirect URIs may differ in port only (RFC 8252 7.3).
 */
export function redirectUriAllowed (client: ClientRecord, uri: string): boolean {
  if (client.redirect_uris.includes(uri)) return true
  let u: URL
  try { u = new URL(uri) } catch { return false }
  if (u.protocol !== 'http:' || !isLoopbackHost(u.hostname)) return false
  for (const registered of client.redirect_uris) {
    let r: URL
    try { r = new URL(registered) } catch { continue }
    if (r.protocol !== 'http:' || r.hostname !== u.hostname) continue
    const a = new URL(u.href); a.port = ''
    const b = new URL(r.href); b.port = ''
    if (a.href === b.href && a.username === '' && a.password === '') return true
  }
  return false
}

/**
 * A new client's record (every client store: Clients here, hub/store/pg-clients.ts), with its secret in clear, shown
 * once (null for a public client). Throws InvalidRedirectUriError for a redirect URI that cannot be registered.
 */
export async function newClientRecord (input: NewClient, now: number): Promise<{ client: ClientRecord, client_secret: string | null }> {
  for (const uri of input.redirect_uris) checkRedirectUri(uri)
  const secret = input.public === true ? null : newSecret()
  const client: ClientRecord = {
    client_id: newId(),
    name: input.name,
    secret_hash: secret === null ? null : await hashSecret(secret),
    redirect_uris: [...input.redirect_uris],
    owner: input.owner ?? null,
    created_at: now
  }
  return { client, client_secret: secret }
}

/** Whether `clientId` can name a client at all (anything else is not looked up). */
export function clientIdValid (clientId: string): boolean {
  return typeof clientId === 'string' && clientId.length > 0 && clientId.length <= 200
}

/** `client` when `secret` is its own; an unknown or public client costs the same time as a wrong secret. */
export async function clientWithSecret (client: ClientRecord | undefined, secret: string): Promise<ClientRecord | undefined> {
  if (client === undefined || client.secret_hash === null) { await dummyVerify(secret); return undefined }
  return (await verifySecret(secret, client.secret_hash)) ? client : undefined
}

export class Clients implements ClientStore {
  private readonly byId: Sub<ClientRecord>

  constructor (private readonly store: Store) {
    this.byId = store.sub<ClientRecord>('clients')
  }

  async create (input: NewClient, now = Date.now()): Promise<{ client: ClientRecord, client_secret: string | null }> {
    const created = await newClientRecord(input, now)
    const { client } = created
    await this.store.batch([{ type: 'put', sublevel: this.byId, key: client.client_id, value: client }], { sync: true })
    return created
  }

  async get (clientId: string): Promise<ClientRecord | undefined> {
    if (!clientIdValid(clientId)) return undefined
    return await this.byId.get(clientId)
  }

  /** Authenticates a confidential client; unknown clients cost the same time as a wrong secret. */
  async authenticate (clientId: string, secret: string): Promise<ClientRecord | undefined> {
    return await clientWithSecret(await this.get(clientId), secret)
  }

  async list (): Promise<ClientRecord[]> {
    const out: ClientRecord[] = []
    for await (const v of this.byId.values()) out.push(v)
    return out.sort((a, b) => a.created_at - b.created_at)
  }
}
