// The one JSON Schema of the configuration file (`hr-relay start --config FILE`).
// Every key has its default next to it; docs/operator.md "Configuration" mirrors this file.
// Written with TypeBox, so that the Config type (relay/config.ts) is derived
// from it: a key with a default is present after validation (ajv useDefaults),
// a key without one is optional. test/relay/config-schema.test.ts keeps the
// emitted JSON Schema equal to the hand-written one it replaced.
import { Type, type ObjectOptions, type SchemaOptions, type Static, type TObject, type TProperties, type TSchema, type TUnsafe } from '@sinclair/typebox'

/** `{enum: [...]}` as the schema had it (TypeBox's own unions would emit anyOf), typed as the union of its values. */
function Enum<const V extends readonly string[]> (values: V, options: SchemaOptions = {}): TUnsafe<V[number]> {
  return Type.Unsafe<V[number]>({ ...options, enum: values })
}

/**
 * An object with additionalProperties false whose keys are required in the type when they have a default
 * (ajv fills them in) but not in the schema: the schema requires only the keys without a default that are
 * not marked optional.
 */
function Section<P extends TProperties> (properties: P, options: ObjectOptions = {}): TObject<P> {
  const { required = [], ...schema } = Type.Object(properties, { additionalProperties: false, ...options }) as TObject<P>
  const needed = (required as string[]).filter(key => (properties[key] as TSchema).default === undefined)
  return (needed.length > 0 ? { ...schema, required: needed } : schema) as TObject<P>
}

/** A certificate and its private key, PEM files (http.tls, mqtt.tls). */
function TlsFiles (options: ObjectOptions = {}) {
  return Section({
    cert_file: Type.String({ minLength: 1, description: 'PEM certificate (the server\'s first, then any intermediates)' }),
    key_file: Type.String({ minLength: 1, description: 'PEM private key of that certificate, not encrypted; readable by the service only' })
  }, options)
}

export const ConfigSchema = Section({
  data_dir: Type.String({ minLength: 1, default: './data', description: 'LevelDB data, admin token and server address' }),
  log_level: Enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], { default: 'info' }),
  demo: Type.Boolean({ default: true, description: 'run the simulated gym; default true with no configuration file, false with one (hr-relay start --no-demo turns it off)' }),
  http: Section({
    host: Type.String({ default: '127.0.0.1' }),
    port: Type.Integer({ minimum: 0, maximum: 65535, default: 8080 }),
    public_url: Type.Optional(Type.String({ description: 'base URL clients use; default http://<host>:<port>' })),
    body_limit_bytes: Type.Integer({ minimum: 1024, maximum: 10485760, default: 65536 }),
    rate_limit_per_second: Type.Number({ minimum: 0, default: 20, description: 'requests per second per token; 0 turns it off' }),
    admin_remote: Type.Boolean({ default: false, description: 'serve /admin and /operator to non-loopback clients too (logged as a warning at start); off: loopback only, whatever host is' }),
    headers_timeout_ms: Type.Integer({ minimum: 100, maximum: 600000, default: 10000, description: 'a request whose headers are not complete by then is answered 408 and closed' }),
    request_timeout_ms: Type.Integer({ minimum: 100, maximum: 3600000, default: 30000, description: 'a request (headers and body) not complete by then is answered 408 and closed; at least headers_timeout_ms' }),
    keep_alive_timeout_ms: Type.Integer({ minimum: 100, maximum: 600000, default: 5000, description: 'an idle keep-alive connection is closed after this' }),
    max_connections_per_address: Type.Integer({ minimum: 0, default: 256, description: 'open connections (WebSockets included) from one non-loopback address; more are closed at once; 0: no limit' }),
    max_connections_loopback: Type.Integer({ minimum: 0, default: 4096, description: 'the same limit for each loopback address (kiosk browser, CLI, a reverse proxy); 0: no limit' }),
    // TLS on the LAN (docs/operator.md "TLS on the gym network").
    tls: Type.Optional(TlsFiles({ description: 'serve the API, the pages and every WebSocket over HTTPS and WSS on http.port; off when absent' })),
    redirect_port: Type.Optional(Type.Integer({ minimum: 0, maximum: 65535, description: 'with http.tls: a plain HTTP port whose every request is answered 308 to the same path on https' }))
  }, { default: {} }),
  oauth: Section({
    implicit_expires_in: Type.Integer({ minimum: 60, default: 90000 }),
    code_expires_in: Type.Integer({ minimum: 60, default: 3600, description: 'access token from the authorization code grant' }),
    refresh_token_expires_in: Type.Integer({ minimum: 3600, default: 2592000 }),
    client_credentials_expires_in: Type.Integer({ minimum: 60, default: 5184000 }),
    device_code_expires_in: Type.Integer({ minimum: 60, default: 7776000, description: 'access token from the device flow' }),
    manual_expires_in: Type.Integer({ minimum: 60, default: 630720000, description: 'manual tokens (20 years)' }),
    authorization_code_ttl: Type.Integer({ minimum: 10, maximum: 600, default: 600 }),
    device_session_ttl: Type.Integer({ minimum: 60, maximum: 3600, default: 600 }),
    device_poll_interval: Type.Integer({ minimum: 1, maximum: 60, default: 3 })
  }, { default: {}, description: 'token lifetimes in seconds' }),
  data: Section({
    raw_retention_days: Type.Number({ exclusiveMinimum: 0, default: 35 }),
    rollup_retention_days: Type.Number({ exclusiveMinimum: 0, default: 400 }),
    stream_gap_seconds: Type.Number({ exclusiveMinimum: 0, maximum: 3600, default: 5, description: 'readings further apart than this do not count as streamed time' }),
    session_gap_seconds: Type.Number({ exclusiveMinimum: 0, maximum: 86400, default: 300, description: 'a gap between readings longer than this starts a new training session (GET /api/v1/data/sessions)' }),
    max_clock_skew_ms: Type.Integer({ minimum: 0, maximum: 600000, default: 30000, description: 'a reading at most this far ahead of the relay clock is stored at receive time; further ahead it is refused' }),
    journal_mb: Type.Optional(Type.Unknown({ deprecated: true, description: 'ignored: the write-ahead journal was removed; each group of readings is a LevelDB sync batch' })),
    sync_below_per_s: Type.Optional(Type.Unknown({ deprecated: true, description: 'ignored: the write-ahead journal was removed; each group of readings is a LevelDB sync batch' }))
  }, { default: {} }),
  mqtt: Section({
    enabled: Type.Boolean({ default: true }),
    host: Type.Optional(Type.String({ description: 'default: http.host' })),
    port: Type.Integer({ minimum: 0, maximum: 65535, default: 1883 }),
    websocket_path: Type.String({ default: '/mqtt' }),
    max_packet_bytes: Type.Integer({ minimum: 256, maximum: 1048576, default: 8192 }),
    connect_timeout_ms: Type.Integer({ minimum: 100, default: 10000 }),
    keepalive_limit_s: Type.Integer({ minimum: 0, default: 300 }),
    // MQTT over TLS (docs/operator.md "TLS on the gym network").
    plain: Type.Boolean({ default: true, description: 'listen for plain MQTT on mqtt.port; false: TLS (mqtt.tls) and WebSocket only' }),
    tls: Type.Optional(Section({
      port: Type.Integer({ minimum: 0, maximum: 65535, default: 8883 }),
      cert_file: TlsFiles().properties.cert_file,
      key_file: TlsFiles().properties.key_file
    }, { description: 'serve MQTT over TLS (mqtts) on its own port; off when absent' }))
  }, { default: {} }),
  ble: Section({
    enabled: Type.Boolean({ default: true }),
    adapter: Type.Optional(Type.String({ minLength: 1, description: 'one adapter, as adapters: [{ name, max_connections: 7 }]; hci0 when neither is given; not with adapters' })),
    adapters: Type.Optional(Type.Array(Section({
      name: Type.String({ pattern: '^[A-Za-z0-9_.-]{1,32}$', description: 'BlueZ adapter name, e.g. hci1' }),
      max_connections: Type.Integer({ minimum: 1, maximum: 64, default: 7, description: 'straps the relay connects through this adapter at most' })
    }), { minItems: 1, description: 'the adapters to spread straps over (docs/operator.md "Several Bluetooth adapters")' })),
    full_hold_ms: Type.Integer({ minimum: 0, default: 30000, description: 'an adapter that refused a connection while holding others, or held a silent one, counts as full this long' }),
    silent_after_ms: Type.Integer({ minimum: 100, default: 5000, description: 'a strap connected and subscribed that sends nothing this long is moved to another adapter' }),
    allow: Type.Array(Type.String({ pattern: '^([0-9A-Fa-f]{2}:){5}[0-9A-Fa-f]{2}$' }), { default: [], description: 'strap addresses to connect; empty: every paired strap' }),
    connect_timeout_ms: Type.Integer({ minimum: 500, default: 15000 }),
    gatt_timeout_ms: Type.Integer({ minimum: 500, default: 15000 }),
    backoff_initial_ms: Type.Integer({ minimum: 50, default: 1000 }),
    backoff_max_ms: Type.Integer({ minimum: 100, default: 30000 }),
    rescan_interval_ms: Type.Integer({ minimum: 100, default: 5000, description: 'how often devices are listed and paired straps connected' })
  }, { default: {} }),
  serial: Type.Array(Section({
    path: Type.String({ minLength: 1 }),
    baud_rate: Type.Integer({ minimum: 300, default: 115200 }),
    format: Enum(['framed', 'text', 'hrmi'], { default: 'framed' }),
    device_id: Type.Optional(Type.String({ pattern: '^[A-Za-z0-9:_.-]{1,64}$' })),
    poll_interval_ms: Type.Integer({ minimum: 100, default: 1000 })
  }), { default: [] }),
  ant: Type.Array(Section({
    path: Type.String({ minLength: 1, description: 'the stick\'s serial port, e.g. /dev/ttyUSB0 or /dev/ant-stick-1 (deploy/ant/)' }),
    baud_rate: Type.Integer({ minimum: 300, default: 115200 }),
    network_key: Type.Optional(Type.String({ pattern: '^[0-9A-Fa-f]{16}$', errorMessage: 'must be the ANT+ network key as 16 hex digits (8 bytes)', description: 'the ANT+ network key, 16 hex digits; not shipped with hr-relay (thisisant.com); without it the stick is not opened and /health says why' }))
  }), { default: [], description: 'ANT USB sticks receiving ANT+ heart-rate straps (docs/operator.md "ANT+ sticks"); off when empty' }),
  midi: Type.Array(Section({
    path: Type.String({ minLength: 1 }),
    username: Type.String({ minLength: 1 }),
    kind: Enum(['auto', 'rawmidi', 'serial'], { default: 'auto' }),
    order: Enum(['ones-tens', 'tens-ones'], { default: 'ones-tens' }),
    channel: Type.Integer({ minimum: 0, maximum: 15, default: 0 })
  }), { default: [] }),
  osc: Type.Array(Section({
    host: Type.String({ minLength: 1, default: '127.0.0.1' }),
    port: Type.Integer({ minimum: 1, maximum: 65535, default: 9000, description: 'VRChat listens on 9000' }),
    username: Type.String({ minLength: 1 }),
    min_bpm: Type.Integer({ minimum: 0, maximum: 1000, default: 0, description: 'HRPercent is 0 at or below this' }),
    max_bpm: Type.Integer({ minimum: 1, maximum: 1000, default: 255, description: 'HRPercent is 1 at or above this' }),
    parameter_prefix: Type.String({ pattern: '^/[!-~]*$', default: '/avatar/parameters/' })
  }), { default: [], description: 'OSC output of a member\'s heart rate to VRChat avatar parameters (docs/integrations.md "OSC output to VRChat"); off when empty' }),
  home_assistant: Section({
    enabled: Type.Boolean({ default: false }),
    discovery_prefix: Type.String({ pattern: '^[A-Za-z0-9_-]+(/[A-Za-z0-9_-]+)*$', default: 'homeassistant', description: "Home Assistant's discovery prefix" })
  }, { default: {}, description: 'Home Assistant MQTT discovery for members who opted in (docs/integrations.md "Home Assistant")' }),
  classes: Section({
    learn_max_heart_rate: Type.Boolean({ default: true, description: 'a member whose readings hold above their maximum heart rate for 30 s in a class gets their own maximum raised to the highest 30-second average' }),
    results_seconds: Type.Integer({ minimum: 0, maximum: 3600, default: 120, description: 'how long room displays show a class\'s results after it ends (seconds)' })
  }, { default: {}, description: 'Classes of rooms: effort points, summaries, the learned maximum (docs/operator.md "Classes")' }),
  privacy: Section({
    require_consent: Type.Boolean({ default: false, description: 'readings of a member without consent to the current notice are refused (HTTP 403, no PUBACK, not stored)' }),
    notice_version: Type.String({ minLength: 1, maxLength: 64, pattern: '^[!-~]+$', default: '1', description: 'the version of the privacy notice members consent to; a new version asks every member again' }),
    notice_file: Type.Optional(Type.String({ minLength: 1, description: 'the operator\'s own notice (plain text or Markdown), shown on /me where members accept it' }))
  }, { default: {}, description: 'Members\' consent to the processing of their heart rate (docs/operator.md "Privacy and security for gyms")' }),
  upstream: Type.Optional(Section({
    url: Type.String({ pattern: '^(mqtts?|wss?|tcp)://' }),
    username: Type.Optional(Type.String()),
    password: Type.Optional(Type.String()),
    client_id: Type.Optional(Type.String()),
    topic_prefix: Type.String({ default: 'hr-relay/v1' }),
    queue_max: Type.Integer({ minimum: 1, default: 1000000, description: 'readings kept while the upstream is unreachable; the oldest are dropped past this' })
  })),
  chain: Type.Optional(Section({
    box_id: Type.String({ pattern: '^[A-Za-z0-9._:-]{1,64}$', description: 'this box in its chain; upstream.topic_prefix becomes <topic_root>/boxes/<box_id> (docs/hub.md)' }),
    topic_root: Type.String({ minLength: 1, pattern: '^[^#+]+$', default: 'hr-relay-chain/v1', description: 'the chain hub\'s mqtt.topic_root' })
  }, { description: 'The chain of gyms this box belongs to: its readings go to the hub under its box id (docs/hub.md)' }))
}, { $id: 'https://hr-relay.local/config.schema.json' })

/**
 * Keys of `data` that earlier versions read and this one ignores: a configuration file that still has them starts
 * the service, which logs one warning naming them (relay/main.ts).
 */
export const IGNORED_DATA_KEYS = ['journal_mb', 'sync_below_per_s'] as const

/** The configuration after validation: every key with a default is present. */
export type Config = Static<typeof ConfigSchema>

/** The same schema under the name the rest of the relay uses. */
export const CONFIG_SCHEMA = ConfigSchema
