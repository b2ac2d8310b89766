#!/usr/bin/env node
// `npm run build`: compiles the service to dist/ (or the folder given) with tsc,
// then copies the files the code reads at run time that tsc does not emit:
// JSON (scenarios, schemas) and the web pages' static assets, and writes
// .build-stamp with the time the build started (bin/hr-relay.js runs dist/
// only while no source is newer).
// `--prepare` (the `prepare` script, run by `npm install` in a checkout): when
// TypeScript is not installed (`--omit=dev`) or tsc fails, says so and exits 0,
// so the install goes on and bin/hr-relay.js runs the sources through esbuild (scripts/ts-loader-hooks.mjs).
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { cp, readdir, rm, utimes, writeFile } from 'node:fs/promises'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..')
const args = process.argv.slice(2)
const prepare = args.includes('--prepare')
const OUT = resolve(args.find(a => !a.startsWith('--')) ?? join(ROOT, 'dist'))
const TSC = join(ROOT, 'node_modules/typescript/bin/tsc')
const started = new Date()
const FOLDERS = ['api', 'relay', 'device-sim', 'firmware-protocol']
const ASSET = /\.(json|js|mjs|css|html|svg|png|ico)$/

async function assets (dir) {
  const out = []
  for (const e of await readdir(join(ROOT, dir), { withFileTypes: true })) {
    const rel = join(dir, e.name)
    if (e.isDirectory()) out.push(...await assets(rel))
    else if (ASSET.test(e.name)) out.push(rel)
  }
  return out
}

if (prepare && !existsSync(TSC)) {
  console.error('build: TypeScript is not installed (dev dependencies omitted); not building. bin/hr-relay.js will run the sources through esbuild.')
  process.exit(0)
}
await rm(OUT, { recursive: true, force: true })
const tsc = spawnSync(process.execPath, [TSC, '-p', join(ROOT, 'tsconfig.build.json'), '--outDir', OUT], { cwd: ROOT, stdio: 'inherit' })
if (tsc.status !== 0) {
  console.error(`build: tsc failed (exit ${tsc.status})${prepare ? '; not building. bin/hr-relay.js will run the sources through esbuild.' : ''}`)
  await rm(OUT, { recursive: true, force: true })
  process.exit(prepare ? 0 : 1)
}
let copied = 0
for (const folder of FOLDERS) {
  for (const file of await assets(folder)) { await cp(join(ROOT, file), join(OUT, file)); copied++ }
}
const stamp = join(OUT, '.build-stamp')
await writeFile(stamp, started.toISOString() + '\n')
await utimes(stamp, started, started)
console.log(`build: compiled to ${OUT} and copied ${copied} assets`)
