// A template data directory provisioned once per run through a real server's
// admin API (users, tokens, paired MQTT devices; scrypt makes this the slow
// part), then copied into a fresh data directory for each scenario.
import { cp, rm } from 'node:fs/promises'
import { join } from 'node:path'
import { createFleet, type BenchDevice, type BenchUser } from './admin.ts'
import { startServer, tempDir } from './server.ts'

export interface Fleet {
  template: string
  users: BenchUser[]
  devices: BenchDevice[]
}

let cached: Fleet | undefined

/** Provisions `count` users with one MQTT device each (once per run; a larger count re-provisions). */
export async function fleet (count: number, log: (s: string) => void = () => {}): Promise<Fleet> {
  if (cached !== undefined && cached.users.length >= count) return cached
  await disposeFleet()
  const template = await tempDir('fleet')
  const started = Date.now()
  const server = await startServer({ dataDir: template })
  try {
    const { users, devices } = await createFleet(server, count)
    cached = { template, users, devices }
  } finally {
    await server.stop()
  }
  log(`provisioned ${count} users with a device and a token each in ${((Date.now() - started) / 1000).toFixed(1)} s (scrypt for each password)`)
  return cached
}

/** A fresh data directory holding a copy of the fleet's accounts (and no readings). */
export async function freshCopy (f: Fleet): Promise<string> {
  const dir = await tempDir('data')
  await cp(f.template, dir, { recursive: true })
  await rm(join(dir, 'server.json'), { force: true })
  return dir
}

export async function disposeFleet (): Promise<void> {
  if (cached !== undefined) await rm(cached.template, { recursive: true, force: true })
  cached = undefined
}
