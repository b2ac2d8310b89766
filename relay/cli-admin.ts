// `hr-relay admin ...`: talks to the running server over loopback with the
// admin token, because LevelDB allows one process per data directory. The
// server records its address in <data-dir>/server.json.
import { join, resolve } from 'node:path'
import { parseArgs } from 'node:util'
import type { RequestOptions } from 'node:http'
import type { ServerInfo } from './main.ts'

/** The file relay/main.ts writes once it listens (its serverInfoFile); not imported from there, which loads the whole service. */
const serverInfoFile = (dataDir: string): string => join(dataDir, 'server.json')

export class CliError extends Error {
  /** Stable (relay/error-codes.ts): a usage error (exit code 2), a refusal of the admin API (with its body), another failure. */
  readonly code: 'HR_CLI_USAGE' | 'HR_CLI_ADMIN_REFUSED' | 'HR_CLI_FAILED'
  constructor (message: string, readonly exitCode = 1, readonly body?: unknown) {
    super(message)
    this.name = 'CliError'
    this.code = exitCode === 2 ? 'HR_CLI_USAGE' : body === undefined ? 'HR_CLI_FAILED' : 'HR_CLI_ADMIN_REFUSED'
  }
}

type Flags = Record<string, string | boolean | string[] | undefined>
interface Request {
  method: 'GET' | 'POST' | 'DELETE' | 'PATCH' | 'PUT'
  path: string
  body?: unknown
  /** A successful answer's body is written to this file (a download), through a temporary file renamed at the end. */
  saveTo?: string
}

export interface AdminCommand {
  /** e.g. ['user', 'add'] */
  words: string[]
  usage: string
  args: string[]
  options?: Record<string, { type: 'string' | 'boolean', multiple?: boolean }>
  request (args: string[], flags: Flags): Request
  /** Human-readable output (default: key: value lines). */
  human? (result: any): string
}

const num = (v: unknown, name: string): number | undefined => {
  if (v === undefined) return undefined
  const n = Number(v)
  if (!Number.isFinite(n)) throw new CliError(`--${name} must be a number`, 2)
  return n
}

const seg = (s: string): string => encodeURIComponent(s)

/** The profile fields `user update` sets or clears. */
const PROFILE_OPTIONS = ['display-name', 'age', 'weight-kg', 'sex', 'max-heart-rate']

function invitationText (r: any): string {
  return `invitation link (works once, until ${new Date(Number(r.expires_at)).toISOString()}; give it only to the member):\n${String(r.invitation_url)}`
}

export const ADMIN_COMMANDS: AdminCommand[] = [
  {
    words: ['user', 'add'],
    usage: 'user add <username> (--password <p> | --invite) [--premium none|trial|subscription|lifetime] [--channel C] [--display-name N] [--age N --weight-kg N --sex male|female] [--max-heart-rate N]',
    args: ['username'],
    options: { password: { type: 'string' }, invite: { type: 'boolean' }, premium: { type: 'string' }, channel: { type: 'string' }, 'display-name': { type: 'string' }, age: { type: 'string' }, 'weight-kg': { type: 'string' }, sex: { type: 'string' }, 'max-heart-rate': { type: 'string' } },
    request: ([username], f) => {
      if ((typeof f.password === 'string') === (f.invite === true)) throw new CliError('give either --password or --invite (an invitation link the member opens to choose a password)', 2)
      return {
        method: 'POST',
        path: '/admin/users',
        body: {
          username,
          password: f.password,
          invite: f.invite === true ? true : undefined,
          premium: f.premium,
          channel: f.channel,
          display_name: f['display-name'],
          age: num(f.age, 'age'),
          weight_kg: num(f['weight-kg'], 'weight-kg'),
          sex: f.sex,
          max_heart_rate: num(f['max-heart-rate'], 'max-heart-rate')
        }
      }
    },
    human: r => r.invitation_url === undefined ? humanize(r) : `added ${String(r.username)} (profile ${String(r.profile_id)})\n${invitationText(r)}`
  },
  {
    words: ['user', 'update'],
    usage: `user update <username> [--display-name N] [--age N] [--weight-kg N] [--sex male|female] [--max-heart-rate N] [--clear ${PROFILE_OPTIONS.join('|')} ...]`,
    args: ['username'],
    options: { 'display-name': { type: 'string' }, age: { type: 'string' }, 'weight-kg': { type: 'string' }, sex: { type: 'string' }, 'max-heart-rate': { type: 'string' }, clear: { type: 'string', multiple: true } },
    request: ([username], f) => {
      const body: Record<string, unknown> = {
        display_name: f['display-name'],
        age: num(f.age, 'age'),
        weight_kg: num(f['weight-kg'], 'weight-kg'),
        sex: f.sex,
        max_heart_rate: num(f['max-heart-rate'], 'max-heart-rate')
      }
      for (const c of Array.isArray(f.clear) ? f.clear : []) {
        if (!PROFILE_OPTIONS.includes(c)) throw new CliError(`--clear takes one of ${PROFILE_OPTIONS.join(', ')}`, 2)
        const key = c.replaceAll('-', '_')
        if (body[key] !== undefined) throw new CliError(`--${c} and --clear ${c} together`, 2)
        body[key] = null
      }
      if (Object.values(body).every(v => v === undefined)) throw new CliError(`nothing to change: give at least one of --${PROFILE_OPTIONS.join(', --')} or --clear`, 2)
      return { method: 'PATCH', path: `/admin/users/${seg(username!)}`, body }
    },
    human: r => [`updated ${String(r.username)}`, ...PROFILE_OPTIONS.map(o => o.replaceAll('-', '_')).filter(k => r[k] !== undefined).map(k => `${k}: ${String(r[k])}`)].join('\n')
  },
  {
    words: ['user', 'invite'],
    usage: 'user invite <username>',
    args: ['username'],
    request: ([username]) => ({ method: 'POST', path: `/admin/users/${seg(username!)}/invitation` }),
    human: invitationText
  },
  {
    words: ['user', 'list'],
    usage: 'user list [--search TEXT]',
    args: [],
    options: { search: { type: 'string' } },
    request: (_a, f) => ({ method: 'GET', path: typeof f.search === 'string' ? `/admin/users?q=${encodeURIComponent(f.search)}` : '/admin/users' }),
    human: r => (r.users as any[]).map(u => `${u.username}\t${u.profile_id}\tpremium=${u.premium.plan}`).join('\n') || '(no users)'
  },
  {
    words: ['user', 'grant'],
    usage: 'user grant <username> <feature_id>',
    args: ['username', 'feature_id'],
    request: ([username, feature]) => ({ method: 'POST', path: `/admin/users/${seg(username!)}/features`, body: { feature_id: feature } })
  },
  {
    words: ['user', 'disconnect'],
    usage: 'user disconnect <username> <client_id>',
    args: ['username', 'client_id'],
    request: ([username, client]) => ({ method: 'DELETE', path: `/admin/users/${seg(username!)}/clients/${seg(client!)}` })
  },
  {
    words: ['client', 'add'],
    usage: 'client add --name <n> --redirect-uri <uri> [--redirect-uri <uri> ...] [--public]',
    args: [],
    options: { name: { type: 'string' }, 'redirect-uri': { type: 'string', multiple: true }, public: { type: 'boolean' } },
    request: (_a, f) => {
      if (typeof f.name !== 'string') throw new CliError('--name is required', 2)
      const uris = f['redirect-uri']
      if (!Array.isArray(uris) || uris.length === 0) throw new CliError('at least one --redirect-uri is required', 2)
      return { method: 'POST', path: '/admin/clients', body: { name: f.name, redirect_uris: uris, public: f.public === true } }
    }
  },
  {
    words: ['client', 'list'],
    usage: 'client list',
    args: [],
    request: () => ({ method: 'GET', path: '/admin/clients' }),
    human: r => (r.clients as any[]).map(c => `${c.client_id}\t${c.name}\t${c.redirect_uris.join(' ')}`).join('\n') || '(no clients)'
  },
  {
    words: ['token', 'issue'],
    usage: 'token issue <username> --scope "<scopes>" [--expires-in <seconds>]',
    args: ['username'],
    options: { scope: { type: 'string' }, 'expires-in': { type: 'string' } },
    request: ([username], f) => {
      if (typeof f.scope !== 'string') throw new CliError('--scope is required', 2)
      return { method: 'POST', path: '/admin/tokens', body: { username, scope: f.scope, expires_in: num(f['expires-in'], 'expires-in') } }
    }
  }
]

/** Other modules (rooms, devices) add their commands here. */
export function addAdminCommands (commands: AdminCommand[]): void {
  ADMIN_COMMANDS.push(...commands)
}

export async function serverFor (dataDir: string): Promise<{ info: ServerInfo, token: string }> {
  const dir = resolve(dataDir)
  // Loaded here, not with the module: `hr-relay --help` never needs it.
  const { readFile } = await import('node:fs/promises')
  let info: ServerInfo
  try {
    info = JSON.parse(await readFile(serverInfoFile(dir), 'utf8')) as ServerInfo
  } catch {
    throw new CliError(`no running hr-relay found for data directory ${dir} (start it with: hr-relay start --data-dir ${dataDir})`)
  }
  let token: string
  try {
    token = (await readFile(join(dir, 'admin-token'), 'utf8')).trim()
  } catch (err) {
    throw new CliError(`cannot read the admin token in ${join(dir, 'admin-token')}: ${(err as Error).message}`)
  }
  return { info, token }
}

function humanize (result: unknown): string {
  if (result === null || typeof result !== 'object') return String(result)
  return Object.entries(result as Record<string, unknown>)
    .filter(([, v]) => v !== undefined && v !== null)
    .map(([k, v]) => `${k}: ${typeof v === 'object' ? JSON.stringify(v) : String(v)}`).join('\n')
}

export function adminUsage (): string {
  return ADMIN_COMMANDS.map(c => `  hr-relay admin ${c.usage} [--data-dir DIR] [--json]`).join('\n')
}

/** How long an admin request waits while the service sends nothing (fetch's default header and body timeouts). */
const ANSWER_TIMEOUT_MS = 300_000

/**
 * One request to the running service over node:http. Not fetch: the first fetch in a process loads undici and
 * compiles its WebAssembly HTTP parser, a noticeable delay in every admin command on a small box.
 */
async function send (url: URL, method: string, authorization: string, json: string | undefined, pin?: string, saveTo?: string): Promise<{ status: number, text: string }> {
  // here, not at the top: `hr-relay --help` loads this module too
  const { request } = url.protocol === 'https:' ? process.getBuiltinModule('node:https') : await import('node:http')
  return await new Promise((resolve, reject) => {
    const headers: Record<string, string> = { authorization }
    if (json !== undefined) { headers['content-type'] = 'application/json'; headers['content-length'] = String(Buffer.byteLength(json)) }
    const options = url.protocol === 'https:' ? { method, headers, createConnection: pinnedConnection(url, pin) } : { method, headers }
    const req = request(url, options, res => {
      if (saveTo !== undefined && res.statusCode === 200) {
        download(res, saveTo).then(bytes => { resolve({ status: 200, text: JSON.stringify({ file: saveTo, bytes }) }) }, reject)
        return
      }
      const chunks: Buffer[] = []
      res.on('data', (chunk: Buffer) => { chunks.push(chunk) })
      res.on('end', () => { resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }) })
      res.on('error', reject)
    })
    req.setTimeout(ANSWER_TIMEOUT_MS, () => { req.destroy(new Error(`no data from the service for ${ANSWER_TIMEOUT_MS / 1000} s`)) })
    req.on('error', reject)
    req.end(json)
  })
}

/**
 * Writes a download to `file`: into `file.partial` (mode 0600: it may hold health data), renamed over `file` once
 * the whole body arrived, so that an interrupted download never leaves a half-written file under the name.
 */
async function download (res: import('node:http').IncomingMessage, file: string): Promise<number> {
  const { createWriteStream } = await import('node:fs')
  const { rename, rm } = await import('node:fs/promises')
  const { pipeline } = await import('node:stream/promises')
  const partial = `${file}.partial`
  let bytes = 0
  res.on('data', (chunk: Buffer) => { bytes += chunk.length })
  try {
    await pipeline(res, createWriteStream(partial, { mode: 0o600 }))
    if (!res.complete) throw new Error('the service closed the connection before the end of the download')
    await rename(partial, file)
  } catch (err) {
    await rm(partial, { force: true })
    throw err
  }
  return bytes
}

/**
 * With http.tls the service serves a certificate for the names members use, not for loopback, and perhaps one no
 * CA vouches for (self-signed): the CLI trusts exactly the certificate whose SHA-256 fingerprint the service wrote
 * in server.json (beside the admin token, in the data directory), and sends the token only after the handshake
 * showed it.
 */
function pinnedConnection (url: URL, pin: string | undefined): NonNullable<RequestOptions['createConnection']> {
  return (_options, done) => {
    const tls = process.getBuiltinModule('node:tls')
    const host = url.hostname.replace(/^\[(.*)\]$/, '$1')
    const socket = tls.connect({ host, port: Number(url.port === '' ? 443 : url.port), rejectUnauthorized: false, ...(host.includes(':') || /^[\d.]+$/.test(host) ? {} : { servername: host }) })
    const failed = (err: Error): void => { done(err, socket) }
    socket.once('error', failed)
    socket.once('secureConnect', () => {
      socket.off('error', failed)
      const shown = socket.getPeerCertificate().fingerprint256
      if (pin !== undefined && shown === pin) { done(null, socket); return }
      socket.destroy()
      done(new Error(`the certificate it shows (SHA-256 ${shown}) is not the one recorded in server.json${pin === undefined ? ' (none recorded)' : ''}`), socket)
    })
    return undefined
  }
}

/** Runs `hr-relay admin <argv...>`; returns the text to print. */
export async function runAdmin (argv: string[]): Promise<{ json: boolean, output: string }> {
  const json = argv.includes('--json')
  const command = ADMIN_COMMANDS
    .filter(c => c.words.every((w, i) => argv[i] === w))
    .sort((a, b) => b.words.length - a.words.length)[0]
  if (command === undefined) throw new CliError(`unknown admin command: ${argv.filter(a => !a.startsWith('-')).slice(0, 3).join(' ') || '(none)'}\nusage:\n${adminUsage()}`, 2)
  let parsed
  try {
    parsed = parseArgs({
      args: argv.slice(command.words.length),
      allowPositionals: true,
      options: { ...(command.options ?? {}), 'data-dir': { type: 'string' }, json: { type: 'boolean' } }
    })
  } catch (err) {
    throw new CliError(`${(err as Error).message}\nusage: hr-relay admin ${command.usage}`, 2)
  }
  const positionals = parsed.positionals
  if (positionals.length !== command.args.length) {
    throw new CliError(`expected ${command.args.length === 0 ? 'no arguments' : command.args.map(a => `<${a}>`).join(' ')}\nusage: hr-relay admin ${command.usage}`, 2)
  }
  const flags = parsed.values as Flags
  const req = command.request(positionals, flags)
  const { info, token } = await serverFor(typeof flags['data-dir'] === 'string' ? flags['data-dir'] : process.env.HR_RELAY_DATA_DIR ?? './data')
  let res: { status: number, text: string }
  try {
    res = await send(new URL(req.path, info.url), req.method, `Bearer ${token}`, req.body === undefined ? undefined : JSON.stringify(req.body), info.tls_fingerprint256, req.saveTo)
  } catch (err) {
    throw new CliError(`cannot reach hr-relay at ${info.url}: ${(err as Error).message} (is it running?)`)
  }
  const text = res.text
  let body: unknown = text
  try { body = JSON.parse(text) } catch { /* keep text */ }
  if (res.status < 200 || res.status > 299) {
    const b = body as { error_message?: string, detail?: string }
    const detail = typeof b?.detail === 'string' ? `: ${b.detail}` : ''
    throw new CliError(`${req.method} ${req.path} failed: HTTP ${res.status} ${b?.error_message ?? text}${detail}`, 1, body)
  }
  return { json, output: json ? JSON.stringify(body) : (command.human ?? humanize)(body) }
}
