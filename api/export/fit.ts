// FIT export of a session, written with Garmin's FIT JavaScript SDK
// (@garmin/fitsdk Encoder), laid out as the SDK's activity-file recipe: file
// id, timer start event, one record per reading (heart rate), HRV messages
// with the reading's RR intervals (seconds, at most 5 a message) after its
// record, timer stop event, one lap, one session, the activity. FIT
// timestamps are whole seconds (measured_at rounded down); sport is generic.
// The SDK is imported with the first FIT export (loadFitSdk), not when the
// service starts.
import type * as FitSdk from '@garmin/fitsdk'
import type { ActivityMesg, EventMesg, FileIdMesg, HrvMesg, LapMesg, Mesg, RecordMesg, SessionMesg } from '@garmin/fitsdk'
import type { SessionReading, SessionSummary } from '../sessions.ts'

const HRV_PER_MESSAGE = 5

/** The parts of the FIT SDK an export uses, imported on first use. */
async function loadFitSdk (): Promise<Pick<typeof FitSdk, 'Encoder' | 'Profile'>> {
  const { Encoder, Profile } = await import('@garmin/fitsdk')
  return { Encoder, Profile }
}

const second = (ms: number): Date => new Date(Math.floor(ms / 1000) * 1000)
/** FIT local_date_time: seconds since the FIT epoch (1989-12-31T00:00:00Z) in the server's time zone. */
const localSeconds = (ms: number): number => Math.floor((ms - FIT_EPOCH_MS) / 1000) - new Date(ms).getTimezoneOffset() * 60
const FIT_EPOCH_MS = 631_065_600_000
const u8 = (v: number): number => Math.min(254, Math.max(0, Math.round(v)))

export async function sessionFit (summary: SessionSummary, readings: readonly SessionReading[]): Promise<Uint8Array> {
  const { Encoder, Profile } = await loadFitSdk()
  const mesgNum = (name: string): number => {
    const n = Profile.MesgNum[name]
    if (n === undefined) throw new Error(`FIT profile has no message ${name}`)
    return n
  }
  const enc = new Encoder()
  const write = <T extends Mesg>(name: string, m: T): void => { enc.onMesg(mesgNum(name), m) }
  const start = second(summary.start)
  const end = second(summary.end)
  const elapsed = (summary.end - summary.start) / 1000
  write<FileIdMesg>('FILE_ID', { type: 'activity', manufacturer: 'development', product: 0, serialNumber: 1, timeCreated: start })
  write<EventMesg>('EVENT', { timestamp: start, event: 'timer', eventType: 'start' })
  for (const r of readings) {
    write<RecordMesg>('RECORD', { timestamp: second(r.measured_at), heartRate: u8(r.heart_rate) })
    const rr = r.rr_intervals_ms ?? []
    for (let i = 0; i < rr.length; i += HRV_PER_MESSAGE) {
      write<HrvMesg>('HRV', { time: rr.slice(i, i + HRV_PER_MESSAGE).map(ms => ms / 1000) })
    }
  }
  write<EventMesg>('EVENT', { timestamp: end, event: 'timer', eventType: 'stop' })
  const totals = {
    startTime: start,
    totalElapsedTime: elapsed,
    totalTimerTime: elapsed,
    avgHeartRate: u8(summary.avg),
    maxHeartRate: u8(summary.max),
    minHeartRate: u8(summary.min),
    totalCalories: Math.round(summary.kcal),
    sport: 'generic' as const,
    subSport: 'generic' as const
  }
  write<LapMesg>('LAP', { messageIndex: 0, timestamp: end, event: 'lap', eventType: 'stop', ...totals })
  write<SessionMesg>('SESSION', { messageIndex: 0, timestamp: end, event: 'session', eventType: 'stop', firstLapIndex: 0, numLaps: 1, ...totals })
  write<ActivityMesg>('ACTIVITY', { timestamp: end, numSessions: 1, type: 'manual', event: 'activity', eventType: 'stop', totalTimerTime: elapsed, localTimestamp: localSeconds(summary.end) })
  return enc.close()
}
