#!/usr/bin/env node
// `npm run build`: compiles the service to dist/ (or the folder given) with tsc,
// then copies the files the code reads at run time that tsc does not emit:
// JSON (scenarios, schemas) and the web pages' static assets, and writes
// .build-stamp with the time the build started (bin/hr-relay.cjs runs dist/
// only while no source is newer).
// TypeBox (the route and configuration schemas' builder) goes into the build as
// one module, vendor/typebox.js, bundled by esbuild from node_modules, and the
// compiled modules import it there: its ES build is some 200 small modules, each a
// module record, a source string and its scope in V8's heap for the server's
// whole life; one module takes less heap and idle RSS. The same code: only whitespace and syntax are
// minified, no name changes. Without esbuild (it is a development dependency
// like TypeScript) the imports stay as they are.
// The command's front (bin/cli.js and the relay/cli*.js modules it imports,
// what `hr-relay --help` and `hr-relay admin …` load) is then bundled by esbuild
// into one CommonJS module, dist/bin/cli.cjs, which bin/hr-relay.cjs requires:
// no ES module loader to set up and one module to load instead of seven
// (Node pays for each module it loads). Its dynamic
// imports (the service, the simulator) stay imports of the compiled ES
// modules, so the service's modules still exist once; nothing outside the
// front imports a bundled module (test/scripts/build.test.ts checks).
// `--prepare` (the `prepare` script, run by `npm install` in a checkout): when
// TypeScript is not installed (`--omit=dev`) or tsc fails, says so and exits 0,
// so the install goes on and bin/hr-relay.cjs runs the sources through esbuild (scripts/ts-loader-hooks.mjs).
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { cp, readFile, readdir, rm, utimes, writeFile } from 'node:fs/promises'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..')
const args = process.argv.slice(2)
const prepare = args.includes('--prepare')
const OUT = resolve(args.find(a => !a.startsWith('--')) ?? join(ROOT, 'dist'))
const TSC = join(ROOT, 'node_modules/typescript/bin/tsc')
const started = new Date()
const FOLDERS = ['api', 'relay', 'device-sim', 'firmware-protocol', 'hub']
const ASSET = /\.(json|js|mjs|css|html|svg|png|ico|sql)$/

/** Packages bundled into OUT/vendor/<name>.js, with the compiled modules' imports of them rewritten. */
const VENDORED = { '@sinclair/typebox': 'typebox' }

/** Compiled .js files under `dir`, but not those in vendor/. */
async function compiled (dir) {
  const out = []
  for (const e of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, e.name)
    if (e.isDirectory()) { if (path !== join(OUT, 'vendor')) out.push(...await compiled(path)) } else if (e.name.endsWith('.js')) out.push(path)
  }
  return out
}

/** Bundles the VENDORED packages into OUT/vendor/ and points the compiled imports at them; false when esbuild is not installed. */
async function vendor () {
  let esbuild
  try { esbuild = await import('esbuild') } catch { return false }
  for (const [pkg, name] of Object.entries(VENDORED)) {
    await esbuild.build({
      stdin: { contents: `export * from '${pkg}'`, resolveDir: ROOT, loader: 'js' },
      bundle: true, platform: 'node', format: 'esm', target: 'node20', minifyWhitespace: true, minifySyntax: true, outfile: join(OUT, 'vendor', name + '.js'), logLevel: 'warning'
    })
  }
  const specifier = new RegExp(`(from |import\\()'(${Object.keys(VENDORED).map(p => p.replace(/[/.]/g, '\\$&')).join('|')})'`, 'g')
  for (const file of await compiled(OUT)) {
    const text = await readFile(file, 'utf8')
    const next = text.replace(specifier, (_, head, pkg) => {
      const rel = relative(dirname(file), join(OUT, 'vendor', VENDORED[pkg] + '.js'))
      return `${head}'${rel.startsWith('.') ? rel : './' + rel}'`
    })
    if (next !== text) await writeFile(file, next)
  }
  return true
}

/** The command's front, compiled (OUT/bin/cli.js), and its CommonJS bundle. */
const FRONT = join('bin', 'cli.js')
const FRONT_BUNDLE = join('bin', 'cli.cjs')

/** Bundles the command's front into OUT/bin/cli.cjs (dynamic imports stay imports of OUT's modules); the bundled modules, or undefined without esbuild. */
async function bundleFront () {
  const entry = join(OUT, FRONT)
  const outfile = join(OUT, FRONT_BUNDLE)
  let esbuild
  try { esbuild = await import('esbuild') } catch {
    // Without esbuild the launcher's module only hands over to the compiled ES module.
    await writeFile(outfile, "'use strict'\nexports.main = async argv => await (await import('./cli.js')).main(argv)\n")
    return undefined
  }
  const keepDynamic = {
    name: 'keep-dynamic-imports',
    setup (build) {
      build.onResolve({ filter: /.*/ }, args => {
        if (args.kind !== 'dynamic-import' || !args.path.startsWith('.')) return undefined
        const rel = relative(dirname(outfile), resolve(args.resolveDir, args.path))
        return { path: rel.startsWith('.') ? rel : './' + rel, external: true }
      })
    }
  }
  const result = await esbuild.build({
    entryPoints: [entry], bundle: true, platform: 'node', format: 'cjs', target: 'node20', packages: 'external',
    plugins: [keepDynamic], write: false, outfile, sourcemap: 'linked', metafile: true, logLevel: 'warning'
  })
  for (const file of result.outputFiles) await writeFile(file.path, file.contents)
  return Object.keys(result.metafile.inputs).map(p => relative(OUT, resolve(ROOT, p)))
}

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
  console.error('build: TypeScript is not installed (dev dependencies omitted); not building. bin/hr-relay.cjs will run the sources through esbuild.')
  process.exit(0)
}
await rm(OUT, { recursive: true, force: true })
const tsc = spawnSync(process.execPath, [TSC, '-p', join(ROOT, 'tsconfig.build.json'), '--outDir', OUT], { cwd: ROOT, stdio: 'inherit' })
if (tsc.status !== 0) {
  console.error(`build: tsc failed (exit ${tsc.status})${prepare ? '; not building. bin/hr-relay.cjs will run the sources through esbuild.' : ''}`)
  await rm(OUT, { recursive: true, force: true })
  process.exit(prepare ? 0 : 1)
}
const vendored = await vendor()
const front = await bundleFront()
let copied = 0
for (const folder of FOLDERS) {
  for (const file of await assets(folder)) { await cp(join(ROOT, file), join(OUT, file)); copied++ }
}
const stamp = join(OUT, '.build-stamp')
await writeFile(stamp, started.toISOString() + '\n')
await utimes(stamp, started, started)
console.log(`build: compiled to ${OUT} and copied ${copied} assets${vendored ? `; bundled ${Object.keys(VENDORED).join(', ')} into vendor/` : ''}${front === undefined ? '' : `; bundled ${front.length} modules into ${FRONT_BUNDLE}`}`)
