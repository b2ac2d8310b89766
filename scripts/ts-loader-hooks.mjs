// Module hooks behind scripts/ts-loader.mjs (they run in Node's loader thread).
// `load` turns a file: URL ending in .ts into JavaScript: esbuild strips the
// types (one file at a time, as `isolatedModules` code must allow) with an
// inline source map whose source is the file's path, so stack traces and V8
// coverage point at the TypeScript lines. Results are cached under
// node_modules/.cache/hr-relay-ts/, keyed by the source text and the options,
// so a changed file is compiled again and an unchanged one is read back.
import { createHash } from 'node:crypto'
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const CACHE = fileURLToPath(new URL('../node_modules/.cache/hr-relay-ts/', import.meta.url))
const OPTIONS = {
  loader: 'ts',
  format: 'esm',
  target: 'node20',
  sourcemap: 'inline',
  // The tsconfig.json options that change the emitted JavaScript.
  tsconfigRaw: { compilerOptions: { target: 'ES2022', useDefineForClassFields: true, verbatimModuleSyntax: false } }
}
// esbuild itself loads only when a file is not in the cache yet; its version is part of the key.
const ESBUILD = createRequire(import.meta.url).resolve('esbuild')
const VERSION = JSON.parse(readFileSync(join(dirname(ESBUILD), '..', 'package.json'), 'utf8')).version
const OPTIONS_KEY = JSON.stringify([VERSION, OPTIONS])
let esbuild
let cacheReady = false

async function compile (path, source) {
  const key = createHash('sha1').update(OPTIONS_KEY).update('\0').update(path).update('\0').update(source).digest('hex')
  const cached = `${CACHE}${key}.js`
  try { return readFileSync(cached, 'utf8') } catch { /* not compiled yet */ }
  esbuild ??= import('esbuild')
  const { code } = await (await esbuild).transform(source, { ...OPTIONS, sourcefile: path })
  try {
    if (!cacheReady) { mkdirSync(CACHE, { recursive: true }); cacheReady = true }
    // Written whole and renamed: a process reading the cache meanwhile sees the old state or the new file, never half.
    const tmp = `${cached}.${process.pid}.tmp`
    writeFileSync(tmp, code)
    renameSync(tmp, cached)
  } catch { /* a read-only tree: compile again next time */ }
  return code
}

export async function load (url, context, nextLoad) {
  if (!url.startsWith('file:') || !url.endsWith('.ts')) return nextLoad(url, context)
  const path = fileURLToPath(url)
  const source = readFileSync(path, 'utf8')
  return { format: 'module', source: await compile(path, source), shortCircuit: true }
}
