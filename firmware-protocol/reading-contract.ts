// The reading contract: the one set of limits every codec (BLE, serial, MQTT,
// HTTP write) and the ingest pipeline apply to a heart-rate reading. A value a
// codec accepts is one the pipeline stores, so a source never acknowledges a
// reading that is then thrown away (docs/mqtt-and-firmware.md "QoS semantics"). Pure: no I/O.
// Documented in docs/api.md ("Heart-rate endpoints", "The reading contract") and
// firmware-protocol/README.md; a test keeps the tables and these numbers equal.

/** Beats per minute. Values <= 0 are accepted and not stored (spec 8.2); device wire formats are unsigned. */
export const HEART_RATE = { min: 0, max: 300 } as const
/** RR intervals: at most this many per reading, each an integer in ms. */
export const RR_MAX_COUNT = 64
export const RR_INTERVAL_MS = { min: 1, max: 65535 } as const
/** Energy expended since the last reset, kJ (BLE HRS §3.1.1.4 UINT16). */
export const ENERGY_KJ = { min: 0, max: 65535 } as const
/** Battery level, percent (BAS v1.0 §3.1). */
export const BATTERY_PERCENT = { min: 0, max: 100 } as const
/** Absolute measured_at bounds, Unix ms: 2000-01-01T00:00:00Z to the largest 13-digit storage key. */
export const MEASURED_AT = { min: 946_684_800_000, max: 9_999_999_999_999 } as const
/**
 * Default device clock skew allowance (config data.max_clock_skew_ms): a reading at most this far ahead of the
 * relay's clock is stored at the relay's receive time; one further ahead is refused (docs/api.md "The reading contract").
 */
export const DEFAULT_MAX_CLOCK_SKEW_MS = 30_000

const DAY_MS = 86_400_000

export interface MeasuredAtWindowOptions {
  /** The relay's clock, Unix ms. */
  now: number
  /** Raw-reading retention in days: an older reading would be pruned at once. */
  rawRetentionDays: number
  /** How far ahead of now a reading may be (default DEFAULT_MAX_CLOCK_SKEW_MS); the pipeline stores such a reading at now. */
  maxClockSkewMs?: number
}

/** The measured_at values accepted now: the absolute bounds narrowed to retention and the clock skew allowance. */
export function measuredAtWindow (o: MeasuredAtWindowOptions): { min: number, max: number } {
  return {
    min: Math.max(MEASURED_AT.min, o.now - o.rawRetentionDays * DAY_MS),
    max: Math.min(MEASURED_AT.max, o.now + (o.maxClockSkewMs ?? DEFAULT_MAX_CLOCK_SKEW_MS))
  }
}

/** The reading fields the contract covers; anything else about a reading is the source's business. */
export interface ContractFields {
  measured_at: unknown
  heart_rate: unknown
  rr_intervals_ms?: unknown
  energy_expended_kj?: unknown
  sensor_contact?: unknown
  battery_percent?: unknown
}

/** Which field broke the contract (a JSON Pointer) and how. */
export interface ContractViolation {
  path: string
  message: string
}

function intIn (value: unknown, range: { min: number, max: number }): boolean {
  return typeof value === 'number' && Number.isInteger(value) && value >= range.min && value <= range.max
}

function range (r: { min: number, max: number }): string { return `an integer ${r.min}..${r.max}` }

/**
 * Checks a reading's values against the contract; undefined when they keep
 * it. heart_rate may also be negative (accepted, not stored, spec 8.2);
 * measured_at may have a fraction of a ms (truncated when stored) and must
 * lie within `window` when one is given (else the absolute bounds).
 */
export function checkReading (r: ContractFields, window: { min: number, max: number } = MEASURED_AT): ContractViolation | undefined {
  const t = r.measured_at
  if (typeof t !== 'number' || !Number.isFinite(t)) return { path: '/measured_at', message: 'must be a number (Unix ms)' }
  if (Math.floor(t) < window.min || Math.floor(t) > window.max) return { path: '/measured_at', message: `must be between ${window.min} and ${window.max}` }
  const hr = r.heart_rate
  if (typeof hr !== 'number' || !Number.isInteger(hr) || hr > HEART_RATE.max) return { path: '/heart_rate', message: `must be an integer at most ${HEART_RATE.max}` }
  if (r.rr_intervals_ms !== undefined) {
    const rr = r.rr_intervals_ms
    if (!Array.isArray(rr)) return { path: '/rr_intervals_ms', message: 'must be an array' }
    if (rr.length > RR_MAX_COUNT) return { path: '/rr_intervals_ms', message: `must have at most ${RR_MAX_COUNT} items` }
    for (let i = 0; i < rr.length; i++) {
      if (!intIn(rr[i], RR_INTERVAL_MS)) return { path: `/rr_intervals_ms/${i}`, message: `must be ${range(RR_INTERVAL_MS)}` }
    }
  }
  if (r.energy_expended_kj !== undefined && !intIn(r.energy_expended_kj, ENERGY_KJ)) return { path: '/energy_expended_kj', message: `must be ${range(ENERGY_KJ)}` }
  if (r.sensor_contact !== undefined && typeof r.sensor_contact !== 'boolean') return { path: '/sensor_contact', message: 'must be a boolean' }
  if (r.battery_percent !== undefined && !intIn(r.battery_percent, BATTERY_PERCENT)) return { path: '/battery_percent', message: `must be ${range(BATTERY_PERCENT)}` }
  return undefined
}

/** The contract as the table in the READMEs shows it (a test compares the two). */
export const CONTRACT_TABLE: ReadonlyArray<readonly [field: string, limit: string]> = [
  ['measured_at', `Unix ms, ${MEASURED_AT.min}..${MEASURED_AT.max}; not older than the raw retention, at most \`data.max_clock_skew_ms\` (default ${DEFAULT_MAX_CLOCK_SKEW_MS / 1000} s) ahead, stored at the relay's receive time when ahead`],
  ['heart_rate', `integer, at most ${HEART_RATE.max}; devices send ${HEART_RATE.min}..${HEART_RATE.max}; 0 or below is accepted and not stored`],
  ['rr_intervals_ms', `at most ${RR_MAX_COUNT} values, each an integer ${RR_INTERVAL_MS.min}..${RR_INTERVAL_MS.max}`],
  ['energy_expended_kj', `integer ${ENERGY_KJ.min}..${ENERGY_KJ.max}`],
  ['battery_percent', `integer ${BATTERY_PERCENT.min}..${BATTERY_PERCENT.max}`]
]
