// The live hub: in-process fan-out of stored readings, keyed by profile and by
// room, plus an "all readings" feed for outputs (MQTT user topics, MIDI,
// upstream bridge). Delivery is synchronous and each subscriber is called in a
// try/catch: a subscriber must only enqueue (a WebSocket send, a bounded
// queue), never block. Slow consumers are bounded where they buffer (the
// WebSocket streams close a client whose send buffer passes a bound), so the
// pipeline never waits for a subscriber.
import type { Logger } from 'pino'
import type { StoredReading } from './pipeline/reading.ts'
import type { ClassView } from './classes/types.ts'

/** The kinds of the Pulsoid-compatible room stream (spec 4.7). */
export const ROOM_KINDS = ['heart_rate', 'room_member_updated', 'room_member_removed', 'room_updated'] as const
/** hr-relay's own kinds, sent only to the operator's display stream (/rooms/:room_id/stream). */
export const DISPLAY_ONLY_KINDS = ['room_class'] as const
/** The kinds a display stream may ask for. */
export const DISPLAY_KINDS = [...ROOM_KINDS, ...DISPLAY_ONLY_KINDS] as const
export type RoomKind = typeof DISPLAY_KINDS[number]

/** `config` of room_member_updated (hr-relay's definition; docs/api.md "Heart-rate endpoints"). */
export interface MemberConfig {
  display_name: string
  /** The member's maximum heart rate (bpm), null when unknown. */
  max_heart_rate: number | null
  /** Lower bounds of heart-rate zones 1-5 in percent of max_heart_rate. */
  zones: number[]
  /** Sent when the member hides from room displays (true) or comes back (false); absent otherwise. */
  paused?: boolean
}

/** `config` of room_updated. */
export interface RoomConfig { name: string }

export type RoomMessage =
  | { kind: 'heart_rate', timestamp: string, heart_rate: { profile_id: string, bpm: number } }
  | { kind: 'room_member_updated', timestamp: string, room_member_updated: { profile_id: string, config: MemberConfig } }
  | { kind: 'room_member_removed', timestamp: string, room_member_removed: { profile_id: string } }
  | { kind: 'room_updated', timestamp: string, room_updated: { room_id: string, config: RoomConfig } }
  /** The room's class (api/classes/engine.ts): the running class, its results, or null once they are no longer shown. */
  | { kind: 'room_class', timestamp: string, room_class: ClassView | null }

export type ReadingListener = (reading: StoredReading) => void
export type RoomListener = (message: RoomMessage) => void

export interface HubOptions {
  log?: Logger
  /** Rooms a profile is a member of (the rooms store keeps this index in memory). */
  roomsOf?: (profileId: string) => Iterable<string>
}

export interface HubCounters { published: number, delivered: number, listenerErrors: number }

/** Counters of the WebSocket streams fed by the hub (api/http/stream-socket.ts). */
export interface StreamCounters {
  open: number
  opened: number
  slow_disconnects: number
  ping_timeouts: number
  /** bufferedAmount of the last client closed for being slow (bytes). */
  last_slow_buffered_bytes: number
}

export class Hub {
  private readonly byProfile = new Map<string, Set<ReadingListener>>()
  private readonly byRoom = new Map<string, Set<RoomListener>>()
  private readonly all = new Set<ReadingListener>()
  private roomsOf: (profileId: string) => Iterable<string>
  private readonly log: Logger | undefined
  readonly counters: HubCounters = { published: 0, delivered: 0, listenerErrors: 0 }
  readonly streams: StreamCounters = { open: 0, opened: 0, slow_disconnects: 0, ping_timeouts: 0, last_slow_buffered_bytes: 0 }

  constructor (options: HubOptions = {}) {
    this.log = options.log
    this.roomsOf = options.roomsOf ?? (() => [])
  }

  /** Sets the room index (the rooms store is built after the hub). */
  setRoomIndex (roomsOf: (profileId: string) => Iterable<string>): void {
    this.roomsOf = roomsOf
  }

  subscribeProfile (profileId: string, fn: ReadingListener): () => void {
    return add(this.byProfile, profileId, fn)
  }

  subscribeRoom (roomId: string, fn: RoomListener): () => void {
    return add(this.byRoom, roomId, fn)
  }

  /** Every stored reading of every profile (for outputs). */
  subscribeAll (fn: ReadingListener): () => void {
    this.all.add(fn)
    return () => { this.all.delete(fn) }
  }

  profileSubscribers (profileId: string): number { return this.byProfile.get(profileId)?.size ?? 0 }
  roomSubscribers (roomId: string): number { return this.byRoom.get(roomId)?.size ?? 0 }

  /** Called by the pipeline after a reading is durably stored and acknowledged. */
  publishReading (reading: StoredReading): void {
    this.counters.published++
    const listeners = this.byProfile.get(reading.profile_id)
    if (listeners !== undefined) for (const fn of [...listeners]) this.call(fn, reading)
    for (const fn of [...this.all]) this.call(fn, reading)
    let message: RoomMessage | undefined
    for (const roomId of this.roomsOf(reading.profile_id)) {
      const subs = this.byRoom.get(roomId)
      if (subs === undefined || subs.size === 0) continue
      message ??= {
        kind: 'heart_rate',
        timestamp: new Date(reading.measured_at).toISOString(),
        heart_rate: { profile_id: reading.profile_id, bpm: reading.heart_rate }
      }
      for (const fn of [...subs]) this.call(fn, message)
    }
  }

  publishRoomEvent (roomId: string, message: RoomMessage): void {
    const subs = this.byRoom.get(roomId)
    if (subs === undefined) return
    for (const fn of [...subs]) this.call(fn, message)
  }

  private call<T> (fn: (v: T) => void, value: T): void {
    try {
      fn(value)
      this.counters.delivered++
    } catch (err) {
      this.counters.listenerErrors++
      this.log?.error({ err }, 'hub listener failed')
    }
  }
}

function add<F> (map: Map<string, Set<F>>, key: string, fn: F): () => void {
  let set = map.get(key)
  if (set === undefined) { set = new Set(); map.set(key, set) }
  set.add(fn)
  return () => {
    const s = map.get(key)
    if (s === undefined) return
    s.delete(fn)
    if (s.size === 0) map.delete(key)
  }
}
