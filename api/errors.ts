// One table of API errors. Every non-2xx answer of the API carries the
// specification's JSON body `{"error_code": <number>, "error_message": "<id>"}`
// (spec section 7; clients call response.json() on every failed response).
// Codes 7001-7015 and 6001-6004 are the specification's; 9xxx are hr-relay's
// own for conditions the specification leaves without a code. Only codes the
// server sends are here; test/api/errors-table.test.ts keeps this table and
// the docs/api.md "Errors" table identical.

export interface ApiErrorDef { code: number, message: string, status: number }

export const API_ERRORS = {
  token_not_found: { code: 7005, message: 'token_not_found', status: 401 },
  token_expired: { code: 7006, message: 'token_expired', status: 401 },
  premium_required: { code: 7007, message: 'premium_required', status: 402 },
  header_missing: { code: 7009, message: 'error_authorization_header_is_not_present', status: 403 },
  header_wrong_format: { code: 7010, message: 'error_authorization_header_has_wrong_format', status: 403 },
  invalid_scope: { code: 7011, message: 'error_invalid_scope', status: 400 },
  processing: { code: 7012, message: 'error_processing_your_request', status: 500 },
  invalid_request: { code: 7013, message: 'invalid_request', status: 400 },
  not_supported_meta_id: { code: 7014, message: 'not_supported_meta_id', status: 400 },
  unsupported_time_range: { code: 7015, message: 'no_supported_time_range_24h_7d_30d', status: 400 },
  unexpected: { code: 6001, message: 'error_while_validating_token', status: 500 },
  // A failed disk write (the spec's 6001 for writes) with a message that says what happened.
  storage_full: { code: 6001, message: 'error_storage_full', status: 500 },
  storage_failed: { code: 6001, message: 'error_storage_write_failed', status: 500 },
  latest_failed: { code: 6002, message: 'error_retrieving_latest_heart_rate', status: 500 },
  invalid_response_mode: { code: 6004, message: 'error_invalid_response_mode', status: 422 },
  // hr-relay's own codes (not in the specification), documented in the README.
  not_found: { code: 9404, message: 'not_found', status: 404 },
  method_not_allowed: { code: 9405, message: 'method_not_allowed', status: 405 },
  no_heart_rate_data: { code: 9412, message: 'no_heart_rate_data', status: 412 },
  payload_too_large: { code: 9413, message: 'payload_too_large', status: 413 },
  rate_limited: { code: 9429, message: 'too_many_requests', status: 429 },
  forbidden: { code: 9403, message: 'forbidden', status: 403 },
  consent_required: { code: 9451, message: 'consent_required', status: 403 },
  conflict: { code: 9409, message: 'conflict', status: 409 },
  request_timeout: { code: 9408, message: 'request_timeout', status: 408 },
  upgrade_required: { code: 9426, message: 'upgrade_required', status: 426 },
  headers_too_large: { code: 9431, message: 'request_header_fields_too_large', status: 431 },
  storage_busy: { code: 9503, message: 'storage_busy', status: 503 }
} as const satisfies Record<string, ApiErrorDef>

export type ApiErrorName = keyof typeof API_ERRORS

export class ApiError extends Error {
  readonly code: number
  readonly status: number
  readonly errorMessage: string
  /** Extra detail for logs and the admin API; never sent for auth errors. */
  readonly detail?: string

  constructor (name: ApiErrorName, options?: { detail?: string, status?: number, cause?: unknown }) {
    const def: ApiErrorDef = API_ERRORS[name]
    super(options?.detail ?? def.message, { cause: options?.cause })
    this.name = 'ApiError'
    this.code = def.code
    this.status = options?.status ?? def.status
    this.errorMessage = def.message
    if (options?.detail !== undefined) this.detail = options.detail
  }

  /** The specification's error body; `detail` (hr-relay's addition) only where one was given on purpose. */
  body (): { error_code: number, error_message: string, detail?: string } {
    return this.detail === undefined
      ? { error_code: this.code, error_message: this.errorMessage }
      : { error_code: this.code, error_message: this.errorMessage, detail: this.detail }
  }
}

/** RFC 6749 section 5.2 error of the token endpoints. */
export class OAuthError extends Error {
  readonly error: string
  readonly description: string | null
  readonly status: number
  readonly headers: Record<string, string>

  constructor (error: string, description: string | null, status = 400, headers: Record<string, string> = {}) {
    super(description ?? error)
    this.name = 'OAuthError'
    this.error = error
    this.description = description
    this.status = status
    this.headers = headers
  }

  body (): { error: string, error_description: string | null } {
    return { error: this.error, error_description: this.description }
  }
}
