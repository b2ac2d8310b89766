// A compiled build of hr-relay for the footprint (production runs `npm run
// build`, not the TypeScript load hook): the same scripts/build.mjs, into bench/results/build.
import { spawn } from 'node:child_process'
import { access } from 'node:fs/promises'
import { join } from 'node:path'
import { BenchFailure } from './errors.ts'
import { ROOT } from './server.ts'

export const BUILD_DIR = join(ROOT, 'bench/results/build')

/** Builds once per process; returns the entry module (relay/cli-entry.js). */
let built: Promise<string> | undefined
export function compiledEntry (): Promise<string> {
  built ??= (async () => {
    const child = spawn(process.execPath, [join(ROOT, 'scripts/build.mjs'), BUILD_DIR], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    const keep = (c: Buffer): void => { out = (out + c.toString('utf8')).slice(-4000) }
    child.stdout.on('data', keep)
    child.stderr.on('data', keep)
    const code = await new Promise<number | null>(resolve => { child.once('exit', resolve) })
    const entry = join(BUILD_DIR, 'relay/cli-entry.js')
    try { await access(entry) } catch { throw new BenchFailure(`npm run build (exit ${code}) produced no ${entry}:\n${out}`) }
    return entry
  })()
  return built
}
