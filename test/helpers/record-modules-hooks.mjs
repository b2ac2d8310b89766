// Loader-thread half of record-modules.mjs: records each resolved ES module URL.
import { appendFileSync } from 'node:fs'

let file

export function initialize (data) { file = data.file }

export async function resolve (specifier, context, next) {
  const result = await next(specifier, context)
  appendFileSync(file, `esm ${result.url}\n`)
  return result
}
