#!/usr/bin/env node
// `npm run bench [-- --quick]`: runs bench/run.ts through scripts/ts-loader.mjs (see bench/README.md).
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { onSupportedNode } from './supported-node.mjs'

onSupportedNode(import.meta.url, 'npm run bench')

const root = fileURLToPath(new URL('..', import.meta.url))
const child = spawn(process.execPath, ['--import', './scripts/ts-loader.mjs', 'bench/run.ts', ...process.argv.slice(2)], { cwd: root, stdio: 'inherit' })
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => { child.kill(sig) })
child.on('exit', (code, signal) => { process.exit(code ?? (signal === null ? 1 : 1)) })
