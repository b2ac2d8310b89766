// Strict decoding of application/x-www-form-urlencoded bodies and query
// strings for the OAuth endpoints. Unlike the general-purpose parsers it
// reports repeated parameters (RFC 6749 3.1: "parameters MUST NOT be
// included more than once") and bytes that are not UTF-8, instead of guessing.
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { OAuthError } from '../errors.ts'

export class FormParams {
  readonly values = new Map<string, string>()
  readonly repeated = new Set<string>()
  /** Every value of every parameter, in order (for multi-valued form fields such as checkboxes). */
  readonly lists = new Map<string, string[]>()
  /** Why the input could not be decoded (then `values` is empty). */
  error: string | null = null

  /** The value of a parameter given once, undefined when absent; throws on a repeated one. */
  get (name: string): string | undefined {
    if (this.repeated.has(name)) throw new OAuthError('invalid_request', `parameter ${name} is repeated`)
    return this.values.get(name)
  }

  /** A required, non-empty parameter. */
  need (name: string): string {
    const v = this.get(name)
    if (v === undefined || v === '') throw new OAuthError('invalid_request', `parameter ${name} is missing`)
    return v
  }

  /** All values of a multi-valued field. */
  all (name: string): string[] {
    return this.lists.get(name) ?? []
  }
}

const utf8 = new TextDecoder('utf-8', { fatal: true })

function decodeComponent (text: string): string | null {
  try {
    return decodeURIComponent(text.replaceAll('+', ' '))
  } catch {
    return null
  }
}

/** Decodes `a=1&b=2`; never throws. Empty values count as given. */
export function parseForm (input: string | Buffer, maxParams = 64): FormParams {
  const out = new FormParams()
  let text: string
  if (typeof input === 'string') {
    text = input
  } else {
    try { text = utf8.decode(input) } catch { out.error = 'the body is not valid UTF-8'; return out }
  }
  if (text === '') return out
  const pairs = text.split('&')
  if (pairs.length > maxParams) { out.error = 'too many parameters'; return out }
  for (const pair of pairs) {
    if (pair === '') continue
    const eq = pair.indexOf('=')
    const name = decodeComponent(eq === -1 ? pair : pair.slice(0, eq))
    const value = decodeComponent(eq === -1 ? '' : pair.slice(eq + 1))
    if (name === null || value === null) {
      out.values.clear()
      out.repeated.clear()
      out.lists.clear()
      out.error = 'malformed percent-encoding or bytes that are not UTF-8'
      return out
    }
    if (out.values.has(name)) out.repeated.add(name)
    else out.values.set(name, value)
    const list = out.lists.get(name)
    if (list === undefined) out.lists.set(name, [value])
    else list.push(value)
  }
  return out
}

/** The query string of a request, decoded strictly from the raw URL. */
export function queryOf (request: FastifyRequest): FormParams {
  const url = request.raw.url ?? ''
  const q = url.indexOf('?')
  return parseForm(q === -1 ? '' : url.slice(q + 1))
}

const FORM_TYPE = 'application/x-www-form-urlencoded'

/** Marker body for a request whose content type is not a form. */
export const NOT_A_FORM = Symbol('not a form')

/**
 * Replaces the content-type parsers of the calling (encapsulated) plugin:
 * forms are decoded strictly, every other content type is accepted but marked,
 * so the route answers with its own error format instead of a 415.
 */
export function useStrictForms (app: FastifyInstance, bodyLimit = 16 * 1024): void {
  app.removeAllContentTypeParsers()
  app.addContentTypeParser(FORM_TYPE, { parseAs: 'buffer', bodyLimit }, (_req, body, done) => {
    done(null, parseForm(body as Buffer))
  })
  app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit }, (_req, _body, done) => {
    done(null, NOT_A_FORM)
  })
}

/** The decoded form of a POST, or an OAuthError invalid_request (RFC 6749 5.2). */
export function formOf (request: FastifyRequest): FormParams {
  const body = request.body
  if (body instanceof FormParams) {
    if (body.error !== null) throw new OAuthError('invalid_request', body.error)
    return body
  }
  throw new OAuthError('invalid_request', `the content type must be ${FORM_TYPE}`)
}
