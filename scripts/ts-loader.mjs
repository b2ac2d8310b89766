// `node --import ./scripts/ts-loader.mjs file.ts`: runs this project's TypeScript
// without a build, for the tests (tap's node-arg) and the tools. Our sources
// import each other with explicit `.ts` extensions (tsconfig
// allowImportingTsExtensions), so Node's own resolver finds every file and only
// loading needs a hook: scripts/ts-loader-hooks.mjs strips the types with
// esbuild and caches the result on disk.
//
// Why not tsx: tsx also hooks resolution (tsconfig paths, extension probing,
// CommonJS) for every import, including each of the ~1,500 modules of
// node_modules a service start resolves, and starts both an ESM and a CommonJS
// loader. Under the test suite that cost ~0.6 s of CPU in each of the hundreds
// of processes the suite starts; this hook costs a file read and a cache
// lookup per TypeScript file and nothing per package.
import { register } from 'node:module'

register('./ts-loader-hooks.mjs', import.meta.url)
