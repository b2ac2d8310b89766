// The simulator's one error table. Every failure the simulator reports to its
// user (a bad scenario file, a recording that does not parse, an option out of
// range, a transport it cannot start) is a SimError with a stable code
// (AdminHttpError is the SimError of a refused admin request). The README's
// "Internal error codes" table lists them (test/errors-codes.test.ts).
import type { ErrorCodeDef } from '../firmware-protocol/errors.ts'

export const SIM_ERRORS = {
  bad_option: 'an option is missing or out of range',
  bad_scenario: 'the scenario file does not match device-sim/scenarios/scenario.schema.json',
  bad_recording: 'the recorded session does not parse',
  transport_unavailable: 'the transport cannot be started here',
  admin_failed: 'the admin API refused a request'
} as const

export type SimErrorCode = keyof typeof SIM_ERRORS

/** This layer's table in the shape every layer's has. */
export const SIM_ERROR_CODES: Record<SimErrorCode, ErrorCodeDef> = Object.fromEntries(
  Object.entries(SIM_ERRORS).map(([code, message]) => [code, { class: code === 'admin_failed' ? 'AdminHttpError' : 'SimError', message: `${message}: {detail}` }])
) as Record<SimErrorCode, ErrorCodeDef>

export class SimError extends Error {
  readonly code: SimErrorCode
  constructor (code: SimErrorCode, detail: string, options?: { cause?: unknown }) {
    super(`${SIM_ERRORS[code]}: ${detail}`, options)
    this.name = 'SimError'
    this.code = code
  }
}
