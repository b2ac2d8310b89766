// Class mode (issue 43): the shapes that the class engine, the room display,
// the coach page and the API share. A class belongs to one room; while it runs
// the display and the coach page follow its live view, and when it ends every
// member who took part gets a summary.

/** One class of a room, as stored (api/store/classes.ts) and as the CLI prints it with --json. */
export interface ClassRecord {
  class_id: string
  room_id: string
  name: string
  /** ms since the epoch. */
  started_at: number
  /** When the class ends by itself (ms): started_at + its planned minutes. */
  planned_end: number
  /** When it ended (ms), null while it runs. */
  ended_at: number | null
  /** Members the coach hid from the display for this class. */
  hidden: string[]
}

/** One completed minute of a member in a class (minute 0 starts at started_at). */
export interface ClassMinute {
  minute: number
  /** Average bpm of the minute's readings, null when the minute has none. */
  avg_bpm: number | null
  /** Zone 0..5 of avg_bpm (0: below zone 1 or no readings). */
  zone: number
  /** 0 below zone 1 or without readings, 1..3 in zones 1..3, 4 in zones 4 and 5. */
  points: number
}

/** A member's live state in a running class (the display's and coach page's tile data). */
export interface ClassMemberView {
  profile_id: string
  display_name: string
  /** Effort points of the completed minutes so far. */
  effort_points: number
  /** Completed minutes whose average fell in zones 1..5 (index 0 is zone 1). */
  zone_minutes: [number, number, number, number, number]
  /** The maximum used for zones in this class. */
  max_heart_rate: number
  /** At or above 95 % of max_heart_rate for the last 60 s. */
  alert: boolean
  /** The coach hid this member from the display for this class (the coach page still shows them). */
  hidden: boolean
}

/** What the display and the coach page show: the running class, or its results after it ended. */
export interface ClassView extends Omit<ClassRecord, 'hidden'> {
  /** running: the class is on; results: it ended and the display shows the results until results_until. */
  state: 'running' | 'results'
  results_until: number | null
  /** Ranked by effort points, highest first; ties by display name. */
  members: ClassMemberView[]
}

/** A member's summary of one class (GET /api/v1/classes, /me, the member's export). */
export interface ClassSummary {
  class_id: string
  room_id: string
  name: string
  started_at: number
  ended_at: number
  duration_s: number
  /** null when the member sent no reading during the class. */
  avg_bpm: number | null
  max_bpm: number | null
  /** Seconds in zones 1..5, as sessions count them. */
  zones_s: [number, number, number, number, number]
  calories_kcal: number
  effort_points: number
  /** 1 is the most effort points of the class. */
  rank: number
  /** How many members were ranked. */
  ranked: number
  /** The maximum the zones were computed against. */
  max_heart_rate: number
}

/** A raised maximum (the user's max_heart_rate), kept with the time and the old value. */
export interface LearnedMax {
  at: number
  class_id: string
  old_bpm: number | null
  new_bpm: number
}

/** Why a class command was refused (the admin API maps these to 404 / 409). */
export class ClassError extends Error {
  constructor (readonly reason: 'no_room' | 'class_running' | 'no_class' | 'not_member', message: string) {
    super(message)
    this.name = 'ClassError'
  }
}

/**
 * What the admin API, the operator pages and the coach page use to run the
 * classes of the box's rooms (implemented by api/classes/engine.ts). Every
 * change publishes a `room_class` message to the room's display streams.
 */
export interface ClassControl {
  /** Starts a class in the room; ClassError('class_running') when one runs, ('no_room') when the room does not exist. */
  start (roomId: string, o: { name?: string, minutes?: number }): Promise<ClassRecord>
  /** Ends the room's running class now; ClassError('no_class') when none runs. */
  end (roomId: string): Promise<ClassRecord>
  /** The running class, or its results while they are shown; null otherwise. */
  view (roomId: string): ClassView | null
  /** Hides a member from the display for the running class (the coach page still shows them). */
  setHidden (roomId: string, profileId: string, hidden: boolean): Promise<ClassView>
  /** Whether the room's running class hides this member from displays: their readings do not go to display streams. */
  hiddenFromDisplays (roomId: string, profileId: string): boolean
}
