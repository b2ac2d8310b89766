// Starts hr-relay from a compiled build (`tsc -p tsconfig.build.json --outDir DIR`)
// without the TypeScript load hook, as `npm run build && hr-relay start` runs in production.
// Usage: node bench/lib/compiled-server.mjs DIR/relay/cli-entry.js start ...
import { pathToFileURL } from 'node:url'

const [entry, ...args] = process.argv.slice(2)
const mod = await import(pathToFileURL(entry).href)
const code = await mod.main(args)
if (code >= 0) process.exitCode = code
