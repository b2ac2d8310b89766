// `hr-relay hub admin token issue` and `client …`: the apps that read the chain's members through the hub's API
// (hub/api.ts). The answers are the box's admin API's (api/http/admin.ts), so a script written for one reads both.
import { ALL_SCOPES, parseScopes } from '../../api/scopes.ts'
import { InvalidRedirectUriError } from '../../api/store/clients.ts'
import { defineCommand, numberFlag, refused, usageError, type HubAdminCommand } from './command.ts'
import { memberNamed } from './members.ts'

/** The client id of tokens issued by the operator (the box's too). */
const ADMIN_CLIENT_ID = 'hr-relay-admin'
/** A manual token's lifetime unless --expires-in says otherwise: the box's default (20 years). */
const MANUAL_EXPIRES_IN = 630_720_000
const MAX_EXPIRES_IN = 20 * 365 * 86400

export const APP_COMMANDS: HubAdminCommand[] = [
  defineCommand({
    words: ['token', 'issue'],
    usage: 'token issue <username> --scope "<scopes>" [--expires-in <seconds>]',
    args: ['username'],
    options: { scope: { type: 'string' }, 'expires-in': { type: 'string' } },
    run: async (ctx, [username], f) => {
      if (typeof f.scope !== 'string') throw usageError('--scope is required')
      const scopes = parseScopes(f.scope)
      if (scopes === null || scopes.includes('profile:create')) throw usageError(`--scope: scopes must be among: ${ALL_SCOPES.filter(s => s !== 'profile:create').join(' ')}`)
      const expiresIn = numberFlag(f['expires-in'], 'expires-in') ?? MANUAL_EXPIRES_IN
      if (!Number.isInteger(expiresIn) || expiresIn < 1 || expiresIn > MAX_EXPIRES_IN) throw usageError(`--expires-in must be a whole number of seconds from 1 to ${MAX_EXPIRES_IN}`)
      const user = await memberNamed(ctx, username as string)
      const issued = await (await ctx.stores()).tokens.issue({ client_id: ADMIN_CLIENT_ID, profile_id: user.profile_id, scopes, flow: 'manual', expires_in: expiresIn })
      return { access_token: issued.access_token, expires_in: issued.expires_in, scope: issued.scope, token_type: 'bearer' }
    }
  }),
  defineCommand({
    words: ['client', 'add'],
    usage: 'client add --name <n> --redirect-uri <uri> [--redirect-uri <uri> ...] [--public]',
    args: [],
    options: { name: { type: 'string' }, 'redirect-uri': { type: 'string', multiple: true }, public: { type: 'boolean' } },
    run: async (ctx, _args, f) => {
      if (typeof f.name !== 'string' || f.name.length === 0 || f.name.length > 200) throw usageError('--name is required (1 to 200 characters)')
      const uris = f['redirect-uri']
      if (!Array.isArray(uris) || uris.length === 0) throw usageError('at least one --redirect-uri is required')
      if (uris.length > 20) throw usageError('at most 20 --redirect-uri')
      try {
        const { client, client_secret: secret } = await (await ctx.stores()).clients.create({ name: f.name, redirect_uris: uris, public: f.public === true })
        return { client_id: client.client_id, client_secret: secret, name: client.name, redirect_uris: client.redirect_uris }
      } catch (err) {
        if (err instanceof InvalidRedirectUriError) throw refused(err.message, err)
        throw err
      }
    }
  }),
  defineCommand({
    words: ['client', 'list'],
    usage: 'client list',
    args: [],
    run: async ctx => ({
      clients: (await (await ctx.stores()).clients.list()).map(c => ({ client_id: c.client_id, name: c.name, redirect_uris: c.redirect_uris, public: c.secret_hash === null, created_at: c.created_at }))
    }),
    human: r => r.clients.map(c => `${c.client_id}\t${c.name}\t${c.redirect_uris.join(' ')}`).join('\n') || '(no clients)'
  })
]
