// The hub's configuration (`hr-relay hub start --config hub.json`): one JSON file validated against its own
// schema at start, every error reported by its path. Defaults are in the schema. docs/hub.md mirrors it.
import { readFile } from 'node:fs/promises'
import { Type, type Static } from '@sinclair/typebox'
import { Ajv } from 'ajv'

const Str = (description: string, options: Record<string, unknown> = {}) => Type.String({ minLength: 1, description, ...options })

export const HubConfigSchema = Type.Object({
  log_level: Type.Union([Type.Literal('fatal'), Type.Literal('error'), Type.Literal('warn'), Type.Literal('info'), Type.Literal('debug'), Type.Literal('trace'), Type.Literal('silent')], { default: 'info' }),
  postgres: Type.Object({
    url: Str('postgres://user:password@host:5432/database'),
    pool_size: Type.Integer({ minimum: 2, maximum: 100, default: 10, description: 'connections of this instance' })
  }, { additionalProperties: false }),
  mqtt: Type.Object({
    url: Str('mqtt:// or mqtts:// URL of the broker the boxes publish to'),
    username: Type.Optional(Type.String({ description: 'the hub\'s login at the broker' })),
    password: Type.Optional(Type.String()),
    client_id: Str('the same across restarts of this instance, so that the broker keeps its queue; unique per instance', { maxLength: 128 }),
    topic_root: Str('where the chain\'s topics start; a box publishes under <topic_root>/boxes/<box_id>', { default: 'hr-relay-chain/v1', pattern: '^[^#+]+$' }),
    share_group: Str('the shared subscription group of the hub\'s instances', { default: 'hr-relay-hub', pattern: '^[^/#+]+$' }),
    keepalive_s: Type.Integer({ minimum: 5, maximum: 600, default: 30 }),
    clean_start: Type.Boolean({ default: false, description: 'false: a persistent session, which the broker keeps (with its queue) until the instance returns (Mosquitto); true: a session that ends with the connection, for a broker that sends a departed member\'s unacknowledged shared-subscription messages to the other members (EMQX)' }),
    receive_maximum: Type.Integer({ minimum: 1, maximum: 65535, default: 1000, description: 'QoS 1 messages the broker may send before their acknowledgement: the largest batch' })
  }, { additionalProperties: false }),
  http: Type.Object({
    host: Type.String({ default: '127.0.0.1' }),
    port: Type.Integer({ minimum: 0, maximum: 65535, default: 8090 }),
    public_url: Type.Optional(Type.String({ pattern: '^https?://[^/]+$', description: 'the URL apps reach the hub at, behind its load balancer (default: this instance\'s own address)' })),
    rate_limit_per_second: Type.Number({ minimum: 0, default: 20, description: 'requests per second per token and instance; 0 turns it off' })
  }, { additionalProperties: false, default: {} }),
  data: Type.Object({
    raw_retention_days: Type.Number({ exclusiveMinimum: 0, default: 35 }),
    rollup_retention_days: Type.Number({ exclusiveMinimum: 0, default: 400 }),
    stream_gap_seconds: Type.Number({ exclusiveMinimum: 0, maximum: 3600, default: 5, description: 'readings further apart than this do not count as streamed time' }),
    session_gap_seconds: Type.Number({ exclusiveMinimum: 0, maximum: 86400, default: 300, description: 'a gap between readings longer than this starts a new training session' })
  }, { additionalProperties: false, default: {} })
}, { additionalProperties: false })

export type HubConfig = Static<typeof HubConfigSchema>

export class HubConfigError extends Error {
  readonly code = 'HR_HUB_CONFIG_INVALID'
  constructor (readonly source: string, readonly problems: string[]) {
    super(`${source} is not a valid hub configuration:${problems.map(p => `\n  - ${p}`).join('')}`)
    this.name = 'HubConfigError'
  }
}

const ajv = new Ajv({ allErrors: true, useDefaults: true, strict: false })
const validate = ajv.compile(HubConfigSchema)

/** Validates a parsed configuration, filling in defaults; throws HubConfigError with every problem. */
export function validateHubConfig (input: unknown, source = 'configuration'): HubConfig {
  if (input === null || typeof input !== 'object' || Array.isArray(input)) throw new HubConfigError(source, ['(root): must be a JSON object'])
  const copy = structuredClone(input)
  if (!validate(copy)) {
    throw new HubConfigError(source, (validate.errors ?? []).map(e => {
      const path = e.instancePath === '' ? '(root)' : e.instancePath.slice(1).replaceAll('/', '.')
      const extra = e.keyword === 'additionalProperties' ? ` '${String((e.params as { additionalProperty: string }).additionalProperty)}'` : ''
      return `${path}: ${e.message ?? 'is invalid'}${extra}`
    }))
  }
  const config = copy as HubConfig
  for (const [name, url] of [['postgres.url', config.postgres.url], ['mqtt.url', config.mqtt.url]] as const) {
    let parsed: URL | undefined
    try { parsed = new URL(url) } catch {}
    const schemes = name === 'mqtt.url' ? ['mqtt:', 'mqtts:'] : ['postgres:', 'postgresql:']
    if (parsed === undefined || !schemes.includes(parsed.protocol)) throw new HubConfigError(source, [`${name}: must be a ${schemes.map(s => s + '//').join(' or ')} URL`])
  }
  return config
}

/** Reads and validates the configuration file. */
export async function loadHubConfig (file: string): Promise<HubConfig> {
  let text: string
  try { text = await readFile(file, 'utf8') } catch (err) { throw new HubConfigError(file, [`cannot be read: ${(err as NodeJS.ErrnoException).code ?? String(err)}`]) }
  let parsed: unknown
  try { parsed = JSON.parse(text) } catch (err) { throw new HubConfigError(file, [`is not JSON: ${(err as Error).message}`]) }
  return validateHubConfig(parsed, file)
}
