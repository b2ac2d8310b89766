// A power cut, simulated for real: a power cut keeps what LevelDB synced and
// loses what it had only written. The writer (fixtures/power-cut-writer.ts)
// runs in a child process with an LD_PRELOAD shim (fixtures/sync-log-shim.c,
// compiled here with cc) that logs, at each fsync/fdatasync, the file and the
// size it covered, and each rename. The test counts the groups the writer
// acknowledged, kills it with SIGKILL, cuts every file of the LevelDB
// directory back to what the last sync covered, reopens it and looks for every
// acknowledged group. The writer uses a small write buffer, so LevelDB switches
// log files and flushes memtables to table files many times during the run:
// the case where an older design lost acknowledged readings (a sync covers
// only the current log file). The same run with batches written without sync
// must lose acknowledged groups: that shows the cut removes unsynced data.
//
// The model of the disk is ext4's default (data=ordered): a sync of any file
// commits the file system's journal, so every create and rename before it is
// durable; a file's data is durable up to the size its last fsync/fdatasync
// covered. A file never synced is cut to 0 bytes: its name may have reached
// the disk with another sync's journal commit, its data did not. (Unlinks are
// not undone: a file LevelDB deleted is obsolete to it.) LevelDB (classic-level's
// prebuilt binary) calls fsync, fdatasync and rename, and neither msync nor
// sync_file_range, so the shim needs no more.
import t from 'tap'
import { execFile, spawn } from 'node:child_process'
import { mkdtemp, readFile, readdir, rm, stat, truncate } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { Level } from 'level'
import type { Test } from 'tap'

const GROUP_SIZE = 20
/** Groups acknowledged before the kill: about a dozen log files' worth at the writer's 64 KiB write buffer. */
const ACKED = 150

const shimSource = fileURLToPath(new URL('./fixtures/sync-log-shim.c', import.meta.url))
const writer = fileURLToPath(new URL('./fixtures/power-cut-writer.ts', import.meta.url))
const loader = fileURLToPath(new URL('../../../scripts/ts-loader.mjs', import.meta.url))

interface SyncLog { synced: Map<string, number>, logFiles: Set<string>, tables: number, lastSync: number, lastRename: number }

/** Reads the shim's log: the size each file's last sync covered (under its current name). */
function parseSyncLog (text: string, dir: string): SyncLog {
  const synced = new Map<string, number>()
  const logFiles = new Set<string>()
  let tables = 0
  let lastSync = -1
  let lastRename = -1
  text.split('\n').forEach((line, n) => {
    if (line === '') return
    if (line.startsWith('R ')) {
      const [from = '', to = ''] = line.slice(2).split('\t')
      if (!to.startsWith(dir + '/')) return
      lastRename = n
      const size = synced.get(from)
      synced.delete(from)
      if (size !== undefined) synced.set(to, size)
      return
    }
    const m = /^([SD]) (\d+) (.*)$/.exec(line)
    if (m === null) throw new Error(`unexpected line in the sync log: ${line}`)
    lastSync = n
    const path = m[3]!
    if (m[1] !== 'S' || !path.startsWith(dir + '/')) return
    synced.set(path, Number(m[2]))
    if (path.endsWith('.log')) logFiles.add(path)
    if (path.endsWith('.ldb')) tables++
  })
  return { synced, logFiles, tables, lastSync, lastRename }
}

async function buildShim (work: string): Promise<string> {
  const out = join(work, 'sync-log-shim.so')
  await promisify(execFile)('cc', ['-shared', '-fPIC', '-O2', '-o', out, shimSource, '-ldl'])
  return out
}

/** Runs the writer under the shim until ACKED groups are acknowledged, kills it, and returns what it acknowledged. */
async function writeAndKill (t: Test, shim: string, dataDir: string, syncLog: string, mode: 'reading-log' | 'no-sync'): Promise<number[]> {
  const child = spawn(process.execPath, [`--import=${loader}`, writer, dataDir, mode], {
    env: { ...process.env, LD_PRELOAD: shim, SYNC_LOG: syncLog },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  t.teardown(() => { if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL') })
  const acked: number[] = []
  let stderr = ''
  child.stderr.on('data', (c: Buffer) => { stderr += c.toString() })
  const exited = new Promise<void>(resolve => { child.once('exit', () => { resolve() }) })
  await new Promise<void>((resolve, reject) => {
    let rest = ''
    child.stdout.on('data', (c: Buffer) => {
      rest += c.toString()
      const lines = rest.split('\n')
      rest = lines.pop() ?? ''
      for (const line of lines) {
        const m = /^ack (\d+)$/.exec(line)
        if (m !== null) acked.push(Number(m[1]))
      }
      if (acked.length >= ACKED && child.signalCode === null) { child.kill('SIGKILL'); resolve() }
    })
    child.once('exit', (code, signal) => { if (signal !== 'SIGKILL') reject(new Error(`the writer exited (${code}): ${stderr}`)) })
  })
  await exited
  return acked
}

/** What a power cut leaves of the LevelDB directory: each file cut back to its last synced size, or to 0 if never synced. */
async function powerCut (location: string, log: SyncLog): Promise<{ cutBytes: number }> {
  let cutBytes = 0
  for (const name of await readdir(location)) {
    const path = join(location, name)
    const size = (await stat(path)).size
    const keep = Math.min(size, log.synced.get(path) ?? 0)
    if (keep < size) { await truncate(path, keep); cutBytes += size - keep }
  }
  return { cutBytes }
}

/** The groups found after the cut, with how many of each group's records. */
async function groupsFound (location: string): Promise<Map<number, number>> {
  const db = new Level<string, unknown>(location, { valueEncoding: 'json' })
  await db.open()
  try {
    const found = new Map<number, number>()
    for await (const [, value] of db.sublevel<string, { g: number }>('r', { valueEncoding: 'json' }).iterator()) found.set(value.g, (found.get(value.g) ?? 0) + 1)
    return found
  } finally {
    await db.close()
  }
}

async function run (t: Test, mode: 'reading-log' | 'no-sync'): Promise<{ acked: number[], found: Map<number, number>, log: SyncLog, cutBytes: number }> {
  const work = await mkdtemp(join(tmpdir(), 'hr-power-cut-'))
  t.teardown(async () => { await rm(work, { recursive: true, force: true }) })
  const shim = await buildShim(work)
  const dataDir = join(work, 'data')
  const location = join(dataDir, 'db')
  const syncLogFile = join(work, 'sync.log')
  const acked = await writeAndKill(t, shim, dataDir, syncLogFile, mode)
  const log = parseSyncLog(await readFile(syncLogFile, 'utf8').catch(() => ''), location)
  // The model holds only if every rename was followed by a sync (which committed it): LevelDB renames at open only.
  t.ok(log.lastRename < log.lastSync, 'every rename was followed by a sync')
  const { cutBytes } = await powerCut(location, log)
  return { acked, found: await groupsFound(location), log, cutBytes }
}

t.test('after a power cut, every group the reading log acknowledged is there, whole', async t => {
  const { acked, found, log } = await run(t, 'reading-log')
  t.ok(acked.length >= ACKED, `${acked.length} groups acknowledged before the kill`)
  t.ok(log.logFiles.size >= 3, `LevelDB switched log files during the run (${log.logFiles.size} log files synced)`)
  t.ok(log.tables >= 1, `and flushed memtables to table files (${log.tables} table syncs)`)
  t.same(acked.filter(g => found.get(g) !== GROUP_SIZE), [], 'no acknowledged group is missing or partial')
  t.same([...found].filter(([, n]) => n !== GROUP_SIZE), [], 'every group found is whole (atomic)')
})

t.test('the same cut, with groups written without sync, loses acknowledged groups', async t => {
  const { acked, found, cutBytes } = await run(t, 'no-sync')
  t.ok(acked.length >= ACKED, `${acked.length} groups acknowledged before the kill`)
  const missing = acked.filter(g => found.get(g) !== GROUP_SIZE)
  t.ok(cutBytes > 0, `the cut removed ${cutBytes} bytes LevelDB had written but not synced`)
  t.ok(missing.length > 0, `${missing.length} acknowledged groups lost (the simulation removes unsynced data)`)
  t.same([...found].filter(([, n]) => n !== GROUP_SIZE), [], 'LevelDB still applies whole batches only')
})
