// Run by scripts/test.mjs between tap's test run (--coverage-report=none) and
// `tap report`: makes the coverage report count the same lines in every run of
// the same tree. (`node test/helpers/coverage-sources.mjs && npx tap report`
// does the same after any tap run with coverage.)
//
// Every process records V8 coverage into .tap/coverage/<uuid>.json with the
// source map of each TypeScript file it loaded. tsx (the test loader until
// scripts/ts-loader.mjs replaced it; the esbuild maps of that hook name paths
// and carry the text, and this rewrite leaves them as they are) wrote
// maps whose `sources` are file:// URLs and whose `sourcesContent` is [null];
// the c8 behind tap's report resolves such a source to a path that does not
// exist and reads the null as the file's text, so the file drops out of the
// report or counts one line. c8 keeps, for each file, the map of whichever
// process's JSON it happens to read last (a readdir of random names), so the
// same tree reported 1,764, 5,903 and 16,545 lines before this fix.
//
// This rewrites the maps (sources as paths, no null contents: c8 then reads the
// source from disk) and keeps only the product's sources (api, relay,
// firmware-protocol, device-sim, bin), not the test helpers, bench/ or
// scripts/, so the floor in scripts/test.mjs measures the product.
import { readdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))
const DIR = join(ROOT, '.tap', 'coverage')
export const PRODUCT = ['api', 'relay', 'firmware-protocol', 'device-sim', 'hub', 'bin']
const KEEP = PRODUCT.map(f => pathToFileURL(join(ROOT, f)).href + '/')

/** Rewrites one process's coverage record in place; returns it. */
export function productCoverage (record) {
  record.result = (record.result ?? []).filter(s => KEEP.some(k => s.url.startsWith(k)))
  const cache = record['source-map-cache'] ?? {}
  const kept = new Set(record.result.map(s => s.url))
  for (const url of Object.keys(cache)) {
    if (!kept.has(url)) { delete cache[url]; continue }
    const map = cache[url].data
    if (map == null) continue
    if (Array.isArray(map.sources)) map.sources = map.sources.map(s => s.startsWith('file://') ? fileURLToPath(s) : s)
    if (Array.isArray(map.sourcesContent) && map.sourcesContent.some(c => c == null)) delete map.sourcesContent
  }
  return record
}

async function main () {
  let names
  try { names = await readdir(DIR) } catch { return } // --disable-coverage: nothing recorded
  for (const name of names.filter(n => n.endsWith('.json'))) {
    const file = join(DIR, name)
    try {
      await writeFile(file, JSON.stringify(productCoverage(JSON.parse(await readFile(file, 'utf8')))))
    } catch (err) {
      console.error(`coverage-sources: ${name}: ${err.message}`)
    }
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await main()
