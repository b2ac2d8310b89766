#!/usr/bin/env node
// Runs the compiled CLI from dist/ when `npm run build` has been run, and the
// TypeScript sources through tsx otherwise (a fresh clone needs no build step).
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

const compiled = fileURLToPath(new URL('../dist/bin/cli.js', import.meta.url))
let mod
if (existsSync(compiled) && process.env.HR_RELAY_FROM_SOURCE !== '1') {
  mod = await import(compiled)
} else {
  const { register } = await import('tsx/esm/api')
  register()
  mod = await import('./cli.ts')
}
const code = await mod.main(process.argv.slice(2))
if (code >= 0) process.exitCode = code
