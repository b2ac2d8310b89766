// The `hr-relay` command: start, admin, sim. Each subcommand loads what it
// needs when it runs (dynamic import): `--help` and `admin ...` never load
// Fastify, Aedes, LevelDB, BLE, serial or the simulator.
import { parseArgs } from 'node:util'
import { CliError, adminUsage, runAdmin } from './cli-admin.ts'
import type { ServiceHooks } from './main.ts'

/** `hr-relay admin tls ...` (relay/cli-tls.ts, loaded when run). */
export const TLS_USAGE = 'tls self-signed --hostname NAME [--ip ADDR ...] [--days N] [--force] [--data-dir DIR] [--json]'

/** Built when printed: other folders register admin commands and subcommands at load time. */
function usage (): string {
  return `usage:
  hr-relay start [--config FILE] [--data-dir DIR] [--host H] [--http-port N] [--mqtt-port N] [--no-demo]
${adminUsage()}
  hr-relay admin ${TLS_USAGE}
  hr-relay sim --help
  hr-relay hub start --config FILE
  hr-relay hub admin --config FILE user|device|token|client|box ...   (docs/hub.md "Members of the chain")
`
}

export type SubcommandRunner = (argv: string[]) => Promise<number>

/** Where main() writes its output and messages: the process's own streams, or (a test running a command in-process) others. */
export interface CliStreams { stdout: { write (text: string): unknown }, stderr: { write (text: string): unknown } }

/** Subcommands contributed by other folders (the simulator registers `sim`). */
export const SUBCOMMANDS: Record<string, SubcommandRunner> = {}

/** Hooks of `start` contributed by other folders (bin/cli.ts adds the demo's), made fresh for each start. */
export const START_HOOKS: Array<() => ServiceHooks> = []

async function start (argv: string[], io: CliStreams): Promise<number> {
  let values
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        config: { type: 'string' },
        'data-dir': { type: 'string' },
        host: { type: 'string' },
        'http-port': { type: 'string' },
        'mqtt-port': { type: 'string' },
        'no-demo': { type: 'boolean' },
        help: { type: 'boolean' }
      }
    }))
  } catch (err) {
    io.stderr.write(`hr-relay start: ${(err as Error).message}\n${usage()}`)
    return 2
  }
  if (values.help === true) { io.stdout.write(usage()); return 0 }
  const [{ loadConfig }, { startService }] = await Promise.all([import('./config.ts'), import('./main.ts')])
  const config = await loadConfig({
    ...(values.config === undefined ? {} : { file: values.config }),
    overrides: raw => {
      if (values['data-dir'] !== undefined) raw.data_dir = values['data-dir']
      if (values.host !== undefined) (raw.http ??= {}).host = values.host
      if (values['http-port'] !== undefined) (raw.http ??= {}).port = Number(values['http-port'])
      if (values['mqtt-port'] !== undefined) (raw.mqtt ??= {}).port = Number(values['mqtt-port'])
      if (values['no-demo'] === true) raw.demo = false
    }
  })
  const service = await startService(config, { hooks: START_HOOKS.map(make => make()) })
  // Once the start's allocations are done: the bound applies from the settling collection on.
  // node:v8 is imported here, not with the module: `--help` and `admin …` never need it (~4 ms of their start).
  const log = service.services.log
  const settle = setTimeout(() => {
    import('node:v8').then(v8 => {
      const bound = boundHeapGrowth(process.execArgv, v8.default.setFlagsFromString)
      log.debug({ heap_growing_percent: bound ? HEAP_GROWING_PERCENT : 'node\'s own' }, 'heap growth set; settling the heap')
      return settleHeap().then(() => { log.debug('heap settled') })
    }).catch((err: unknown) => { log.warn({ err }, 'could not bound the heap growth') })
  }, SETTLE_AFTER_MS).unref()
  let stopping = false
  const stop = (signal: string): void => {
    if (stopping) return
    stopping = true
    clearTimeout(settle)
    log.info({ signal }, 'stopping')
    service.close().then(() => process.exit(0), () => process.exit(1))
  }
  process.on('SIGINT', () => { stop('SIGINT') })
  process.on('SIGTERM', () => { stop('SIGTERM') })
  return -1 // keep running
}

/** V8's heap growth after a full collection, in percent: the old space may reach 1.5x what survived before the next. */
export const HEAP_GROWING_PERCENT = 50

/**
 * After each full collection V8 sets the next one's trigger at a multiple of
 * what survived, up to 4x while the heap is small and collections are cheap.
 * Under load the old space fills steadily (what lives longer than a few
 * scavenges: a reading in its group, a frame in a socket's queue; with the
 * unit's 1 MB semi-spaces most of it), so under a steady load the first full
 * collection after the start comes late, at several times the live heap, and
 * the RSS peaks far above where it settles. At a fixed 1.5x the heap and the
 * RSS stay near the live size, for more frequent full collections (their
 * marking runs beside the main thread).
 * `start` sets it a second after the start, just before the settling
 * collection below, so that the start's own allocations run as before (idle
 * RSS unchanged) and the trigger after that collection is the first bounded
 * one. Set at run time (`setFlags`: v8.setFlagsFromString; V8 reads the flag
 * each time it sets a trigger). A `--heap-growing-percent` given to node by the
 * operator is kept. Returns whether it set the flag.
 */
export function boundHeapGrowth (execArgv: readonly string[], setFlags: (flags: string) => void): boolean {
  if (execArgv.some(a => /^--heap[-_]growing[-_]percent(=|$)/.test(a))) return false
  setFlags(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`)
  return true
}

/** How long after the start the heap is settled: after the first requests a client sends on seeing server.json. */
const SETTLE_AFTER_MS = 1000

/**
 * Start-up (loading the modules, compiling the schemas, building the route
 * tree) leaves V8's old space with much garbage in half-empty pages. V8's
 * memory reducer compacts that by itself, but only after several seconds of
 * low allocation; this does the same memory-reducing collection once, a
 * second after the start, through the documented in-process inspector
 * (HeapProfiler.collectGarbage), which lowers the idle RSS. Nothing changes
 * when it cannot run (a Node built without the inspector): it is only the
 * reducer's work done earlier.
 */
export async function settleHeap (): Promise<void> {
  try {
    if (process.features.inspector !== true) return
    const { Session } = await import('node:inspector')
    const session = new Session()
    session.connect()
    // Disconnecting inside the callback deadlocks (it runs within the session's dispatch): on the next turn.
    await new Promise<void>(resolve => {
      session.post('HeapProfiler.collectGarbage', () => { setImmediate(() => { session.disconnect(); resolve() }) })
    })
  } catch {}
}

/** `hr-relay admin tls ...`: its module is loaded only here; its refusals become CliErrors. */
async function runTls (argv: string[]): Promise<string> {
  const { runTls, TlsCommandError } = await import('./cli-tls.ts')
  try {
    return await runTls(argv, TLS_USAGE)
  } catch (err) {
    if (err instanceof TlsCommandError) throw new CliError(err.message, err.exitCode)
    throw err
  }
}

/** The error when it is a configuration or store error (their modules load only here, after a failure; `start` has them loaded already). */
async function isOperatorError (err: unknown): Promise<Error | undefined> {
  const [{ ConfigError }, { DataDirError, StoreLockedError, StoreOpenError }, { ListenError }] = await Promise.all([import('./config.ts'), import('../api/store/db.ts'), import('./listen-error.ts')])
  return err instanceof ConfigError || err instanceof StoreLockedError || err instanceof StoreOpenError || err instanceof DataDirError || err instanceof ListenError ? err : undefined
}

export async function main (argv: string[], io: CliStreams = { stdout: process.stdout, stderr: process.stderr }): Promise<number> {
  const [cmd, ...rest] = argv
  try {
    switch (cmd) {
      case 'start': return await start(rest, io)
      case 'admin': {
        if (rest.length === 0 || rest[0] === '--help' || rest[0] === '-h') { io.stdout.write(usage()); return rest.length === 0 ? 2 : 0 }
        // A key and certificate for TLS on the LAN: made here, without the service.
        if (rest[0] === 'tls') { io.stdout.write(await runTls(rest.slice(1)) + '\n'); return 0 }
        const { output } = await runAdmin(rest)
        io.stdout.write(output + '\n')
        return 0
      }
      case undefined: case '-h': case '--help': case 'help':
        io.stdout.write(usage())
        return cmd === undefined ? 2 : 0
      default: {
        const runner = SUBCOMMANDS[cmd]
        if (runner !== undefined) return await runner(rest)
        io.stderr.write(`hr-relay: unknown command ${cmd}\n${usage()}`)
        return 2
      }
    }
  } catch (err) {
    const json = rest.includes('--json')
    const known = err instanceof CliError ? err : await isOperatorError(err)
    if (known !== undefined) {
      if (json) io.stdout.write(JSON.stringify({ error: known.message, ...(known instanceof CliError && known.body !== undefined ? { response: known.body } : {}) }) + '\n')
      else io.stderr.write(`hr-relay: ${known.message}\n`)
      return err instanceof CliError ? err.exitCode : 1
    }
    throw err
  }
}
