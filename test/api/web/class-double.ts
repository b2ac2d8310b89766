// A test double of the class engine (api/classes/types.ts ClassControl) for
// the display and coach page tests: it keeps each room's ClassView in memory,
// lets a test set members' points and alerts, and publishes every change to
// the room's display streams as the engine does, through the real
// Hub.publishRoomEvent (a `room_class` message).
import { ClassError, type ClassControl, type ClassMemberView, type ClassRecord, type ClassView } from '../../../api/classes/types.ts'
import type { Services } from '../../../api/services.ts'
import type { TestService } from '../../helpers/service.ts'

export class ClassDouble implements ClassControl {
  private readonly views = new Map<string, ClassView>()
  /** Each call the pages made: [method, roomId, ...args]. */
  readonly calls: unknown[][] = []

  constructor (private readonly services: Pick<Services, 'hub' | 'rooms'>, private readonly resultsMs = 120_000) {}

  /** Puts the double in the running service, where the pages read `uses.classes`. */
  static install (svc: TestService): ClassDouble {
    const double = new ClassDouble(svc.service.services)
    Object.assign(svc.service.services, { classes: double })
    return double
  }

  async start (roomId: string, o: { name?: string, minutes?: number }): Promise<ClassRecord> {
    this.calls.push(['start', roomId, o])
    const room = this.services.rooms.get(roomId)
    if (room === undefined) throw new ClassError('no_room', 'no such room')
    if (this.views.get(roomId)?.state === 'running') throw new ClassError('class_running', 'a class is already running in this room')
    const now = Date.now()
    const members: ClassMemberView[] = room.members.map(m => ({
      profile_id: m.profile_id, display_name: m.display_name, effort_points: 0, zone_minutes: [0, 0, 0, 0, 0], max_heart_rate: m.max_heart_rate ?? 190, alert: false, hidden: false
    }))
    const view: ClassView = {
      class_id: `class-${this.calls.length}`, room_id: roomId, name: o.name ?? 'Class', started_at: now, planned_end: now + (o.minutes ?? 45) * 60_000, ended_at: null, state: 'running', results_until: null, members
    }
    this.put(roomId, view)
    return { class_id: view.class_id, room_id: roomId, name: view.name, started_at: now, planned_end: view.planned_end, ended_at: null, hidden: [] }
  }

  async end (roomId: string): Promise<ClassRecord> {
    this.calls.push(['end', roomId])
    const v = this.views.get(roomId)
    if (v?.state !== 'running') throw new ClassError('no_class', 'no class is running in this room')
    const now = Date.now()
    this.put(roomId, { ...v, ended_at: now, state: 'results', results_until: now + this.resultsMs })
    return { class_id: v.class_id, room_id: roomId, name: v.name, started_at: v.started_at, planned_end: v.planned_end, ended_at: now, hidden: v.members.filter(m => m.hidden).map(m => m.profile_id) }
  }

  view (roomId: string): ClassView | null {
    return this.views.get(roomId) ?? null
  }

  async setHidden (roomId: string, profileId: string, hidden: boolean): Promise<ClassView> {
    this.calls.push(['setHidden', roomId, profileId, hidden])
    const v = this.views.get(roomId)
    if (v?.state !== 'running') throw new ClassError('no_class', 'no class is running in this room')
    if (!v.members.some(m => m.profile_id === profileId)) throw new ClassError('not_member', 'not a member of this class')
    return this.put(roomId, { ...v, members: v.members.map(m => m.profile_id === profileId ? { ...m, hidden } : m) })
  }

  hiddenFromDisplays (roomId: string, profileId: string): boolean {
    const v = this.views.get(roomId)
    return v?.state === 'running' && v.members.some(m => m.profile_id === profileId && m.hidden)
  }

  /** Changes members of the running class (points, zone minutes, alert), ranks them as the engine does, and publishes. */
  update (roomId: string, changes: Record<string, Partial<ClassMemberView>>): ClassView {
    const v = this.views.get(roomId)
    if (v === undefined) throw new Error('no class in the double')
    return this.put(roomId, { ...v, members: v.members.map(m => ({ ...m, ...(changes[m.profile_id] ?? {}) })) })
  }

  /** The results' time is up: the engine publishes null. */
  expire (roomId: string): void {
    this.views.delete(roomId)
    this.publish(roomId, null)
  }

  private put (roomId: string, view: ClassView): ClassView {
    // Ranked by effort points, highest first; ties by display name (ClassView.members).
    const members = [...view.members].sort((a, b) => b.effort_points - a.effort_points || a.display_name.localeCompare(b.display_name))
    const ranked = { ...view, members }
    this.views.set(roomId, ranked)
    this.publish(roomId, ranked)
    return ranked
  }

  private publish (roomId: string, view: ClassView | null): void {
    this.services.hub.publishRoomEvent(roomId, { kind: 'room_class', timestamp: new Date().toISOString(), room_class: view })
  }
}
