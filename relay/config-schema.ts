// The one JSON Schema of the configuration file (`hr-relay start --config FILE`).
// Every key has its default next to it; README "Configuration" mirrors this file.
export const CONFIG_SCHEMA = {
  $id: 'https://hr-relay.local/config.schema.json',
  type: 'object',
  additionalProperties: false,
  properties: {
    data_dir: { type: 'string', minLength: 1, default: './data', description: 'LevelDB data, admin token and server address' },
    log_level: { enum: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], default: 'info' },
    demo: { type: 'boolean', default: true, description: 'run the simulated gym; default true with no configuration file, false with one (hr-relay start --no-demo turns it off)' },
    http: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        host: { type: 'string', default: '127.0.0.1' },
        port: { type: 'integer', minimum: 0, maximum: 65535, default: 8080 },
        public_url: { type: 'string', description: 'base URL clients use; default http://<host>:<port>' },
        body_limit_bytes: { type: 'integer', minimum: 1024, maximum: 10485760, default: 65536 },
        rate_limit_per_second: { type: 'number', minimum: 0, default: 20, description: 'requests per second per token; 0 turns it off' },
        admin_remote: { type: 'boolean', default: false, description: 'serve /admin and /operator to non-loopback clients too (logged as a warning at start); off: loopback only, whatever host is' },
        headers_timeout_ms: { type: 'integer', minimum: 100, maximum: 600000, default: 10000, description: 'a request whose headers are not complete by then is answered 408 and closed' },
        request_timeout_ms: { type: 'integer', minimum: 100, maximum: 3600000, default: 30000, description: 'a request (headers and body) not complete by then is answered 408 and closed; at least headers_timeout_ms' },
        keep_alive_timeout_ms: { type: 'integer', minimum: 100, maximum: 600000, default: 5000, description: 'an idle keep-alive connection is closed after this' },
        max_connections_per_address: { type: 'integer', minimum: 0, default: 256, description: 'open connections (WebSockets included) from one non-loopback address; more are closed at once; 0: no limit' },
        max_connections_loopback: { type: 'integer', minimum: 0, default: 4096, description: 'the same limit for each loopback address (kiosk browser, CLI, a reverse proxy); 0: no limit' }
      }
    },
    oauth: {
      type: 'object',
      additionalProperties: false,
      default: {},
      description: 'token lifetimes in seconds',
      properties: {
        implicit_expires_in: { type: 'integer', minimum: 60, default: 90000 },
        code_expires_in: { type: 'integer', minimum: 60, default: 3600, description: 'access token from the authorization code grant' },
        refresh_token_expires_in: { type: 'integer', minimum: 3600, default: 2592000 },
        client_credentials_expires_in: { type: 'integer', minimum: 60, default: 5184000 },
        device_code_expires_in: { type: 'integer', minimum: 60, default: 7776000, description: 'access token from the device flow' },
        manual_expires_in: { type: 'integer', minimum: 60, default: 630720000, description: 'manual tokens (20 years)' },
        authorization_code_ttl: { type: 'integer', minimum: 10, maximum: 600, default: 600 },
        device_session_ttl: { type: 'integer', minimum: 60, maximum: 3600, default: 600 },
        device_poll_interval: { type: 'integer', minimum: 1, maximum: 60, default: 3 }
      }
    },
    data: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        raw_retention_days: { type: 'number', exclusiveMinimum: 0, default: 35 },
        rollup_retention_days: { type: 'number', exclusiveMinimum: 0, default: 400 },
        stream_gap_seconds: { type: 'number', exclusiveMinimum: 0, maximum: 3600, default: 5, description: 'readings further apart than this do not count as streamed time' },
        session_gap_seconds: { type: 'number', exclusiveMinimum: 0, maximum: 86400, default: 300, description: 'a gap between readings longer than this starts a new training session (GET /api/v1/data/sessions)' },
        max_clock_skew_ms: { type: 'integer', minimum: 0, maximum: 600000, default: 30000, description: 'a reading at most this far ahead of the relay clock is stored at receive time; further ahead it is refused' }
      }
    },
    mqtt: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        enabled: { type: 'boolean', default: true },
        host: { type: 'string', description: 'default: http.host' },
        port: { type: 'integer', minimum: 0, maximum: 65535, default: 1883 },
        websocket_path: { type: 'string', default: '/mqtt' },
        max_packet_bytes: { type: 'integer', minimum: 256, maximum: 1048576, default: 8192 },
        connect_timeout_ms: { type: 'integer', minimum: 100, default: 10000 },
        keepalive_limit_s: { type: 'integer', minimum: 0, default: 300 }
      }
    },
    ble: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        enabled: { type: 'boolean', default: true },
        adapter: { type: 'string', default: 'hci0' },
        allow: { type: 'array', items: { type: 'string', pattern: '^([0-9A-Fa-f]{2}:){5}[0-9A-Fa-f]{2}$' }, default: [], description: 'strap addresses to connect; empty: every paired strap' },
        connect_timeout_ms: { type: 'integer', minimum: 500, default: 15000 },
        gatt_timeout_ms: { type: 'integer', minimum: 500, default: 15000 },
        backoff_initial_ms: { type: 'integer', minimum: 50, default: 1000 },
        backoff_max_ms: { type: 'integer', minimum: 100, default: 30000 },
        rescan_interval_ms: { type: 'integer', minimum: 100, default: 5000, description: 'how often devices are listed and paired straps connected' }
      }
    },
    serial: {
      type: 'array',
      default: [],
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['path'],
        properties: {
          path: { type: 'string', minLength: 1 },
          baud_rate: { type: 'integer', minimum: 300, default: 115200 },
          format: { enum: ['framed', 'text', 'hrmi'], default: 'framed' },
          device_id: { type: 'string', pattern: '^[A-Za-z0-9:_.-]{1,64}$' },
          poll_interval_ms: { type: 'integer', minimum: 100, default: 1000 }
        }
      }
    },
    midi: {
      type: 'array',
      default: [],
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['path', 'username'],
        properties: {
          path: { type: 'string', minLength: 1 },
          username: { type: 'string', minLength: 1 },
          kind: { enum: ['auto', 'rawmidi', 'serial'], default: 'auto' },
          order: { enum: ['ones-tens', 'tens-ones'], default: 'ones-tens' },
          channel: { type: 'integer', minimum: 0, maximum: 15, default: 0 }
        }
      }
    },
    osc: {
      type: 'array',
      default: [],
      description: 'OSC output of a member\'s heart rate to VRChat avatar parameters (README "OSC output"); off when empty',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['username'],
        properties: {
          host: { type: 'string', minLength: 1, default: '127.0.0.1' },
          port: { type: 'integer', minimum: 1, maximum: 65535, default: 9000, description: 'VRChat listens on 9000' },
          username: { type: 'string', minLength: 1 },
          min_bpm: { type: 'integer', minimum: 0, maximum: 1000, default: 0, description: 'HRPercent is 0 at or below this' },
          max_bpm: { type: 'integer', minimum: 1, maximum: 1000, default: 255, description: 'HRPercent is 1 at or above this' },
          parameter_prefix: { type: 'string', pattern: '^/[!-~]*$', default: '/avatar/parameters/' }
        }
      }
    },
    home_assistant: {
      type: 'object',
      additionalProperties: false,
      default: {},
      description: 'Home Assistant MQTT discovery for members who opted in (README "Home Assistant")',
      properties: {
        enabled: { type: 'boolean', default: false },
        discovery_prefix: { type: 'string', pattern: '^[A-Za-z0-9_-]+(/[A-Za-z0-9_-]+)*$', default: 'homeassistant', description: "Home Assistant's discovery prefix" }
      }
    },
    upstream: {
      type: 'object',
      additionalProperties: false,
      properties: {
        url: { type: 'string', pattern: '^(mqtts?|wss?|tcp)://' },
        username: { type: 'string' },
        password: { type: 'string' },
        client_id: { type: 'string' },
        topic_prefix: { type: 'string', default: 'hr-relay/v1' },
        queue_max: { type: 'integer', minimum: 1, default: 1000000, description: 'readings kept while the upstream is unreachable; the oldest are dropped past this' }
      },
      required: ['url']
    }
  }
} as const
