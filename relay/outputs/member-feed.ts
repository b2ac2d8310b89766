// The readings of one member, named by username in the configuration, for an
// output (MIDI, OSC). It listens to the hub's all-readings feed and resolves
// the username to a profile lazily: a member created after the start is found
// on their first reading, without a restart. Usernames never change (the
// users store keeps its name index only at create), so a profile once found
// not to be this member is remembered and costs one Set lookup afterwards.
import type { Logger } from 'pino'
import type { Hub } from '../../api/hub.ts'
import type { StoredReading } from '../../api/pipeline/reading.ts'
import type { UserRecord } from '../../api/store/users.ts'

export interface MemberLookup {
  get (profileId: string): Promise<UserRecord | undefined>
  byUsername (username: string): Promise<UserRecord | undefined>
}

/** Readings of a profile held while its owner is looked up (only the member's first readings). */
const MAX_HELD = 16

function nameKey (username: string): string {
  return username.normalize('NFC').toLowerCase()
}

export class MemberFeed {
  private profileId: string | undefined
  private readonly others = new Set<string>()
  private readonly held = new Map<string, StoredReading[]>()
  private off: (() => void) | undefined
  private stopped = false

  constructor (
    private readonly hub: Pick<Hub, 'subscribeAll'>,
    private readonly users: MemberLookup,
    readonly username: string,
    private readonly deliver: (reading: StoredReading) => void,
    private readonly log?: Logger
  ) {}

  /** The member's profile id once known. */
  get profile (): string | undefined { return this.profileId }

  /** Subscribes, then looks the member up once (an absent member is no error). */
  async start (): Promise<void> {
    if (this.off !== undefined || this.stopped) return
    this.off = this.hub.subscribeAll(r => { this.onReading(r) })
    const user = await this.users.byUsername(this.username)
    if (user !== undefined && !this.stopped) this.found(user.profile_id)
  }

  stop (): void {
    this.stopped = true
    this.off?.()
    this.off = undefined
    this.held.clear()
  }

  private onReading (r: StoredReading): void {
    if (r.profile_id === this.profileId) { this.deliver(r); return }
    if (this.profileId !== undefined || this.others.has(r.profile_id)) return
    const held = this.held.get(r.profile_id)
    if (held !== undefined) {
      if (held.length < MAX_HELD) held.push(r)
      return
    }
    this.held.set(r.profile_id, [r])
    this.users.get(r.profile_id).then(user => {
      if (this.stopped) return
      if (user !== undefined && nameKey(user.username) === nameKey(this.username)) this.found(r.profile_id)
      else { this.others.add(r.profile_id); this.held.delete(r.profile_id) }
    }, (err: unknown) => {
      // Looked up again on the next reading.
      this.held.delete(r.profile_id)
      this.log?.warn({ err, username: this.username }, 'looking up a reading\'s owner failed')
    })
  }

  private found (profileId: string): void {
    if (this.profileId !== undefined) return
    this.profileId = profileId
    this.log?.info({ username: this.username, profile_id: profileId }, 'output member found')
    const held = this.held.get(profileId) ?? []
    this.held.clear()
    for (const r of held) this.deliver(r)
  }
}
