// Chat-app rich-presence configuration (scopes chatapp:rich_presence:config:read
// and :write, feature chatapp_rich_presence; the specification names them but
// shows no endpoint, so hr-relay defines it: docs/integrations.md "Rich presence"). Five typed keys, each nullable, under the rule of the
// game-mod configuration (api/store/gamemod.ts): a write replaces the whole
// object, and a key it leaves out is stored as null. Null means unset: the
// chat-app client applies its own default (RICH_PRESENCE_CLIENT_DEFAULTS
// suggests one). A user who never wrote one reads every key null.
import type { Store, Sub } from './db.ts'

/** Longest template or image text, in characters. */
export const RICH_PRESENCE_MAX_TEXT = 128

export interface RichPresenceConfig {
  /** Whether a chat-app client shows the presence at all. */
  enabled: boolean | null
  /** Whether the heart rate is part of the presence. */
  show_heart_rate: boolean | null
  /** First line of the presence; `{heart_rate}` stands for the current bpm. */
  details_template: string | null
  /** Second line of the presence; `{heart_rate}` stands for the current bpm. */
  state_template: string | null
  /** Tooltip of the large image. */
  large_image_text: string | null
}

/** What hr-relay suggests a client shows for a key that is null (documented; never stored). */
export const RICH_PRESENCE_CLIENT_DEFAULTS = Object.freeze({
  enabled: false,
  show_heart_rate: true,
  details_template: '{heart_rate} bpm',
  state_template: '',
  large_image_text: ''
})

export const RICH_PRESENCE_KEYS = Object.keys(RICH_PRESENCE_CLIENT_DEFAULTS) as Array<keyof RichPresenceConfig>

const text = { type: ['string', 'null'], maxLength: RICH_PRESENCE_MAX_TEXT } as const
const flag = { type: ['boolean', 'null'] } as const

/** JSON Schema of a written configuration: unknown keys, wrong types and long strings are refused; null is unset. */
export const RICH_PRESENCE_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  properties: {
    enabled: flag,
    show_heart_rate: flag,
    details_template: text,
    state_template: text,
    large_image_text: text
  }
} as const

/** The stored shape: every key, in the documented order, null for the missing. */
export function normalizeRichPresence (input: Partial<RichPresenceConfig>): RichPresenceConfig {
  return {
    enabled: input.enabled ?? null,
    show_heart_rate: input.show_heart_rate ?? null,
    details_template: input.details_template ?? null,
    state_template: input.state_template ?? null,
    large_image_text: input.large_image_text ?? null
  }
}

export class RichPresence {
  private readonly sub: Sub<RichPresenceConfig>

  constructor (private readonly store: Store) {
    this.sub = store.sub<RichPresenceConfig>('rich_presence')
  }

  /** The user's configuration; every key null when nothing is stored. */
  async get (profileId: string): Promise<RichPresenceConfig> {
    return normalizeRichPresence(await this.sub.get(profileId) ?? {})
  }

  /** Replaces the whole configuration (one synced write); keys left out are stored as null. */
  async set (profileId: string, input: Partial<RichPresenceConfig>): Promise<RichPresenceConfig> {
    const config = normalizeRichPresence(input)
    await this.store.batch([{ type: 'put', sublevel: this.sub, key: profileId, value: config }], { sync: true })
    return config
  }
}
