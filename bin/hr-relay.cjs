#!/usr/bin/env node
'use strict'
// The hr-relay command. Runs the compiled CLI (dist/bin/cli.cjs, built by
// `npm run build`, which `npm install` runs through the `prepare` script): no
// TypeScript compiler at run time. This launcher and that bundle of the
// command's front are CommonJS, so `hr-relay --help` and `hr-relay admin …`
// start without setting up Node's ES module loader;
// `start` and `sim` load the service and the simulator as ES modules.
// When dist/ is missing or older than the sources (a `git pull` without a
// build), it says so and runs the TypeScript sources instead, through the
// project's load hook (scripts/ts-loader-hooks.mjs, which strips the types
// with esbuild); HR_RELAY_FROM_SOURCE=1 (set by `npm test`) always runs the
// sources. esbuild is a development dependency, so that path exists only in a
// development install. bin/hr-relay.js runs this file too (installs that name it).
const { readdirSync, statSync } = require('node:fs')

// Node 22 is the oldest supported (package.json engines); 24 LTS is recommended. An older one fails here with
// a message instead of on the first syntax or API it lacks.
const NODE_MAJOR = Number(process.versions.node.split('.')[0])
if (NODE_MAJOR < 22) {
  process.stderr.write(`hr-relay: Node ${process.versions.node} is not supported; install Node 24 LTS (or 22). See README.md, "Supported Node versions".\n`)
  process.exit(1)
}
const { join } = require('node:path')

const ROOT = join(__dirname, '..') + '/'
const COMPILED = ROOT + 'dist/bin/cli.cjs'
/** Written by scripts/build.mjs with the time the build started. */
const STAMP = ROOT + 'dist/.build-stamp'
const SOURCES = ['api', 'relay', 'device-sim', 'firmware-protocol', 'hub', 'bin']

/** Newest modification time of a file or folder under `dir` (a folder's time changes when a file is added or removed). */
function newest (dir) {
  let t = 0
  let entries
  try {
    t = statSync(dir).mtimeMs
    entries = readdirSync(dir, { withFileTypes: true })
  } catch { return t }
  for (const e of entries) {
    const path = dir + '/' + e.name
    const m = e.isDirectory() ? newest(path) : statSync(path, { throwIfNoEntry: false })?.mtimeMs ?? 0
    if (m > t) t = m
  }
  return t
}

/** Why dist/ cannot be used, or undefined when it is current. */
function staleness () {
  const stamp = statSync(STAMP, { throwIfNoEntry: false })
  if (stamp === undefined || statSync(COMPILED, { throwIfNoEntry: false }) === undefined) return 'dist/ is missing'
  for (const folder of SOURCES) {
    if (newest(ROOT + folder) > stamp.mtimeMs) return `${folder}/ changed after the last build`
  }
  return undefined
}

/** The TypeScript sources' CLI through the project's load hook; exits when esbuild is not installed. */
async function fromSources (stale) {
  const { createRequire, register } = require('node:module')
  const { pathToFileURL } = require('node:url')
  const hooks = ROOT + 'scripts/ts-loader-hooks.mjs'
  try {
    createRequire(__filename).resolve('esbuild')
    if (statSync(hooks, { throwIfNoEntry: false }) === undefined) throw Object.assign(new Error('no hooks'), { code: 'MODULE_NOT_FOUND' })
  } catch (err) {
    if (err?.code !== 'MODULE_NOT_FOUND') throw err
    // esbuild is a development dependency: an install with --omit=dev has no way to
    // run the sources, only the build that `npm ci && npm run build` makes.
    process.stderr.write(`hr-relay: ${stale}, and esbuild is not installed (an install without development dependencies) to run the TypeScript sources. Run \`npm ci && npm run build\` in ${ROOT}.\n`)
    process.exit(1)
  }
  if (process.env.HR_RELAY_FROM_SOURCE !== '1') process.stderr.write(`hr-relay: ${stale}; running the TypeScript sources through esbuild (slower start). Run \`npm run build\`.\n`)
  register(pathToFileURL(hooks))
  return await import(pathToFileURL(ROOT + 'bin/cli.ts').href)
}

const stale = process.env.HR_RELAY_FROM_SOURCE === '1' ? 'HR_RELAY_FROM_SOURCE=1' : staleness()
const loading = stale === undefined ? Promise.resolve(require(COMPILED)) : fromSources(stale)
// A failure rejects this promise unhandled: Node prints it with its stack and exits 1, as for an uncaught error.
void loading.then(async mod => {
  const code = await mod.main(process.argv.slice(2))
  if (code >= 0) process.exitCode = code
})
