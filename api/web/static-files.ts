// The pages' static assets, served by a route of our own: a flat folder of
// ES modules and style sheets (api/web/static) and uPlot's two files from
// node_modules. `@fastify/static` did this before; for 13 small files it
// loaded a file-serving stack (send, a MIME database, glob) that stayed in
// the process's memory for its whole life.
//
// What a browser or OBS gets: the file with its type, Cache-Control max-age,
// a weak ETag and Last-Modified (a conditional request with a matching
// If-None-Match is answered 304 without a body), HEAD as GET without the body.
// Only names of one path segment with an allowed extension are served, and
// only files listed in `only` when it is given; anything else is the API's
// 404 (a directory request, the folder itself, is 403).
import { readFile, stat } from 'node:fs/promises'
import { extname, join } from 'node:path'
import type { FastifyPluginAsync } from 'fastify'
import { ApiError } from '../errors.ts'

const TYPES: Readonly<Record<string, string>> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8'
}

/** One path segment: no separator, no leading dot (so no `..`), nothing outside these characters. */
const NAME = /^[A-Za-z0-9_-][A-Za-z0-9._-]*$/

export interface StaticFilesOptions {
  /** URL prefix ending in `/`, e.g. `/web/static/`. */
  prefix: string
  /** The folder the names are looked up in (not below it). */
  root: string
  /** Cache-Control max-age in seconds. */
  maxAgeS: number
  /** When given, only these names are served. */
  only?: ReadonlySet<string>
}

export function staticFiles (options: StaticFilesOptions): FastifyPluginAsync {
  const { prefix, root, maxAgeS, only } = options
  return async app => {
    app.get(`${prefix}*`, async (request, reply) => {
      const name = (request.params as { '*'?: string })['*'] ?? ''
      if (name === '') throw new ApiError('forbidden')
      const type = TYPES[extname(name)]
      if (type === undefined || !NAME.test(name) || (only !== undefined && !only.has(name))) return await reply.callNotFound()
      const path = join(root, name)
      let info
      try {
        info = await stat(path)
      } catch {
        return await reply.callNotFound()
      }
      if (!info.isFile()) return await reply.callNotFound()
      const etag = `W/"${info.size.toString(16)}-${Math.floor(info.mtimeMs).toString(16)}"`
      reply
        .header('cache-control', `public, max-age=${maxAgeS}`)
        .header('etag', etag)
        .header('last-modified', info.mtime.toUTCString())
      if (request.headers['if-none-match'] === etag) return await reply.code(304).send()
      return await reply.type(type).send(await readFile(path))
    })
  }
}
