// The live state of devices, in memory only, as every device store keeps it (api/store/devices.ts,
// hub/store/pg-devices.ts): every paired device's, and a bounded list of unpaired devices seen in range.
import { normalizeDeviceId } from './device-pairing.ts'
import type { ReadingSource } from '../pipeline/reading.ts'
import type { DeviceState, Sighting } from './records.ts'
import type { DeviceSightings } from './types.ts'

/** Sightings of unpaired devices kept at most (the least recently seen are forgotten first); paired devices' states are always kept. */
export const MAX_SIGHTINGS = 512

export class DeviceSightingsMemory implements DeviceSightings {
  /** Live state of paired devices, one per pairing, updated in place (a reading of each device every second). */
  private readonly live = new Map<string, DeviceState>()
  /** Live state of unpaired devices, least recently seen first, at most MAX_SIGHTINGS. */
  private readonly strangers = new Map<string, DeviceState>()

  /** `isPaired` answers, from the store's memory, whether a (normalized) device id is paired. */
  constructor (private readonly isPaired: (id: string) => boolean) {}

  /** The device `id` was paired: what was seen of it before is kept. */
  paired (id: string): void {
    const seen = this.strangers.get(id)
    if (seen !== undefined) { this.strangers.delete(id); this.live.set(id, seen) }
  }

  /** The device `id` was unpaired: its state is kept as an unpaired device's. */
  unpairedNow (id: string): void {
    const seen = this.live.get(id)
    if (seen !== undefined) { this.live.delete(id); this.seenStranger(id, seen) }
  }

  /** A source saw a device (fed by `SourceSink.device` and by the broker). */
  sighting (s: Sighting): void {
    const id = normalizeDeviceId(s.device_id)
    if (this.isPaired(id)) {
      this.live.set(id, { ...this.live.get(id), ...dropUndefined(s), device_id: id })
      return
    }
    this.seenStranger(id, { ...this.strangers.get(id), ...dropUndefined(s), device_id: id })
  }

  /** An unpaired device's state, moved to the newest end; the least recently seen beyond MAX_SIGHTINGS are forgotten. */
  private seenStranger (id: string, state: DeviceState): void {
    this.strangers.delete(id)
    this.strangers.set(id, state)
    while (this.strangers.size > MAX_SIGHTINGS) {
      const oldest = this.strangers.keys().next().value
      if (oldest === undefined) break
      this.strangers.delete(oldest)
    }
  }

  /**
   * A device sent a reading (stored or not): remembered as its last reading. This runs for every reading, so a
   * paired device's state is updated in place: no new object and no reordering of the map (which made V8 rebuild
   * a 2,000-entry table every few dozen readings at 2,000 devices).
   */
  readingSeen (deviceId: string, source: ReadingSource, reading: { heart_rate: number, measured_at: number, battery_percent?: number }, now = Date.now()): void {
    const id = normalizeDeviceId(deviceId)
    const paired = this.isPaired(id)
    const state = paired ? this.live.get(id) : this.strangers.get(id)
    if (state === undefined) {
      this.sighting({ device_id: id, source, connected: true, seen_at: now, ...(reading.battery_percent === undefined ? {} : { battery_percent: reading.battery_percent }) })
    } else {
      if (!paired) this.seenStranger(id, state)
      state.source = source
      state.seen_at = now
      if (reading.battery_percent !== undefined) state.battery_percent = reading.battery_percent
    }
    const current = this.stateOf(id)
    if (current === undefined) return
    const last = current.last_reading
    if (last === undefined) current.last_reading = { heart_rate: reading.heart_rate, measured_at: reading.measured_at }
    else { last.heart_rate = reading.heart_rate; last.measured_at = reading.measured_at }
  }

  stateOf (deviceId: string): DeviceState | undefined {
    const id = normalizeDeviceId(deviceId)
    return this.live.get(id) ?? this.strangers.get(id)
  }

  /** Devices seen but not paired, most recently seen first. */
  unpaired (): DeviceState[] {
    return [...this.strangers.values()].sort((a, b) => b.seen_at - a.seen_at)
  }
}

function dropUndefined<T extends object> (o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T
}

/** Straps heard within this long count for "nearest the box" (longer than the BLE source's default rescan of 5 s). */
export const NEAREST_FRESH_MS = 15_000
/** The nearest strap's signal beats every other strap heard as recently by at least this much... */
export const NEAREST_MARGIN_DB = 10
/** ...and is at least this strong (a strap held at the box; one across the room is weaker). */
export const NEAREST_MIN_RSSI = -75

/** An unpaired device in range, and whether it is the one clearly nearest the box. */
export interface NearbyDevice extends DeviceState { nearest: boolean }

/**
 * Unpaired devices strongest signal first (those whose source gives no signal strength after, most recently seen
 * first), the one clearly nearest marked: heard within NEAREST_FRESH_MS, at NEAREST_MIN_RSSI or stronger, and
 * NEAREST_MARGIN_DB stronger than every other device with a known signal heard within NEAREST_FRESH_MS. A device of
 * unknown signal is never marked and does not count against another.
 */
export function nearbyUnpaired (states: readonly DeviceState[], now: number): NearbyDevice[] {
  const sorted = [...states].sort((a, b) => (b.rssi ?? -Infinity) - (a.rssi ?? -Infinity) || b.seen_at - a.seen_at)
  const fresh = sorted.filter(s => s.rssi !== undefined && now - s.seen_at <= NEAREST_FRESH_MS)
  const [top, next] = fresh
  const nearest = top?.rssi !== undefined && top.rssi >= NEAREST_MIN_RSSI && (next?.rssi === undefined || top.rssi - next.rssi >= NEAREST_MARGIN_DB) ? top.device_id : undefined
  return sorted.map(s => ({ ...s, nearest: s.device_id === nearest }))
}
