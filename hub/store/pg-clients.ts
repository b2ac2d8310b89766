// OAuth clients in PostgreSQL: the ClientStore of api/store/clients.ts. Secrets are scrypt hashes, shown once when
// the client is created. Nothing is kept in memory, so every instance reads the same clients.
import type pg from 'pg'
import { clientIdValid, clientWithSecret, newClientRecord } from '../../api/store/clients.ts'
import type { ClientRecord, ClientStore, NewClient } from '../../api/store/types.ts'

export class PgClients implements ClientStore {
  constructor (private readonly pool: pg.Pool) {}

  /** Throws InvalidRedirectUriError (api/store/clients.ts) for a redirect URI that cannot be registered. */
  async create (input: NewClient, now = Date.now()): Promise<{ client: ClientRecord, client_secret: string | null }> {
    const created = await newClientRecord(input, now)
    const { client } = created
    await this.pool.query('INSERT INTO clients (client_id, record, created_at) VALUES ($1, $2, $3)', [client.client_id, JSON.stringify(client), now])
    return created
  }

  async get (clientId: string): Promise<ClientRecord | undefined> {
    if (!clientIdValid(clientId)) return undefined
    const { rows } = await this.pool.query<{ record: ClientRecord }>('SELECT record FROM clients WHERE client_id = $1', [clientId])
    return rows[0]?.record
  }

  /** Authenticates a confidential client; unknown clients cost the same time as a wrong secret. */
  async authenticate (clientId: string, secret: string): Promise<ClientRecord | undefined> {
    return await clientWithSecret(await this.get(clientId), secret)
  }

  /** Oldest first. */
  async list (): Promise<ClientRecord[]> {
    const { rows } = await this.pool.query<{ record: ClientRecord }>('SELECT record FROM clients ORDER BY created_at, client_id')
    return rows.map(r => r.record)
  }
}
