// A compiled build of hr-relay for the footprint (production runs `npm run
// build`, not tsx): tsc -p tsconfig.build.json into bench/results/build, plus
// the JSON files the code reads at run time (tsc copies only imported JSON).
import { spawn } from 'node:child_process'
import { cp, readdir, rm } from 'node:fs/promises'
import { join } from 'node:path'
import { BenchFailure } from './errors.ts'
import { ROOT } from './server.ts'

export const BUILD_DIR = join(ROOT, 'bench/results/build')

async function jsonFiles (dir: string): Promise<string[]> {
  const out: string[] = []
  for (const e of await readdir(join(ROOT, dir), { withFileTypes: true })) {
    const rel = join(dir, e.name)
    if (e.isDirectory()) out.push(...await jsonFiles(rel))
    else if (e.name.endsWith('.json')) out.push(rel)
  }
  return out
}

/** Builds once per process; returns the entry module (relay/cli-entry.js). */
let built: Promise<string> | undefined
export function compiledEntry (): Promise<string> {
  built ??= (async () => {
    await rm(BUILD_DIR, { recursive: true, force: true })
    const child = spawn(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json', '--outDir', BUILD_DIR], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    child.stdout.on('data', (c: Buffer) => { out = (out + c.toString('utf8')).slice(-4000) })
    const code = await new Promise<number | null>(resolve => { child.once('exit', resolve) })
    // tsc emits even with type errors in files outside bench/; only a missing entry is fatal.
    for (const folder of ['api', 'relay', 'device-sim', 'firmware-protocol']) {
      for (const f of await jsonFiles(folder)) await cp(join(ROOT, f), join(BUILD_DIR, f))
    }
    const entry = join(BUILD_DIR, 'relay/cli-entry.js')
    try { await readdir(join(BUILD_DIR, 'relay')) } catch { throw new BenchFailure(`tsc (exit ${code}) produced no ${entry}:\n${out}`) }
    return entry
  })()
  return built
}
