// The shape of a `hr-relay hub admin …` command and its errors. A command is data, like the box's admin commands
// (relay/cli-admin.ts, which hub/ may not import): its words, usage, positional arguments and options, a `run` that
// works on the hub's stores in PostgreSQL, and a human-readable rendering of its answer (`--json` prints the answer
// itself).
import type { HubConfig } from '../config.ts'
import type { PgStores } from '../store/pg-stores.ts'

export type Flags = Record<string, string | boolean | string[] | undefined>

export interface AdminContext {
  config: HubConfig
  /** The hub's stores, opened on first use (and closed by the CLI): a command checks its input before. */
  stores (): Promise<PgStores>
}

export interface HubAdminCommand {
  /** e.g. ['user', 'add'] */
  words: string[]
  usage: string
  /** Names of the positional arguments, in order. */
  args: string[]
  options?: Record<string, { type: 'string' | 'boolean', multiple?: boolean }>
  run (ctx: AdminContext, args: string[], flags: Flags): Promise<object>
  /** The answer for a person (`--json` prints the answer itself). */
  human (result: object): string
}

/** A command whose answer has the type R, rendered by `human` (default: key: value lines). */
export function defineCommand<R extends object> (c: Omit<HubAdminCommand, 'run' | 'human'> & {
  run: (ctx: AdminContext, args: string[], flags: Flags) => Promise<R>
  human?: (result: R) => string
}): HubAdminCommand {
  const human = c.human
  return { ...c, human: result => human === undefined ? humanize(result) : human(result as R) }
}

export type HubAdminErrorCode = 'HR_HUB_ADMIN_USAGE' | 'HR_HUB_ADMIN_REFUSED' | 'HR_HUB_ADMIN_FAILED'

/**
 * A command that cannot be done, said in one line: a command line it does not accept (HR_HUB_ADMIN_USAGE, exit
 * code 2), a request the chain's data refuses (HR_HUB_ADMIN_REFUSED: an unknown user, a username taken), or a
 * failure (HR_HUB_ADMIN_FAILED: PostgreSQL unreachable); exit code 1 for the last two.
 */
export class HubAdminError extends Error {
  readonly exitCode: number
  constructor (readonly code: HubAdminErrorCode, message: string, options?: ErrorOptions) {
    super(message, options)
    this.name = 'HubAdminError'
    this.exitCode = code === 'HR_HUB_ADMIN_USAGE' ? 2 : 1
  }
}

export const usageError = (message: string): HubAdminError => new HubAdminError('HR_HUB_ADMIN_USAGE', message)
export const refused = (message: string, cause?: unknown): HubAdminError => new HubAdminError('HR_HUB_ADMIN_REFUSED', message, cause === undefined ? undefined : { cause })

/** A numeric option, or undefined when absent. */
export function numberFlag (v: unknown, name: string): number | undefined {
  if (v === undefined) return undefined
  const n = Number(v)
  if (typeof v !== 'string' || v.trim() === '' || !Number.isFinite(n)) throw usageError(`--${name} must be a number`)
  return n
}

export function stringFlag (v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined
}

/** key: value lines, the box's default rendering. */
export function humanize (result: object): string {
  return Object.entries(result as Record<string, unknown>)
    .filter(([, v]) => v !== undefined && v !== null)
    .map(([k, v]) => `${k}: ${typeof v === 'object' ? JSON.stringify(v) : String(v)}`).join('\n')
}

/**
 * What a PostgreSQL failure means to an operator, or undefined when `err` is not one: the server unreachable, the
 * login refused, the database missing, the connection lost. `hub start` and `hub admin` say it the same way.
 */
export function postgresProblem (err: unknown): string | undefined {
  if (!(err instanceof Error)) return undefined
  const code = (err as NodeJS.ErrnoException).code
  const connection = ['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ECONNRESET']
  const server = ['28P01', '28000', '3D000', '57P01', '57P03']
  const lost = /^(Connection terminated|timeout exceeded when trying to connect)/.test(err.message)
  if ((code !== undefined && (connection.includes(code) || server.includes(code))) || lost) {
    const detail = err.message !== '' ? err.message : err instanceof AggregateError ? err.errors.map(e => (e as Error).message).join('; ') : String(code)
    return `cannot use PostgreSQL (postgres.url): ${detail}`
  }
  return undefined
}
