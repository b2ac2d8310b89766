// The simulator's one error table. Every failure the simulator reports to its
// user (a bad scenario file, a recording that does not parse, an option out of
// range, a transport it cannot start) is a SimError with a stable code.

export const SIM_ERRORS = {
  bad_option: 'an option is missing or out of range',
  bad_scenario: 'the scenario file does not match device-sim/scenarios/scenario.schema.json',
  bad_recording: 'the recorded session does not parse',
  transport_unavailable: 'the transport cannot be started here',
  admin_failed: 'the admin API refused a request'
} as const

export type SimErrorCode = keyof typeof SIM_ERRORS

export class SimError extends Error {
  readonly code: SimErrorCode
  constructor (code: SimErrorCode, detail: string, options?: { cause?: unknown }) {
    super(`${SIM_ERRORS[code]}: ${detail}`, options)
    this.name = 'SimError'
    this.code = code
  }
}
