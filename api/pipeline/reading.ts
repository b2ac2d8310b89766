// The one reading value every source produces and the ingest pipeline takes.
// See docs/architecture.md "One process, one pipeline": BLE, serial, MQTT and HTTP all hand this
// shape to `Ingest.submit`; nothing else writes readings to the store.

export type ReadingSource = 'http' | 'ble' | 'serial' | 'mqtt' | 'sim' | 'ant'

export interface Reading {
  /** Owner. Sources that know only a device leave it out; the pipeline resolves it from the pairing. */
  profile_id?: string
  /** BLE address, serial device id or MQTT device id. */
  device_id?: string
  /** Unix time in milliseconds. */
  measured_at: number
  /** Beats per minute. Zero or below is accepted and not stored (spec 8.2). */
  heart_rate: number
  source: ReadingSource
  rr_intervals_ms?: number[]
  energy_expended_kj?: number
  sensor_contact?: boolean
  battery_percent?: number
}

/**
 * Why a reading was not stored. `invalid`: outside the reading contract
 * (firmware-protocol/reading-contract.ts); `out_of_range`: measured_at older
 * than the raw retention or further ahead than data.max_clock_skew_ms
 * (docs/api.md "The reading contract"); `paused`: its member paused ingestion
 * (docs/api.md "Ingestion pause"); `no_consent`: consent is required
 * (privacy.require_consent) and its member has none for the current notice.
 */
export type DropReason = 'non_positive' | 'unpaired' | 'duplicate' | 'invalid' | 'unknown_profile' | 'out_of_range' | 'paused' | 'no_consent'

export const DROP_REASONS: readonly DropReason[] = ['non_positive', 'unpaired', 'duplicate', 'invalid', 'unknown_profile', 'out_of_range', 'paused', 'no_consent']

/**
 * The drops a source may still acknowledge (HTTP 200, MQTT PUBACK): a heart
 * rate of 0 or below (spec 8.2), a duplicate of a reading already stored
 * (a resent reading whose first acknowledgement was lost), and a reading of
 * a member who paused ingestion (withheld on purpose: resending it would not
 * store it either). Every other drop is refused: HTTP 400, no PUBACK (README
 * "QoS semantics").
 */
export const ACKNOWLEDGED_DROPS: readonly DropReason[] = ['non_positive', 'duplicate', 'paused']

/** True when a source must refuse (not acknowledge) a reading the pipeline answered with this result. */
export function isRefused (result: IngestResult): result is { status: 'dropped', reason: DropReason } {
  return result.status === 'dropped' && !ACKNOWLEDGED_DROPS.includes(result.reason)
}

export type IngestResult =
  | { status: 'stored', profile_id: string }
  | { status: 'dropped', reason: DropReason }

/**
 * The ingest entry point. `submit` resolves once the reading is durably
 * written (or dropped); only then may a source acknowledge its sender
 * (HTTP 200, MQTT PUBACK).
 */
export interface Ingest {
  submit (reading: Reading): Promise<IngestResult>
}

/** A reading as stored and fanned out to live subscribers. */
export interface StoredReading {
  profile_id: string
  measured_at: number
  heart_rate: number
  source: ReadingSource
  device_id?: string
  rr_intervals_ms?: number[]
  energy_expended_kj?: number
  sensor_contact?: boolean
}

/** A device a source can see, paired or not (for the operator's pairing list). */
export interface DeviceSighting {
  device_id: string
  source: ReadingSource
  name?: string
  rssi?: number
  battery_percent?: number
  connected: boolean
  /** The Bluetooth adapter a connected BLE strap is linked through. */
  adapter?: string
  seen_at: number
}
