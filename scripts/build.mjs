#!/usr/bin/env node
// `npm run build`: compiles the service to dist/ (or the folder given) with tsc,
// then copies the files the code reads at run time that tsc does not emit:
// JSON (scenarios, schemas) and the web pages' static assets.
import { spawnSync } from 'node:child_process'
import { cp, readdir, rm } from 'node:fs/promises'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..')
const OUT = resolve(process.argv[2] ?? join(ROOT, 'dist'))
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

await rm(OUT, { recursive: true, force: true })
const tsc = spawnSync(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', join(ROOT, 'tsconfig.build.json'), '--outDir', OUT], { cwd: ROOT, stdio: 'inherit' })
if (tsc.status !== 0) {
  console.error(`build: tsc failed (exit ${tsc.status})`)
  process.exit(1)
}
let copied = 0
for (const folder of FOLDERS) {
  for (const file of await assets(folder)) { await cp(join(ROOT, file), join(OUT, file)); copied++ }
}
console.log(`build: compiled to ${OUT} and copied ${copied} assets`)
