// Configuration: one JSON file validated against CONFIG_SCHEMA at start, with
// every error reported by path, then environment overrides, then command-line
// flags. Defaults are in the schema.
import { readFile } from 'node:fs/promises'
import { Ajv } from 'ajv'
import { CONFIG_SCHEMA, type Config } from './config-schema.ts'
import { relayErrorMessage } from './error-codes.ts'
import { chainBoxPrefix } from '../firmware-protocol/upstream.ts'

/** The validated configuration: its type is derived from the schema (relay/config-schema.ts). */
export type { Config }
export type SerialPortConfig = Config['serial'][number]
export type MidiConfig = Config['midi'][number]
export type OscConfig = Config['osc'][number]

export class ConfigError extends Error {
  readonly code = 'HR_CONFIG_INVALID'
  readonly problems: string[]
  constructor (source: string, problems: string[]) {
    super(relayErrorMessage('HR_CONFIG_INVALID', { source, problems: problems.map(p => `\n  - ${p}`).join('') }))
    this.name = 'ConfigError'
    this.problems = problems
  }
}

// verbose: an error carries its schema, so that a key's own `errorMessage` (config-schema.ts) can replace ajv's text.
const ajv = new Ajv({ allErrors: true, useDefaults: true, strict: false, verbose: true })
const validate = ajv.compile(CONFIG_SCHEMA)

/** Validates a parsed configuration object, filling in defaults. */
export function validateConfig (input: unknown, source = 'configuration'): Config {
  if (input === null || typeof input !== 'object' || Array.isArray(input)) throw new ConfigError(source, ['(root): must be a JSON object'])
  const copy = structuredClone(input)
  if (!validate(copy)) {
    const problems = (validate.errors ?? []).map(e => {
      const path = e.instancePath === '' ? '(root)' : e.instancePath.slice(1).replaceAll('/', '.')
      const extra = e.keyword === 'additionalProperties' ? ` '${String((e.params as { additionalProperty: string }).additionalProperty)}'` : e.keyword === 'enum' ? ` (${(e.params as { allowedValues: unknown[] }).allowedValues.join(', ')})` : ''
      const own = (e.parentSchema as { errorMessage?: unknown } | undefined)?.errorMessage
      if (typeof own === 'string' && e.keyword !== 'type') return `${path}: ${own}`
      return `${path}: ${e.message ?? 'is invalid'}${extra}`
    })
    throw new ConfigError(source, problems)
  }
  const config = copy as Config
  // A rule JSON Schema cannot state: HRPercent divides by max_bpm - min_bpm.
  const ranges = config.osc.flatMap((o, i) => o.min_bpm < o.max_bpm ? [] : [`osc.${i}: min_bpm must be below max_bpm`])
  if (ranges.length > 0) throw new ConfigError(source, ranges)
  const tls = tlsRules(config)
  if (tls.length > 0) throw new ConfigError(source, tls)
  const adapters = bleAdapterProblems(config.ble)
  if (adapters.length > 0) throw new ConfigError(source, adapters)
  const chain = chainRules(config, input as { upstream?: { topic_prefix?: unknown } })
  if (chain.length > 0) throw new ConfigError(source, chain)
  return config
}

/**
 * A box in a chain forwards to the hub under `<chain.topic_root>/boxes/<chain.box_id>`: that is its upstream's topic
 * prefix, set here; a different prefix written by hand would send its readings where the hub does not read.
 */
function chainRules (config: Config, raw: { upstream?: { topic_prefix?: unknown } }): string[] {
  const chain = config.chain
  if (chain === undefined) return []
  if (config.upstream === undefined) return ['chain: needs upstream (the broker of the chain, docs/hub.md)']
  const prefix = chainBoxPrefix(chain.topic_root, chain.box_id)
  const given = raw.upstream?.topic_prefix
  if (given !== undefined && given !== prefix) return [`upstream.topic_prefix: must be ${prefix} for chain.box_id ${chain.box_id}, or left out`]
  config.upstream.topic_prefix = prefix
  return []
}

/** What TLS on the LAN needs beyond the schema: the redirect only with TLS, and no http:// public URL under TLS. */
function tlsRules (config: Config): string[] {
  const problems: string[] = []
  const { http, mqtt } = config
  if (http.redirect_port !== undefined && http.tls === undefined) problems.push('http.redirect_port: needs http.tls (it redirects plain HTTP to HTTPS)')
  if (http.redirect_port !== undefined && http.redirect_port !== 0 && http.redirect_port === http.port) problems.push('http.redirect_port: must differ from http.port')
  if (http.tls !== undefined && http.public_url?.startsWith('http:') === true) problems.push('http.public_url: must start with https:// when http.tls is set')
  if (mqtt.tls !== undefined && mqtt.plain && mqtt.tls.port !== 0 && mqtt.tls.port === mqtt.port) problems.push('mqtt.tls.port: must differ from mqtt.port while mqtt.plain is on')
  return problems
}

/** Rules of ble.adapter and ble.adapters that JSON Schema cannot state. */
function bleAdapterProblems (ble: Config['ble']): string[] {
  if (ble.adapter !== undefined && ble.adapters !== undefined) return ['ble: adapter and adapters are both given; list every adapter under adapters']
  const names = (ble.adapters ?? []).map(a => a.name)
  return [...new Set(names.filter((n, i) => names.indexOf(n) !== i))].map(n => `ble.adapters: ${n} is listed more than once`)
}

/** The BLE adapters to use: ble.adapters, or ble.adapter (default hci0) as one adapter with the default limit. */
export function bleAdapters (ble: Config['ble']): Array<{ name: string, max_connections: number }> {
  return ble.adapters ?? [{ name: ble.adapter ?? 'hci0', max_connections: BLE_DEFAULT_MAX_CONNECTIONS }]
}

/** max_connections of an adapter given as ble.adapter (the schema's default for ble.adapters items). */
export const BLE_DEFAULT_MAX_CONNECTIONS = 7

/** Environment overrides (documented in the README). */
export const ENV_OVERRIDES: Record<string, (c: Record<string, any>, v: string) => void> = {
  HR_RELAY_DATA_DIR: (c, v) => { c.data_dir = v },
  HR_RELAY_LOG_LEVEL: (c, v) => { c.log_level = v },
  HR_RELAY_HTTP_HOST: (c, v) => { (c.http ??= {}).host = v },
  HR_RELAY_HTTP_PORT: (c, v) => { (c.http ??= {}).port = Number(v) },
  HR_RELAY_PUBLIC_URL: (c, v) => { (c.http ??= {}).public_url = v },
  HR_RELAY_MQTT_PORT: (c, v) => { (c.mqtt ??= {}).port = Number(v) },
  HR_RELAY_UPSTREAM_URL: (c, v) => { (c.upstream ??= {}).url = v },
  HR_RELAY_BLE: (c, v) => { (c.ble ??= {}).enabled = v !== '0' && v !== 'false' },
  HR_RELAY_HOME_ASSISTANT: (c, v) => { (c.home_assistant ??= {}).enabled = v !== '0' && v !== 'false' }
}

export interface LoadOptions {
  file?: string
  env?: NodeJS.ProcessEnv
  /** Command-line flags, applied last. */
  overrides?: (raw: Record<string, any>) => void
}

export async function loadConfig (options: LoadOptions = {}): Promise<Config> {
  let raw: Record<string, any> = {}
  const source = options.file ?? 'configuration'
  if (options.file !== undefined) {
    let text: string
    try {
      text = await readFile(options.file, 'utf8')
    } catch (err) {
      throw new ConfigError(options.file, [`cannot read the file: ${(err as Error).message}`])
    }
    try {
      raw = JSON.parse(text)
    } catch (err) {
      throw new ConfigError(options.file, [`not valid JSON: ${(err as Error).message}`])
    }
    if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) throw new ConfigError(options.file, ['(root): must be a JSON object'])
    // The simulated gym is for a first start with nothing configured; a configuration file turns it off unless it asks for it.
    if (raw.demo === undefined) raw.demo = false
  }
  const env = options.env ?? process.env
  for (const [name, apply] of Object.entries(ENV_OVERRIDES)) {
    const v = env[name]
    if (v !== undefined && v !== '') apply(raw, v)
  }
  options.overrides?.(raw)
  return validateConfig(raw, source)
}
