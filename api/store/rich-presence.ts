// Chat-app rich-presence configuration (scopes chatapp:rich_presence:config:read
// and :write, feature chatapp_rich_presence; the specification names them but
// shows no endpoint, so hr-relay defines it: README "Rich-presence
// configuration"). Five typed keys, none nullable; a write replaces the whole
// object, and a key the write leaves out takes its default.
import type { Store, Sub } from './db.ts'

/** Longest template or image text, in characters. */
export const RICH_PRESENCE_MAX_TEXT = 128

export interface RichPresenceConfig {
  /** Whether a chat-app client shows the presence at all. */
  enabled: boolean
  /** Whether the heart rate is part of the presence. */
  show_heart_rate: boolean
  /** First line of the presence; `{heart_rate}` stands for the current bpm. */
  details_template: string
  /** Second line of the presence; `{heart_rate}` stands for the current bpm. */
  state_template: string
  /** Tooltip of the large image. */
  large_image_text: string
}

/** What a user with nothing stored reads, and what a write's missing keys become. */
export const RICH_PRESENCE_DEFAULTS: Readonly<RichPresenceConfig> = Object.freeze({
  enabled: false,
  show_heart_rate: true,
  details_template: '{heart_rate} bpm',
  state_template: '',
  large_image_text: ''
})

export const RICH_PRESENCE_KEYS = Object.keys(RICH_PRESENCE_DEFAULTS) as Array<keyof RichPresenceConfig>

const text = { type: 'string', maxLength: RICH_PRESENCE_MAX_TEXT } as const

/** JSON Schema of a written configuration: unknown keys, wrong types and long strings are refused. */
export const RICH_PRESENCE_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  properties: {
    enabled: { type: 'boolean' },
    show_heart_rate: { type: 'boolean' },
    details_template: text,
    state_template: text,
    large_image_text: text
  }
} as const

/** The stored shape: every key, in the documented order, defaults for the missing. */
export function normalizeRichPresence (input: Partial<RichPresenceConfig>): RichPresenceConfig {
  return {
    enabled: input.enabled ?? RICH_PRESENCE_DEFAULTS.enabled,
    show_heart_rate: input.show_heart_rate ?? RICH_PRESENCE_DEFAULTS.show_heart_rate,
    details_template: input.details_template ?? RICH_PRESENCE_DEFAULTS.details_template,
    state_template: input.state_template ?? RICH_PRESENCE_DEFAULTS.state_template,
    large_image_text: input.large_image_text ?? RICH_PRESENCE_DEFAULTS.large_image_text
  }
}

export class RichPresence {
  private readonly sub: Sub<RichPresenceConfig>

  constructor (private readonly store: Store) {
    this.sub = store.sub<RichPresenceConfig>('rich_presence')
  }

  /** The user's configuration, or the defaults when nothing is stored. */
  async get (profileId: string): Promise<RichPresenceConfig> {
    return normalizeRichPresence(await this.sub.get(profileId) ?? {})
  }

  /** Replaces the whole configuration (one synced write). */
  async set (profileId: string, input: Partial<RichPresenceConfig>): Promise<RichPresenceConfig> {
    const config = normalizeRichPresence(input)
    await this.store.batch([{ type: 'put', sublevel: this.sub, key: profileId, value: config }], { sync: true })
    return config
  }
}
