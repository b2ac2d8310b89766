// `hr-relay hub admin --config hub.json <command> …`: the chain's members, straps, apps and boxes, written to the
// hub's PostgreSQL directly (the schema is brought up to date first, as `hub start` does). No hub instance needs to
// be running; running instances hear of each change through PostgreSQL and republish the membership to the boxes.
import { parseArgs } from 'node:util'
import { HubConfigError, loadHubConfig, type HubConfig } from '../config.ts'
import { MigrationError } from '../migrate.ts'
import type { PgStores } from '../store/pg-stores.ts'
import { APP_COMMANDS } from './apps.ts'
import { BOX_COMMANDS } from './boxes.ts'
import { HubAdminError, postgresProblem, usageError, type Flags, type HubAdminCommand } from './command.ts'
import { MEMBER_COMMANDS } from './members.ts'

export const HUB_ADMIN_COMMANDS: HubAdminCommand[] = [...MEMBER_COMMANDS, ...APP_COMMANDS, ...BOX_COMMANDS]

export function hubAdminUsage (): string {
  return HUB_ADMIN_COMMANDS.map(c => `  hr-relay hub admin --config FILE ${c.usage} [--json]`).join('\n')
}

/** Where the command writes: the process's streams, or a test's. */
export interface AdminStreams { stdout: { write (text: string): unknown }, stderr: { write (text: string): unknown } }

/** The options every command takes, also before its words. */
const GLOBAL = { config: { type: 'string' }, json: { type: 'boolean' } } as const

interface Parsed { command: HubAdminCommand, args: string[], flags: Flags, config: string }

function parse (argv: string[]): Parsed {
  // Options before the command's words: --config FILE (or --config=FILE) and --json.
  let i = 0
  while (i < argv.length && (argv[i] as string).startsWith('-')) i += argv[i] === '--config' ? 2 : 1
  const head = argv.slice(0, i)
  const rest = argv.slice(i)
  const command = HUB_ADMIN_COMMANDS
    .filter(c => c.words.every((w, k) => rest[k] === w))
    .sort((a, b) => b.words.length - a.words.length)[0]
  if (command === undefined) {
    const words = rest.filter(a => !a.startsWith('-')).slice(0, 2).join(' ')
    throw usageError(`unknown command: ${words === '' ? '(none)' : words}\nusage:\n${hubAdminUsage()}`)
  }
  let parsed
  try {
    parsed = parseArgs({ args: [...head, ...rest.slice(command.words.length)], allowPositionals: true, strict: true, options: { ...(command.options ?? {}), ...GLOBAL } })
  } catch (err) {
    throw usageError(`${(err as Error).message}\nusage: hr-relay hub admin --config FILE ${command.usage}`)
  }
  if (parsed.positionals.length !== command.args.length) {
    throw usageError(`expected ${command.args.length === 0 ? 'no arguments' : command.args.map(a => `<${a}>`).join(' ')}\nusage: hr-relay hub admin --config FILE ${command.usage}`)
  }
  const flags = parsed.values as Flags
  if (typeof flags.config !== 'string' || flags.config === '') throw usageError('--config is required: the hub\'s configuration file (docs/hub.md)')
  return { command, args: parsed.positionals, flags, config: flags.config }
}

/** Runs one admin command; returns the exit code. An error that is not the operator's to fix is thrown (a bug). */
export async function runHubAdmin (argv: string[], io: AdminStreams = { stdout: process.stdout, stderr: process.stderr }): Promise<number> {
  const json = argv.includes('--json')
  let stores: Promise<PgStores> | undefined
  try {
    const { command, args, flags, config: file } = parse(argv)
    const config: HubConfig = await loadHubConfig(file)
    const { openPgStores } = await import('../store/pg-stores.ts')
    const result = await command.run({
      config,
      stores: async () => await (stores ??= openPgStores({ url: config.postgres.url, poolSize: 2, gapMs: config.data.stream_gap_seconds * 1000 }))
    }, args, flags)
    io.stdout.write((json ? JSON.stringify(result) : command.human(result)) + '\n')
    return 0
  } catch (err) {
    const message = err instanceof HubAdminError || err instanceof HubConfigError || err instanceof MigrationError ? err.message : postgresProblem(err)
    if (message === undefined) throw err
    if (json) io.stdout.write(JSON.stringify({ error: message }) + '\n')
    else io.stderr.write(`hr-relay hub admin: ${message}\n`)
    return err instanceof HubAdminError ? err.exitCode : 1
  } finally {
    await stores?.then(async s => { await s.close() }, () => {})
  }
}
