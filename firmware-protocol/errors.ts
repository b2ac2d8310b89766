// The one table of errors for firmware-protocol/. Every decoder throws only
// ProtocolError (or, for parseLine, returns an error event); callers branch on
// `code`, never on `message`.

export const PROTOCOL_ERRORS = {
  truncated: 'payload is shorter than its flags require',
  odd_rr_bytes: 'RR-interval field has an odd number of bytes',
  out_of_range: 'value is outside the range the format allows',
  bad_checksum: 'line checksum does not match its body',
  too_long: 'line or frame is longer than the maximum length',
  garbage: 'input does not match the expected format',
  bad_json: 'payload is not valid UTF-8 JSON',
  schema: 'payload does not match the schema',
  bad_topic: 'topic or identifier is not valid'
} as const satisfies Record<string, string>

export type ProtocolErrorCode = keyof typeof PROTOCOL_ERRORS

export class ProtocolError extends Error {
  readonly code: ProtocolErrorCode

  /**
   * @param code stable code from PROTOCOL_ERRORS
   * @param message detail; defaults to the table's message for the code
   * @param options `{ cause }` to wrap a lower-level error
   */
  constructor (code: ProtocolErrorCode, message?: string, options?: { cause?: unknown }) {
    super(message ?? PROTOCOL_ERRORS[code], options)
    this.name = 'ProtocolError'
    this.code = code
  }
}

export function isProtocolError (err: unknown): err is ProtocolError {
  return err instanceof ProtocolError
}

/**
 * One entry of a layer's table of internal error codes, in the manner of
 * fastify's lib/errors.js: the class that carries the code, its message
 * template (`{name}` placeholders, filled by errorMessage) and, where the
 * error becomes an HTTP answer, the API error it is answered with.
 * The docs/architecture.md "Internal error codes" table lists every entry of every layer
 * (test/errors-codes.test.ts keeps the two equal).
 */
export interface ErrorCodeDef {
  readonly class: string
  readonly message: string
  /** The API answer (a name of api/errors.ts API_ERRORS), where the error becomes one. */
  readonly api?: string
}

/** This layer's table: every ProtocolError code. */
export const PROTOCOL_ERROR_CODES: Record<ProtocolErrorCode, ErrorCodeDef> = Object.fromEntries(
  Object.entries(PROTOCOL_ERRORS).map(([code, message]) => [code, { class: 'ProtocolError', message }])
) as Record<ProtocolErrorCode, ErrorCodeDef>

/** Fills the `{name}` placeholders of a message template; an unknown name stays as written. */
export function errorMessage (template: string, params: Readonly<Record<string, string | number>> = {}): string {
  return template.replace(/\{(\w+)\}/g, (whole, name: string) => {
    const v = params[name]
    return v === undefined ? whole : String(v)
  })
}
