// A member's switches as every user store answers them synchronously, from memory (api/store/users.ts on LevelDB,
// hub/store/pg-users.ts on PostgreSQL): hidden from room displays, ingestion paused, the consent in force. The room
// streams and the ingest pipeline ask for every reading, so the store feeds this memory each user record it holds.
import type { RoomHidden, UserRecord } from './records.ts'

/** The member's consent in force: the last one given, unless it was withdrawn. */
export function activeConsent (u: UserRecord): NonNullable<UserRecord['consents']>[number] | undefined {
  const last = u.consents?.[u.consents.length - 1]
  return last === undefined || last.withdrawn_at !== undefined ? undefined : last
}

export function roomHiddenNow (hidden: RoomHidden | undefined, now = Date.now()): boolean {
  return hidden !== undefined && (hidden.until === null || hidden.until > now)
}

export class MemberSwitches {
  /** room_hidden of every user that has one. */
  private readonly hidden = new Map<string, RoomHidden>()
  /** ingestion_paused of every user that has one. */
  private readonly paused = new Map<string, RoomHidden>()
  /** The notice version of every member's consent in force (given, not withdrawn). */
  private readonly consented = new Map<string, string>()

  /** Memory holds the switches of `u` as the record of `profileId` (undefined: no such member any more). */
  index (profileId: string, u: UserRecord | undefined): void {
    if (u?.room_hidden === undefined) this.hidden.delete(profileId)
    else this.hidden.set(profileId, u.room_hidden)
    if (u?.ingestion_paused === undefined) this.paused.delete(profileId)
    else this.paused.set(profileId, u.ingestion_paused)
    const consent = u === undefined ? undefined : activeConsent(u)
    if (consent === undefined) this.consented.delete(profileId)
    else this.consented.set(profileId, consent.version)
  }

  /** Forgets every member's switches (before they are loaded again). */
  clear (): void {
    this.hidden.clear()
    this.paused.clear()
    this.consented.clear()
  }

  /** The members memory holds a switch of. */
  held (): Set<string> {
    return new Set([...this.hidden.keys(), ...this.paused.keys(), ...this.consented.keys()])
  }

  /** The notice version the member consented to and has not withdrawn. */
  consentVersion (profileId: string): string | undefined {
    return this.consented.get(profileId)
  }

  /**
   * Whether room displays show the member as paused now: the member hides from room displays, or paused ingestion
   * (no readings flow, so displays say "paused" rather than go stale).
   */
  roomHidden (profileId: string, now = Date.now()): boolean {
    return roomHiddenNow(this.hidden.get(profileId), now) || this.ingestionPaused(profileId, now)
  }

  /**
   * Since when room displays may show the member's readings: the end of their last hidden period (shown again, or
   * a timed hide that ran out), 0 when they never hid. A reading measured before it is never shown on a display,
   * so showing oneself again does not reveal the bpm, trend or calories of the hidden time.
   */
  roomVisibleSince (profileId: string, now = Date.now()): number {
    const h = this.hidden.get(profileId)
    return h === undefined || h.until === null || h.until > now ? 0 : h.until
  }

  /** Until when displays show the member as paused: null for "until turned off" (or not paused). */
  roomPausedUntil (profileId: string, now = Date.now()): number | null {
    const active = [this.hidden.get(profileId), this.paused.get(profileId)].filter(h => roomHiddenNow(h, now))
    if (active.length === 0 || active.some(h => h?.until == null)) return null
    return Math.max(...active.map(h => h?.until ?? 0))
  }

  /** Whether the member's ingestion is paused now. */
  ingestionPaused (profileId: string, now = Date.now()): boolean {
    return roomHiddenNow(this.paused.get(profileId), now)
  }

  /** The member's ingestion pause as the API shows it. */
  ingestionPause (profileId: string, now = Date.now()): { paused: boolean, until: number | null } {
    const p = this.paused.get(profileId)
    return roomHiddenNow(p, now) ? { paused: true, until: p?.until ?? null } : { paused: false, until: null }
  }
}
