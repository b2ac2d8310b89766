// A real PostgreSQL (Debian's package) in a temporary cluster on a loopback port chosen by the test. PostgreSQL
// refuses to run as root, so when the tests run as root the cluster is made and run as the `postgres` user
// (setpriv, which execs postgres itself, so that signals reach it), in a folder that user owns. Local trust authentication: the cluster listens on 127.0.0.1 only and
// lives for one test file.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { existsSync, readdirSync } from 'node:fs'
import { chmod, chown, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir, userInfo } from 'node:os'
import { join } from 'node:path'
import { freePort, stopChild, untilReady } from './processes.ts'

interface Tap { teardown (fn: () => unknown): void }

/** The folder of initdb and postgres: Debian installs them under /usr/lib/postgresql/<major>/bin, off the PATH. */
export function postgresBin (): string | undefined {
  const root = '/usr/lib/postgresql'
  if (!existsSync(root)) return undefined
  const majors = readdirSync(root).filter(d => existsSync(join(root, d, 'bin', 'postgres'))).sort((a, b) => Number(b) - Number(a))
  return majors[0] === undefined ? undefined : join(root, majors[0], 'bin')
}

function owner (): { uid: number, gid: number, wrap: string[] } | null {
  if (userInfo().uid !== 0) return null
  const id = spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' })
  const gid = spawnSync('id', ['-g', 'postgres'], { encoding: 'utf8' })
  if (id.status !== 0) throw new Error('running as root, and there is no postgres user to run PostgreSQL as')
  return { uid: Number(id.stdout.trim()), gid: Number(gid.stdout.trim()), wrap: ['setpriv', `--reuid=${id.stdout.trim()}`, `--regid=${gid.stdout.trim()}`, '--clear-groups', '--'] }
}

export class Postgres {
  private child: ChildProcess | null = null
  private log = ''

  private constructor (readonly port: number, readonly dir: string, private readonly bin: string, private readonly wrap: string[]) {}

  /** Makes the cluster (initdb) and removes it at the end of the test. */
  static async create (t: Tap): Promise<Postgres> {
    const bin = postgresBin()
    if (bin === undefined) throw new Error('PostgreSQL is not installed (apt-get install postgresql; npm test installs it)')
    const dir = await mkdtemp(join(tmpdir(), 'hr-relay-pg-'))
    const who = owner()
    if (who !== null) { await chown(dir, who.uid, who.gid); await chmod(dir, 0o700) }
    const wrap = who?.wrap ?? []
    const data = join(dir, 'data')
    const init = spawnSync(wrap[0] ?? join(bin, 'initdb'), [...wrap.slice(1), ...(wrap.length > 0 ? [join(bin, 'initdb')] : []), '-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8', '--locale=C'], { encoding: 'utf8' })
    if (init.status !== 0) throw new Error(`initdb failed: ${init.stderr}`)
    const pg = new Postgres(await freePort(), dir, bin, wrap)
    t.teardown(async () => {
      await pg.stop()
      await rm(dir, { recursive: true, force: true })
    })
    return pg
  }

  /** A connection URL to the database `db` (created by `createDatabase`, or `postgres`). */
  url (db = 'postgres'): string { return `postgres://postgres@127.0.0.1:${this.port}/${db}` }
  get output (): string { return this.log }

  /** Starts the server; resolves once it accepts connections (its own log line). */
  async start (): Promise<void> {
    if (this.child !== null) return
    const args = ['-D', join(this.dir, 'data'), '-p', String(this.port), '-c', 'listen_addresses=127.0.0.1', '-c', `unix_socket_directories=${this.dir}`, '-c', 'fsync=on', '-c', 'max_connections=50']
    const [cmd, ...rest] = [...this.wrap, join(this.bin, 'postgres'), ...args]
    const child = spawn(cmd as string, rest, { stdio: ['ignore', 'ignore', 'pipe'] })
    this.child = child
    await untilReady(child, child.stderr, 'postgres', out => /database system is ready to accept connections/.test(out),
      text => { this.log += text }, () => { if (this.child === child) this.child = null })
  }

  /** A fast shutdown (SIGINT: running transactions are rolled back, committed ones are on disk). */
  async stop (): Promise<void> {
    const child = this.child
    if (child === null) return
    this.child = null
    await stopChild(child, 'SIGINT')
  }

  /** Creates a database; `psql`-free, through the pg client. */
  async createDatabase (name: string): Promise<string> {
    const { default: pg } = await import('pg')
    const client = new pg.Client({ connectionString: this.url() })
    await client.connect()
    try { await client.query(`CREATE DATABASE "${name}"`) } finally { await client.end() }
    return this.url(name)
  }
}
