// The shapes of a member's erasure (erase.ts) that the services bag names too: kept apart so that
// services.ts does not import the erasure itself.

/** What an erasure removed, counted by kind (the CLI's --json, the admin API's answer). */
export interface ErasureCounts {
  account: number
  readings: number
  minute_rollups: number
  hour_rollups: number
  latest: number
  consents: number
  widgets: number
  game_mod: number
  rich_presence: number
  devices: number
  rooms: number
  tokens: number
  oauth_codes: number
  sign_in_sessions: number
  upstream_queue: number
  /** Class summaries (api/store/classes.ts). */
  class_summaries: number
  /** Maxima raised by classes, each with its time and old value. */
  learned_maxima: number
}

/** Run after the records are deleted and before the rewrite; may add counts (the upstream queue's). */
export type ErasureHook = (who: { username: string, profile_id: string }) => Promise<Partial<ErasureCounts> | undefined>
