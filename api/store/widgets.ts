// Widgets (spec 2.4, 4.3). The widget id is a random GUID (122 random bits):
// it is also the capability of the public overlay stream
// (/widgets/<widget_id>/stream), so it must be unguessable, and deleting the
// widget revokes that stream.
import type { Store, Sub } from './db.ts'
import { newToken } from './secrets.ts'
import { KeyedLock } from './lock.ts'
import { apiErrorMessage } from '../error-codes.ts'

/** The basic bpm widget, the only meta id the service supports (spec 4.3). */
export const BASIC_WIDGET_META_ID = 'bf6bdf21-10a7-4a28-97ec-a239e6c77f8b'
export const SUPPORTED_META_IDS: ReadonlySet<string> = new Set([BASIC_WIDGET_META_ID])
export const MAX_WIDGETS_PER_USER = 100

export interface WidgetRecord {
  id: string
  profile_id: string
  meta_id: string
  name: string
  configuration: unknown
  premium: boolean
  created_at: number
  updated_at: number
}

/** The widget as the API returns it (spec 2.4). */
export interface Widget { id: string, meta_id: string, name: string, configuration: unknown, premium: boolean }

export function publicWidget (w: WidgetRecord): Widget {
  return { id: w.id, meta_id: w.meta_id, name: w.name, configuration: w.configuration, premium: w.premium }
}

export class TooManyWidgetsError extends Error {
  readonly code = 'HR_TOO_MANY_WIDGETS'
  constructor () { super(apiErrorMessage('HR_TOO_MANY_WIDGETS', { max: MAX_WIDGETS_PER_USER })); this.name = 'TooManyWidgetsError' }
}

export class Widgets {
  private readonly byId: Sub<WidgetRecord>
  /** `profile!widget_id` → '' */
  private readonly byProfile: Sub<string>
  private readonly deleteListeners = new Set<(widgetId: string) => void>()
  /** Changes of one user's widgets run one at a time: the count limit holds, and no update outlives a delete. */
  private readonly lock = new KeyedLock()

  constructor (private readonly store: Store) {
    this.byId = store.sub<WidgetRecord>('widgets')
    this.byProfile = store.sub<string>('widgets_by_profile')
  }

  async create (profileId: string, input: { meta_id: string, name: string, configuration: unknown }, now = Date.now()): Promise<WidgetRecord> {
    return await this.lock.run(profileId, async () => {
      if ((await this.list(profileId)).length >= MAX_WIDGETS_PER_USER) throw new TooManyWidgetsError()
      const w: WidgetRecord = {
        id: newToken(),
        profile_id: profileId,
        meta_id: input.meta_id,
        name: input.name,
        configuration: input.configuration,
        // The basic bpm widget needs no premium plan.
        premium: input.meta_id !== BASIC_WIDGET_META_ID,
        created_at: now,
        updated_at: now
      }
      await this.store.batch([
        { type: 'put', sublevel: this.byId, key: w.id, value: w },
        { type: 'put', sublevel: this.byProfile, key: `${profileId}!${w.id}`, value: '' }
      ], { sync: true })
      return w
    })
  }

  /** A widget by id, whoever owns it (the overlay stream's capability check). */
  async get (widgetId: string): Promise<WidgetRecord | undefined> {
    if (typeof widgetId !== 'string' || widgetId.length === 0 || widgetId.length > 100) return undefined
    return await this.byId.get(widgetId)
  }

  async list (profileId: string): Promise<WidgetRecord[]> {
    const out: WidgetRecord[] = []
    for await (const k of this.byProfile.keys({ gt: `${profileId}!`, lt: `${profileId}!~` })) {
      const w = await this.byId.get(k.slice(profileId.length + 1))
      if (w !== undefined) out.push(w)
    }
    return out.sort((a, b) => a.created_at - b.created_at || a.id.localeCompare(b.id))
  }

  /** Updates the owner's widget; undefined when it does not exist or belongs to someone else. */
  async update (profileId: string, widgetId: string, change: { configuration: unknown, name?: string }, now = Date.now()): Promise<WidgetRecord | undefined> {
    return await this.lock.run(profileId, async () => {
      const w = await this.get(widgetId)
      if (w === undefined || w.profile_id !== profileId) return undefined
      const next: WidgetRecord = { ...w, configuration: change.configuration, updated_at: now }
      if (change.name !== undefined) next.name = change.name
      await this.store.batch([{ type: 'put', sublevel: this.byId, key: w.id, value: next }], { sync: true })
      return next
    })
  }

  /** Deletes (revokes) the owner's widget; false when not found. */
  async delete (profileId: string, widgetId: string): Promise<boolean> {
    return await this.lock.run(profileId, async () => {
      const w = await this.get(widgetId)
      if (w === undefined || w.profile_id !== profileId) return false
      await this.store.batch([
        { type: 'del', sublevel: this.byId, key: w.id },
        { type: 'del', sublevel: this.byProfile, key: `${profileId}!${w.id}` }
      ], { sync: true })
      for (const fn of [...this.deleteListeners]) fn(w.id)
      return true
    })
  }

  /** Called with the id of every deleted widget (open overlay streams close); returns unsubscribe. */
  onDeleted (fn: (widgetId: string) => void): () => void {
    this.deleteListeners.add(fn)
    return () => { this.deleteListeners.delete(fn) }
  }
}
