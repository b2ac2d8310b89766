// From ANT+ heart-rate data pages to readings: at most one reading per strap
// per second, carrying the computed heart rate and the RR intervals of the new
// beats since the last reading. Pure: the caller passes the time of each page.
// A strap broadcasts about four pages a second, and most repeat the last beat:
// while the heartbeat count stands still, nothing new is known, and no reading
// is made.
import { decodeHeartRatePage, type HeartRatePage } from './ant.ts'
import { RR_INTERVAL_MS, RR_MAX_COUNT } from './reading-contract.ts'

/** Event times wrap at 65536 / 1024 s: after a longer silence a difference of event times means nothing. */
export const EVENT_TIME_SPAN_MS = 64_000

export interface AntBeatsReading {
  heart_rate: number
  /** The RR intervals of the beats since the last reading, oldest first (empty when none could be computed). */
  rr_intervals_ms: number[]
  /** The strap's last reported battery level (data page 7), when it sent one. */
  battery_percent?: number
}

/** 1/1024 s ticks between two event times, across the 16-bit wrap. */
export function eventTimeDiff (later: number, earlier: number): number {
  return (later - earlier + 0x10000) & 0xffff
}

/** A tick count of 1/1024 s as whole milliseconds, or undefined outside the reading contract's RR range. */
function ticksToMs (ticks: number): number | undefined {
  const ms = Math.round(ticks * 1000 / 1024)
  return ms >= RR_INTERVAL_MS.min && ms <= RR_INTERVAL_MS.max ? ms : undefined
}

/** One strap's beats, fed page by page. */
export class AntHeartRateBeats {
  private last: { eventTime: number, beatCount: number, at: number } | undefined
  private rr: number[] = []
  private newBeats = 0
  private lastReadingAt: number | undefined
  /** The last battery level the strap sent (data page 7). */
  batteryPercent: number | undefined

  constructor (private readonly minIntervalMs = 1000) {}

  /** Feeds one 8-byte payload received at `now` (ms); returns a reading when one is due. Throws ProtocolError on a malformed page. */
  payload (bytes: Uint8Array, now: number): AntBeatsReading | undefined {
    return this.page(decodeHeartRatePage(bytes), now)
  }

  /** Feeds one decoded page received at `now` (ms); returns a reading when one is due. */
  page (p: HeartRatePage, now: number): AntBeatsReading | undefined {
    if (p.page === 7 && p.batteryPercent !== undefined && p.batteryPercent <= 100) this.batteryPercent = p.batteryPercent
    const last = this.last
    this.last = { eventTime: p.eventTime, beatCount: p.beatCount, at: now }
    if (last === undefined || now - last.at > EVENT_TIME_SPAN_MS) {
      // The first page heard (or the first after a long silence) says when the last beat was, not that it is new.
      this.rr = []
      this.newBeats = 0
      return undefined
    }
    const beats = (p.beatCount - last.beatCount + 0x100) & 0xff
    if (beats > 0) {
      this.newBeats += beats
      // One new beat: its RR is the difference of the two event times. More than one: the beats between were
      // missed and give nothing, but page 4 still gives the last beat's own RR from the previous event time.
      let ticks: number | undefined
      if (beats === 1) ticks = eventTimeDiff(p.eventTime, last.eventTime)
      else if (p.previousEventTime !== undefined) ticks = eventTimeDiff(p.eventTime, p.previousEventTime)
      const ms = ticks === undefined ? undefined : ticksToMs(ticks)
      if (ms !== undefined) {
        this.rr.push(ms)
        if (this.rr.length > RR_MAX_COUNT) this.rr.shift()
      }
    }
    if (this.newBeats === 0) return undefined
    if (this.lastReadingAt !== undefined && now - this.lastReadingAt < this.minIntervalMs) return undefined
    if (p.heartRate === 0) {
      // The strap says its computed rate is invalid: the beats are dropped with it.
      this.rr = []
      this.newBeats = 0
      return undefined
    }
    const reading: AntBeatsReading = { heart_rate: p.heartRate, rr_intervals_ms: this.rr }
    if (this.batteryPercent !== undefined) reading.battery_percent = this.batteryPercent
    this.rr = []
    this.newBeats = 0
    this.lastReadingAt = now
    return reading
  }
}
