// `hr-relay hub …`: one instance of a chain's hub (docs/hub.md).
import { parseArgs } from 'node:util'
import { HubConfigError, loadHubConfig } from './config.ts'
import { MigrationError } from './migrate.ts'
import { postgresProblem } from './admin/command.ts'

export const HUB_USAGE = `Usage: hr-relay hub start --config hub.json
       hr-relay hub admin --config hub.json <command> [--json]

  start    run one hub instance: ingest from the chain's broker into PostgreSQL, and its HTTP server
           (the configuration is described in docs/hub.md)
  admin    the chain's members, straps, apps and boxes, written to PostgreSQL (hr-relay hub admin --help)
`

export async function runHub (argv: string[]): Promise<number> {
  const [sub, ...rest] = argv
  if (sub === undefined || sub === '--help' || sub === '-h') { process.stdout.write(HUB_USAGE); return sub === undefined ? 2 : 0 }
  if (sub === 'admin') {
    const { hubAdminUsage, runHubAdmin } = await import('./admin/cli.ts')
    if (rest.length === 0 || rest[0] === '--help' || rest[0] === '-h') { process.stdout.write(`Usage:\n${hubAdminUsage()}\n`); return rest.length === 0 ? 2 : 0 }
    return await runHubAdmin(rest)
  }
  if (sub !== 'start') { process.stderr.write(`hr-relay hub: unknown command ${sub}\n${HUB_USAGE}`); return 2 }
  let values
  try {
    ({ values } = parseArgs({ args: rest, options: { config: { type: 'string' } }, strict: true }))
  } catch (err) { process.stderr.write(`hr-relay hub start: ${(err as Error).message}\n${HUB_USAGE}`); return 2 }
  if (values.config === undefined) { process.stderr.write(`hr-relay hub start: --config is required\n${HUB_USAGE}`); return 2 }
  try {
    const config = await loadHubConfig(values.config)
    const { startHub } = await import('./main.ts')
    const hub = await startHub(config)
    let stopping = false
    const stop = (): void => {
      if (stopping) return
      stopping = true
      hub.stop().then(() => process.exit(0), () => process.exit(1))
    }
    process.on('SIGINT', stop)
    process.on('SIGTERM', stop)
    return -1 // keep running
  } catch (err) {
    if (err instanceof HubConfigError || err instanceof MigrationError) { process.stderr.write(`hr-relay hub: ${err.message}\n`); return 1 }
    const problem = postgresProblem(err)
    if (problem !== undefined) { process.stderr.write(`hr-relay hub: ${problem}\n`); return 1 }
    throw err
  }
}
