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
