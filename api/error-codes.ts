// The api layer's table of internal error codes, in the manner of fastify's
// lib/errors.js. Every error class of api/ that is not an ApiError carries
// one of these as its `code` (its message is built from the template here),
// so that logs and callers name it by a stable code, never by its text.
// `api` names the API error (api/errors.ts) the error is answered with where
// it reaches an HTTP client. The docs/architecture.md "Internal error codes" table lists
// exactly these (test/errors-codes.test.ts).
import { errorMessage, type ErrorCodeDef } from '../firmware-protocol/errors.ts'
import type { ApiErrorName } from './errors.ts'

export const API_ERROR_CODES = {
  HR_DEVICE_EXISTS: { class: 'DeviceExistsError', message: 'device {id} is already paired', api: 'conflict' },
  HR_DEVICE_ID_INVALID: { class: 'InvalidDeviceIdError', message: 'device id {id} is not 1..64 of [A-Za-z0-9:_.-]', api: 'invalid_request' },
  HR_ANT_DEVICE_ID_INVALID: { class: 'InvalidAntDeviceIdError', message: 'ANT+ device id {id} is not ant:<device number 1..1048575>', api: 'invalid_request' },
  HR_USER_EXISTS: { class: 'UserExistsError', message: 'user {username} already exists', api: 'conflict' },
  HR_TOO_MANY_WIDGETS: { class: 'TooManyWidgetsError', message: 'at most {max} widgets per user', api: 'conflict' },
  HR_REDIRECT_URI_INVALID: { class: 'InvalidRedirectUriError', message: 'redirect URI {uri} is not acceptable: {why}', api: 'invalid_request' },
  HR_STORE_LOCKED: { class: 'StoreLockedError', message: 'the data directory {dir} is in use by another hr-relay process (LevelDB holds a lock on it); stop that process or pass another --data-dir' },
  HR_STORE_OPEN: { class: 'StoreOpenError', message: 'cannot open the data store in {dir}: {why}' },
  HR_DATA_DIR: { class: 'DataDirError', message: 'cannot use the data directory {dir}: {problem}: {path}' },
  HR_PIPELINE_STOPPED: { class: 'PipelineStoppedError', message: 'the ingest pipeline is stopped', api: 'unexpected' },
  HR_RAW_DECODE: { class: 'RawDecodeError', message: 'a stored raw reading does not decode: {detail}' }
} as const satisfies Record<string, ErrorCodeDef & { api?: ApiErrorName }>

export type ApiErrorCode = keyof typeof API_ERROR_CODES

/** The message of `code` with its placeholders filled. */
export function apiErrorMessage (code: ApiErrorCode, params?: Readonly<Record<string, string | number>>): string {
  return errorMessage(API_ERROR_CODES[code].message, params)
}
