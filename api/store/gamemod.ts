// Game-mod configuration (spec 2.6, 4.5): exactly twelve keys, each nullable.
// The specification shows only disable_start (boolean) and death_bpm (number);
// hr-relay defines the rest (docs/api.md "Heart-rate endpoints"): three booleans, one
// string (position), eight numbers. Write replaces the whole object.
import type { Store, Sub } from './db.ts'

export const GAME_MOD_TYPES = {
  disable_start: 'boolean',
  enable_death: 'boolean',
  death_bpm: 'number',
  scale: 'number',
  position: 'string',
  custom_x: 'number',
  custom_y: 'number',
  heart_pos: 'number',
  death_pos: 'number',
  enable_color_desaturation: 'boolean',
  desaturation_bpm_start: 'number',
  desaturation_bpm_end: 'number'
} as const

export type GameModKey = keyof typeof GAME_MOD_TYPES
export const GAME_MOD_KEYS = Object.keys(GAME_MOD_TYPES) as GameModKey[]
export type GameModConfig = { [K in GameModKey]: (typeof GAME_MOD_TYPES)[K] extends 'boolean' ? boolean | null : (typeof GAME_MOD_TYPES)[K] extends 'number' ? number | null : string | null }

/** JSON Schema of the configuration object (unknown keys and wrong types are refused). */
export const GAME_MOD_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  properties: Object.fromEntries(GAME_MOD_KEYS.map(k => [k, GAME_MOD_TYPES[k] === 'string'
    ? { type: ['string', 'null'], maxLength: 100 }
    : { type: [GAME_MOD_TYPES[k], 'null'] }]))
} as const

/** All twelve keys, absent ones null. */
export function normalizeGameMod (input: Partial<Record<string, unknown>>): GameModConfig {
  const out: Record<string, unknown> = {}
  for (const k of GAME_MOD_KEYS) out[k] = input[k] ?? null
  return out as GameModConfig
}

export class GameMod {
  private readonly sub: Sub<GameModConfig>

  constructor (private readonly store: Store) {
    this.sub = store.sub<GameModConfig>('game_mod')
  }

  async get (profileId: string): Promise<GameModConfig | undefined> {
    const v = await this.sub.get(profileId)
    return v === undefined ? undefined : normalizeGameMod(v)
  }

  async set (profileId: string, input: Partial<Record<string, unknown>>): Promise<GameModConfig> {
    const config = normalizeGameMod(input)
    await this.store.batch([{ type: 'put', sublevel: this.sub, key: profileId, value: config }], { sync: true })
    return config
  }
}
