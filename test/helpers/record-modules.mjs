// `node --import ./test/helpers/record-modules.mjs ...` with HR_RELAY_MODULE_LOG=FILE:
// appends every module the process resolves to FILE, one per line: ES modules
// (a resolve hook in the loader thread, whoever else hooks in) and CommonJS
// (Module._resolveFilename, which every require() goes through).
import Module, { register } from 'node:module'
import { appendFileSync } from 'node:fs'

const file = process.env.HR_RELAY_MODULE_LOG
if (file !== undefined && file !== '') {
  register('./record-modules-hooks.mjs', import.meta.url, { data: { file } })
  const resolveFilename = Module._resolveFilename
  Module._resolveFilename = function (...args) {
    const resolved = resolveFilename.apply(this, args)
    appendFileSync(file, `cjs ${resolved}\n`)
    return resolved
  }
}
