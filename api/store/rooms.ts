// Rooms (spec 2.9, 4.7): a named group of members whose readings and
// membership changes arrive over one WebSocket. The room id is a random GUID;
// `display_id` is a second random GUID, the operator's revocable capability
// for the read-only display stream (/rooms/<room_id>/stream?display_id=...).
// Every change publishes its room event to the hub. Rooms are few, so all of
// them are held in memory (loaded by load()) together with the index
// profile → rooms the hub uses to route heart_rate messages.
import type { Store, Sub } from './db.ts'
import { newToken, safeEqual } from './secrets.ts'
import { KeyedLock } from './lock.ts'
import type { MemberConfig, RoomConfig, RoomMessage } from '../hub.ts'

export const DEFAULT_ZONES = [50, 60, 70, 80, 90]

export interface MemberRecord {
  profile_id: string
  display_name: string
  max_heart_rate: number | null
  zones: number[]
  added_at: number
}

export interface RoomRecord {
  room_id: string
  name: string
  display_id: string
  created_at: number
  members: MemberRecord[]
}

export interface MemberInput { display_name?: string, max_heart_rate?: number | null, zones?: number[] }

export function memberConfig (m: MemberRecord): MemberConfig {
  return { display_name: m.display_name, max_heart_rate: m.max_heart_rate, zones: [...m.zones] }
}

export function roomConfig (r: RoomRecord): RoomConfig {
  return { name: r.name }
}

export type RoomPublisher = (roomId: string, message: RoomMessage) => void

export class Rooms {
  private readonly sub: Sub<RoomRecord>
  private readonly rooms = new Map<string, RoomRecord>()
  private readonly index = new Map<string, Set<string>>()
  private loaded = false
  private readonly changeListeners = new Set<(roomId: string) => void>()
  /** Every change of a room reads it, then writes it whole: one at a time per room (no lost updates). */
  private readonly lock = new KeyedLock()

  constructor (private readonly store: Store, private readonly publish: RoomPublisher = () => {}) {
    this.sub = store.sub<RoomRecord>('rooms')
  }

  async load (): Promise<void> {
    this.rooms.clear()
    this.index.clear()
    for await (const r of this.sub.values()) this.remember(r)
    this.loaded = true
  }

  /** Rooms a profile is a member of (for the hub). */
  roomsOf (profileId: string): Iterable<string> {
    return this.index.get(profileId) ?? []
  }

  get (roomId: string): RoomRecord | undefined {
    const r = this.rooms.get(roomId)
    return r === undefined ? undefined : structuredClone(r)
  }

  list (): RoomRecord[] {
    return [...this.rooms.values()].map(r => structuredClone(r)).sort((a, b) => a.created_at - b.created_at || a.name.localeCompare(b.name))
  }

  isMember (roomId: string, profileId: string): boolean {
    return this.index.get(profileId)?.has(roomId) === true
  }

  /** Checks a display capability in constant time. */
  displayAllowed (roomId: string, displayId: string): boolean {
    const r = this.rooms.get(roomId)
    return r !== undefined && typeof displayId === 'string' && safeEqual(displayId, r.display_id)
  }

  async create (name: string, now = Date.now()): Promise<RoomRecord> {
    const room: RoomRecord = { room_id: newToken(), name, display_id: newToken(), created_at: now, members: [] }
    await this.save(room)
    return structuredClone(room)
  }

  async rename (roomId: string, name: string): Promise<RoomRecord | undefined> {
    return await this.lock.run(roomId, async () => {
      const room = this.rooms.get(roomId)
      if (room === undefined) return undefined
      const next = { ...structuredClone(room), name }
      await this.save(next)
      this.publish(roomId, { kind: 'room_updated', timestamp: new Date().toISOString(), room_updated: { room_id: roomId, config: roomConfig(next) } })
      this.changed(roomId)
      return structuredClone(next)
    })
  }

  /** Adds a member or updates its config; publishes room_member_updated. */
  async upsertMember (roomId: string, profileId: string, input: MemberInput & { display_name: string }, now = Date.now()): Promise<MemberRecord | undefined> {
    return await this.lock.run(roomId, async () => {
      const room = this.rooms.get(roomId)
      if (room === undefined) return undefined
      const next = structuredClone(room)
      const existing = next.members.find(m => m.profile_id === profileId)
      const member: MemberRecord = {
        profile_id: profileId,
        display_name: input.display_name,
        max_heart_rate: input.max_heart_rate !== undefined ? input.max_heart_rate : existing?.max_heart_rate ?? null,
        zones: input.zones ?? existing?.zones ?? [...DEFAULT_ZONES],
        added_at: existing?.added_at ?? now
      }
      next.members = [...next.members.filter(m => m.profile_id !== profileId), member]
      await this.save(next)
      this.publish(roomId, { kind: 'room_member_updated', timestamp: new Date(now).toISOString(), room_member_updated: { profile_id: profileId, config: memberConfig(member) } })
      this.changed(roomId)
      return structuredClone(member)
    })
  }

  /** Removes a member; false when the room or member does not exist. Publishes room_member_removed. */
  async removeMember (roomId: string, profileId: string): Promise<boolean> {
    return await this.lock.run(roomId, async () => {
      const room = this.rooms.get(roomId)
      if (room === undefined || !room.members.some(m => m.profile_id === profileId)) return false
      const next = { ...structuredClone(room), members: room.members.filter(m => m.profile_id !== profileId).map(m => structuredClone(m)) }
      await this.save(next)
      this.publish(roomId, { kind: 'room_member_removed', timestamp: new Date().toISOString(), room_member_removed: { profile_id: profileId } })
      this.changed(roomId)
      return true
    })
  }

  /** Issues a new display capability; the old one stops working at once. */
  async rotateDisplay (roomId: string): Promise<RoomRecord | undefined> {
    return await this.lock.run(roomId, async () => {
      const room = this.rooms.get(roomId)
      if (room === undefined) return undefined
      const next = { ...structuredClone(room), display_id: newToken() }
      await this.save(next)
      this.changed(roomId)
      return structuredClone(next)
    })
  }

  get isLoaded (): boolean { return this.loaded }

  /** Called after every change of a room (streams re-check access); returns unsubscribe. */
  onChange (fn: (roomId: string) => void): () => void {
    this.changeListeners.add(fn)
    return () => { this.changeListeners.delete(fn) }
  }

  /** Tells open streams to re-check access (after the room event was published). */
  private changed (roomId: string): void {
    for (const fn of [...this.changeListeners]) fn(roomId)
  }

  private async save (room: RoomRecord): Promise<void> {
    await this.store.batch([{ type: 'put', sublevel: this.sub, key: room.room_id, value: room }], { sync: true })
    this.remember(room)
  }

  private remember (room: RoomRecord): void {
    const old = this.rooms.get(room.room_id)
    if (old !== undefined) for (const m of old.members) this.index.get(m.profile_id)?.delete(room.room_id)
    this.rooms.set(room.room_id, room)
    for (const m of room.members) {
      let set = this.index.get(m.profile_id)
      if (set === undefined) { set = new Set(); this.index.set(m.profile_id, set) }
      set.add(room.room_id)
    }
  }
}
