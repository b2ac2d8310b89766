// Builds the heart-rate data services (issue 3) for the composition root:
// readings store, live hub, ingest pipeline, widgets, game-mod configuration
// and rooms. The pipeline's retention timer is started here (unref'd); the
// caller stops the pipeline before closing the store.
import type { Logger } from 'pino'
import type { Store } from './store/db.ts'
import type { ReadingStore, UserStore } from './store/types.ts'
import type { ReadingLog } from './store/reading-log.ts'
import { Readings } from './store/readings.ts'
import { Widgets } from './store/widgets.ts'
import { GameMod } from './store/gamemod.ts'
import { Rooms } from './store/rooms.ts'
import { Hub } from './hub.ts'
import { Pipeline, type ConsentPolicy, type ResolveOwner } from './pipeline/ingest.ts'
import { ClassStore } from './store/classes.ts'
import { ClassEngine, type Clock } from './classes/engine.ts'

export interface DataServices {
  readings: ReadingStore
  pipeline: Pipeline
  hub: Hub
  widgets: Widgets
  gameMod: GameMod
  rooms: Rooms
  /** The classes of the rooms (api/classes/engine.ts); the caller stops it before closing the store. */
  classes: ClassEngine
  /** Stored classes, members' class summaries and learned maxima. */
  classStore: ClassStore
}

/** classes.* of the configuration. */
export interface ClassesConfig { learnMaxHeartRate: boolean, resultsSeconds: number }

export interface DataServicesOptions {
  store: Store
  users: UserStore
  log: Logger
  retention: { rawDays: number, rollupDays: number }
  streamGapSeconds: number
  /** Device pairing (default: none; device-only readings are dropped as 'unpaired'). */
  resolveOwner?: ResolveOwner
  pruneIntervalMs?: number
  /** data.max_clock_skew_ms (default: the reading contract's). */
  maxClockSkewMs?: number
  /** Where the pipeline writes groups of readings (default: the store's reading log; the service passes it timed). */
  readingLog?: ReadingLog
  /** privacy.require_consent / privacy.notice_version (default: consent not required). */
  consent?: ConsentPolicy
  /** classes.learn_max_heart_rate and classes.results_seconds (default: true, 120). */
  classes?: ClassesConfig
  /** The class engine's clock (tests). */
  clock?: Clock
}

export async function buildDataServices (o: DataServicesOptions): Promise<DataServices> {
  const readings = new Readings(o.store, { gapMs: o.streamGapSeconds * 1000, log: o.log.child({ component: 'readings' }) })
  const hub = new Hub({ log: o.log.child({ component: 'hub' }) })
  const rooms = new Rooms(o.store, (roomId, message) => { hub.publishRoomEvent(roomId, message) })
  await rooms.load()
  await o.users.loadRoomHidden()
  hub.setRoomIndex(profileId => rooms.roomsOf(profileId))
  const pipeline = new Pipeline({
    readingLog: o.readingLog ?? o.store.readingLog,
    readings,
    hub,
    users: o.users,
    retention: o.retention,
    log: o.log.child({ component: 'ingest' }),
    ...(o.resolveOwner === undefined ? {} : { resolveOwner: o.resolveOwner }),
    ...(o.pruneIntervalMs === undefined ? {} : { pruneIntervalMs: o.pruneIntervalMs }),
    ...(o.maxClockSkewMs === undefined ? {} : { maxClockSkewMs: o.maxClockSkewMs }),
    ...(o.consent === undefined ? {} : { consent: o.consent }),
    storeSettled: async () => { await o.store.settled() }
  })
  pipeline.start()
  const classStore = new ClassStore(o.store)
  const classes = new ClassEngine({
    classes: classStore,
    rooms,
    users: o.users,
    readings,
    hub,
    log: o.log.child({ component: 'classes' }),
    // As the room display leaves them out: hidden from room displays, or without the consent required (consentMissing, api/web/member-consent.ts).
    offDisplay: profileId => o.users.roomHidden(profileId) || (o.consent?.required === true && o.users.consentVersion(profileId) !== o.consent.noticeVersion),
    learnMaxHeartRate: o.classes?.learnMaxHeartRate ?? true,
    resultsSeconds: o.classes?.resultsSeconds ?? 120,
    streamGapMs: o.streamGapSeconds * 1000,
    ...(o.clock === undefined ? {} : { clock: o.clock })
  })
  try {
    await classes.load()
  } catch (err) {
    await pipeline.stop()
    throw err
  }
  return { readings, pipeline, hub, widgets: new Widgets(o.store), gameMod: new GameMod(o.store), rooms, classes, classStore }
}
