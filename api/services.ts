// The services the HTTP layer and the relay share. Built once by the
// composition root (relay/main.ts) and handed to each feature plugin as its
// options; a feature names the members it uses in its options type.
import type { Logger } from 'pino'
import type { Store } from './store/db.ts'
import type { ClientStore, DeviceStore, TokenStore, UserStore } from './store/types.ts'
import type { DataServices } from './data-services.ts'
import type { ErasureHook } from './privacy/types.ts'

export interface TokenLifetimes {
  /** Seconds. Defaults in relay/config.ts (docs/api.md "Token lifetimes"). */
  implicit: number
  authorization_code: number
  refresh_token: number
  client_credentials: number
  device_code: number
  manual: number
  /** Lifetime of an authorization code (at most 600 s). */
  code: number
  /** Lifetime of a device authorization session. */
  device_session: number
  device_interval: number
}

export interface ApiConfig {
  /** Public base URL of this server, used in verification_uri and overlay links. */
  publicUrl: string
  lifetimes: TokenLifetimes
  /** Requests per second per token (0 = off); spec service-notes "Rate limit". */
  rateLimitPerSecond: number
  data: { rawRetentionDays: number, rollupRetentionDays: number, streamGapSeconds: number, sessionGapSeconds: number }
  /** WebSocket streams (api/http/stream-socket.ts): ping period and the send-buffer bound of a slow client. */
  streams?: { pingIntervalMs?: number, maxBufferedBytes?: number }
  /** privacy.*: whether readings need the member's consent, the notice's version and its text (default: not required, version "1"). */
  privacy?: PrivacyConfig
}

export interface PrivacyConfig {
  requireConsent: boolean
  noticeVersion: string
  /** The operator's notice, read from privacy.notice_file at start; undefined when none is configured. */
  noticeText?: string
}

export interface HealthEntry { id: string, state: string, detail?: string, connected?: number, adapters?: AdapterHealth[] }

/** One Bluetooth adapter of the BLE source: its state (up, full, powered_off, missing), straps connected, limit and counters. */
export interface AdapterHealth { name: string, state: string, connections: number, limit: number, silent_total: number, refused_total: number }

/**
 * What the service's metrics record; implemented by the relay's Prometheus
 * metrics (relay/metrics.ts), so api names the port and not the exporter.
 */
export interface ServiceMetrics {
  readingStored (source: string): void
  dropped (reason: string): void
  setConnected (source: string, n: number): void
  observeIngestLatency (seconds: number): void
  setWebSocketClients (n: number): void
}

/** Heart-rate data (readings, pipeline, hub, widgets, game-mod, rooms) comes from DataServices. */
export interface Services extends DataServices {
  store: Store
  users: UserStore
  clients: ClientStore
  tokens: TokenStore
  config: ApiConfig
  log: Logger
  /** Digest of the admin token (data-dir/admin-token). */
  adminTokenDigest: string
  /** Health of the relay's sources, filled in by the composition root. */
  health: () => HealthEntry[]
  /** Device pairing and the live list of devices in range (api/store/devices.ts). */
  devices: DeviceStore
  /** The metrics the service records (Prometheus, relay/metrics.ts). */
  metrics: ServiceMetrics
  /** What else a member's erasure must erase (api/privacy/erase.ts): the relay adds its upstream queue. */
  erasureHooks?: ErasureHook[]
}
