// A template data directory provisioned through a real server's admin API
// (users, tokens, paired MQTT devices; scrypt for every password makes this
// the slow part), then copied into a fresh data directory for each scenario.
// Templates are kept in bench/results/.fleet/ (git-ignored) and reused by
// later runs while the store and admin code they were made with is unchanged.
import { createHash } from 'node:crypto'
import { cp, mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { createFleet, type BenchDevice, type BenchUser } from './admin.ts'
import { ROOT, startServer, tempDir } from './server.ts'

export interface Fleet {
  template: string
  users: BenchUser[]
  devices: BenchDevice[]
}

const CACHE = join(ROOT, 'bench/results/.fleet')
let cached: Fleet | undefined

/** Digest of the code that decides what a provisioned store looks like. */
async function codeDigest (): Promise<string> {
  const h = createHash('sha256')
  // Every store file except the aggregates a template holds nothing of (readings, rollups, widgets, game mods, rooms):
  // their code changes often and does not change the accounts; db.ts (schema, migrations) is included.
  const dataOnly = new Set(['readings.ts', 'rollups.ts', 'widgets.ts', 'gamemod.ts', 'rooms.ts'])
  const store = (await readdir(join(ROOT, 'api/store'))).filter(f => f.endsWith('.ts') && !dataOnly.has(f)).sort().map(f => `api/store/${f}`)
  const files = [...store, 'api/http/admin.ts', 'relay/cli-devices.ts', 'package-lock.json']
  for (const f of files) {
    try { h.update(f).update(await readFile(join(ROOT, f))) } catch { h.update(`${f}:missing`) }
  }
  return h.digest('hex').slice(0, 16)
}

async function fromCache (digest: string, count: number): Promise<Fleet | undefined> {
  let names: string[]
  try { names = await readdir(CACHE) } catch { return undefined }
  for (const name of names) {
    const m = /^(\d+)-([0-9a-f]{16})$/.exec(name)
    if (m === null || m[2] !== digest || Number(m[1]) < count) continue
    try {
      const manifest = JSON.parse(await readFile(join(CACHE, name, 'manifest.json'), 'utf8')) as Omit<Fleet, 'template'>
      return { template: join(CACHE, name, 'data'), ...manifest }
    } catch { /* incomplete: ignore */ }
  }
  return undefined
}

/** At least `count` users with one MQTT device and a token each. */
export async function fleet (count: number, log: (s: string) => void = () => {}): Promise<Fleet> {
  if (cached !== undefined && cached.users.length >= count) return cached
  const digest = await codeDigest()
  const hit = await fromCache(digest, count)
  if (hit !== undefined) {
    log(`using the provisioned fleet of ${hit.users.length} users from ${hit.template}`)
    cached = hit
    return hit
  }
  const work = await tempDir('fleet')
  const started = Date.now()
  const server = await startServer({ dataDir: work })
  let made: Omit<Fleet, 'template'>
  try {
    made = await createFleet(server, count)
  } finally {
    await server.stop()
  }
  log(`provisioned ${count} users with a device and a token each in ${((Date.now() - started) / 1000).toFixed(1)} s (scrypt for each password); cached in ${CACHE}`)
  const dir = join(CACHE, `${count}-${digest}`)
  await rm(dir, { recursive: true, force: true })
  await mkdir(dir, { recursive: true })
  await rename(work, join(dir, 'data')).catch(async () => { await cp(work, join(dir, 'data'), { recursive: true }); await rm(work, { recursive: true, force: true }) })
  await writeFile(join(dir, 'manifest.json'), JSON.stringify(made))
  cached = { template: join(dir, 'data'), ...made }
  return cached
}

/** A fresh data directory holding a copy of the fleet's accounts (and no readings). */
export async function freshCopy (f: Fleet): Promise<string> {
  const dir = await tempDir('data')
  await cp(f.template, dir, { recursive: true })
  await rm(join(dir, 'server.json'), { force: true })
  await rm(join(dir, 'bench-config.json'), { force: true })
  return dir
}

/** Forgets the in-memory fleet (the cached template stays on disk for the next run). */
export async function disposeFleet (): Promise<void> {
  cached = undefined
}
