// The composition root: builds the store, services, HTTP API, broker, sources
// and outputs from the validated configuration, starts them in order and
// stops them in reverse. Constructors elsewhere do no I/O.
import { existsSync } from 'node:fs'
import { chmod, mkdir, readFile, rm, writeFile } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import pino, { type Logger } from 'pino'
import type { PrettyOptions, PrettyStream } from 'pino-pretty'
import type { FastifyInstance } from 'fastify'
import { Store, dataDirError } from '../api/store/db.ts'
import { Users } from '../api/store/users.ts'
import { Clients } from '../api/store/clients.ts'
import { Tokens } from '../api/store/tokens.ts'
import { adminTokenDigest, appAuth, newAdminToken } from '../api/auth-port.ts'
import { buildServer, startRedirect, stopRedirect } from '../api/http/server.ts'
import { buildDataServices } from '../api/data-services.ts'
import { apiFeatures } from '../api/http/features.ts'
import type { HealthEntry, Services } from '../api/services.ts'
import type { Config } from './config.ts'
import { SourceManager, buildSources } from './sources/manager.ts'
import { OscOutput } from './outputs/osc.ts'
import { MemberFeed } from './outputs/member-feed.ts'
import { Devices } from '../api/store/devices.ts'
import { Metrics, instrumentIngest, instrumentReadingLog, metricsPlugin } from './metrics.ts'
import { IGNORED_DATA_KEYS } from './config-schema.ts'
import { MqttBroker } from './broker/broker.ts'
import { mqttWebSocketPlugin } from './broker/websocket.ts'
import { UpstreamBridge } from './upstream.ts'
import { ChainMembers } from './chain-members.ts'
import { markRewritePending, rewriteAfterNotice } from '../api/privacy/erase.ts'
import { ListenError } from './listen-error.ts'
import { Integrations } from '../api/store/integrations.ts'
import { adminIntegrationsPlugin } from '../api/http/admin-integrations.ts'
import { privacyConfig } from './privacy.ts'
import { HomeAssistant } from './integrations/home-assistant.ts'
import { loadTlsFiles } from './tls.ts'

export interface RunningService {
  config: Config
  services: Services
  app: FastifyInstance
  /** e.g. http://127.0.0.1:8080 */
  httpUrl: string
  /** Path of the file the admin token is in. */
  adminTokenFile: string
  /** With http.redirect_port: the port it listens on. */
  redirectPort?: number
  close (): Promise<void>
}

/**
 * What runs beside the service and needs a say in its start: the demo
 * (device-sim/demo-hooks.ts, wired in by bin/cli.ts). beforeSources may
 * replace the configuration before the sources are built; its stop runs after
 * theirs. afterStart runs once the service is ready; its stop runs first.
 */
export interface ServiceHooks {
  beforeSources? (config: Config, log: Logger): Promise<{ config: Config, stop (): Promise<void> } | null>
  afterStart? (running: RunningService, log: Logger): Promise<{ stop (): Promise<void> } | null>
}

export interface ServerInfo {
  url: string
  pid: number
  mqtt_port: number | null
  started_at: string
  /** With mqtt.tls: the port of MQTT over TLS. */
  mqtts_port?: number | null
  /** With http.tls: the SHA-256 fingerprint of the certificate `url` serves, which the admin CLI pins. */
  tls_fingerprint256?: string
}

/** Reads the admin token file, creating it (mode 0600) on first start. */
async function ensureAdminToken (dataDir: string): Promise<{ file: string, token: string }> {
  const file = join(dataDir, 'admin-token')
  try {
    const token = (await readFile(file, 'utf8')).trim()
    if (token.length >= 16) return { file, token }
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err
  }
  const token = newAdminToken()
  await writeFile(file, token + '\n', { mode: 0o600 })
  await chmod(file, 0o600)
  return { file, token }
}

/** pino-pretty's stream; the package is imported only here, when a person watches a terminal. */
async function prettyStream (options: PrettyOptions): Promise<PrettyStream> {
  const { default: pretty } = await import('pino-pretty')
  return pretty(options)
}

/**
 * JSON lines for journald and log shippers; readable lines when a person
 * watches a terminal. Secrets are redacted wherever they might appear.
 */
async function createLogger (config: Config): Promise<Logger> {
  const options = { level: config.log_level, redact: ['req.headers.authorization', '*.password', '*.access_token', '*.refresh_token', '*.client_secret', '*.mqtt_password'] }
  if (process.stdout.isTTY !== true) return pino(options)
  return pino(options, await prettyStream({ colorize: true, singleLine: true, ignore: 'pid,hostname,component', messageFormat: '{if component}{component}: {end}{msg}', translateTime: 'SYS:HH:MM:ss', sync: true }))
}

export function serverInfoFile (dataDir: string): string {
  return join(dataDir, 'server.json')
}

export async function startService (config: Config, options: { logger?: Logger, hooks?: ServiceHooks[] } = {}): Promise<RunningService> {
  const log = options.logger ?? await createLogger(config)
  const hooks = options.hooks ?? []
  const dataDir = resolve(config.data_dir)
  // Permission and path problems name the path ("permission denied: /var/lib/hr-relay/db").
  try { await mkdir(dataDir, { recursive: true, mode: 0o700 }) } catch (err) { throw dataDirError(dataDir, err) }
  // The notice is read before the store opens: an unreadable one stops the start with nothing to undo.
  const privacy = await privacyConfig(config)
  const store = await Store.open(dataDir)
  const stack: Array<() => Promise<void>> = [async () => { await store.close() }]
  const ignored = IGNORED_DATA_KEYS.filter(key => config.data[key] !== undefined).map(key => `data.${key}`)
  if (ignored.length > 0) log.warn({ keys: ignored }, `ignored configuration keys: ${ignored.join(', ')} (the write-ahead journal was removed: each group of readings is a LevelDB sync batch); remove them from the configuration file`)
  // An earlier version's write-ahead journal: this version neither reads nor deletes it (after an unclean stop it may
  // hold acknowledged readings that only that version can apply).
  if (existsSync(join(dataDir, 'readings-journal'))) {
    log.warn({ file: join(dataDir, 'readings-journal') }, 'found the write-ahead journal of an earlier hr-relay, which this version does not use: if that version last stopped cleanly, delete the file; if not, start that version once and stop it cleanly first, so that it applies the readings the file holds')
  }
  const closeAll = async (): Promise<void> => {
    while (stack.length > 0) {
      const step = stack.pop()
      try { await step?.() } catch (err) { log.error({ err }, 'error while stopping') }
    }
  }

  try {
    // E.g. the demo's straps (BlueZ emulator on a private D-Bus) and serial ptys: they exist before the sources are built, and stop after them.
    for (const hook of hooks) {
      const before = await hook.beforeSources?.(config, log) ?? null
      if (before !== null) { stack.push(before.stop); config = before.config }
    }
    const admin = await ensureAdminToken(dataDir).catch(err => { throw dataDirError(dataDir, err) })
    const healthSources: Array<() => HealthEntry[]> = []
    // TLS on the LAN: the certificate files are read and checked before anything listens.
    const httpTls = config.http.tls === undefined ? undefined : await loadTlsFiles('http.tls', config.http.tls)
    const mqttTls = config.mqtt.tls === undefined || !config.mqtt.enabled ? undefined : await loadTlsFiles('mqtt.tls', config.mqtt.tls)
    const scheme = httpTls === undefined ? 'http' : 'https'
    const publicUrl = config.http.public_url ?? `${scheme}://${config.http.host.includes(':') ? `[${config.http.host}]` : config.http.host}:${config.http.port}`
    const users = new Users(store)
    // Device pairing (in memory for the pipeline's owner lookup) and metrics.
    const devices = new Devices(store)
    await devices.load()
    const metrics = new Metrics({ defaultMetrics: true })
    // The upstream bridge stops after the pipeline (closers run in reverse), so readings flushed at stop are queued.
    // Once a member's erasure notice is delivered, the store is rewritten so that its bytes go too (api/privacy/erase.ts).
    const beforeNoticeDeleted = async (): Promise<void> => { await markRewritePending(store.db.location) }
    const onNoticeDelivered = (): void => { rewriteAfterNotice(store).catch((err: unknown) => { log.error({ err }, 'rewriting the store after an erasure notice failed; it runs at the next start') }) }
    const upstream = config.upstream === undefined ? null : new UpstreamBridge(config.upstream, { store, log, metrics, beforeNoticeDeleted, onNoticeDelivered })
    if (upstream !== null) {
      await upstream.start()
      stack.push(async () => { await upstream.stop() })
      healthSources.push(() => [upstream.health()])
    }
    // Readings, ingest pipeline, live hub, widgets, game-mod, rooms (issue 3).
    const data = await buildDataServices({ store, readingLog: instrumentReadingLog(store.readingLog, metrics), users, log, retention: { rawDays: config.data.raw_retention_days, rollupDays: config.data.rollup_retention_days }, streamGapSeconds: config.data.stream_gap_seconds, maxClockSkewMs: config.data.max_clock_skew_ms, consent: { required: privacy.requireConsent, noticeVersion: privacy.noticeVersion }, classes: { learnMaxHeartRate: config.classes.learn_max_heart_rate, resultsSeconds: config.classes.results_seconds }, resolveOwner: deviceId => devices.ownerOf(deviceId) })
    stack.push(async () => { await data.pipeline.stop() })
    // The class engine's timers and subscriptions; a running class stays stored and goes on at the next start.
    stack.push(async () => { data.classes.stop() })
    const offStored = data.hub.subscribeAll(r => {
      metrics.readingStored(r.source)
      if (r.device_id !== undefined) devices.readingSeen(r.device_id, r.source, r)
      upstream?.enqueue(r)
    })
    stack.push(async () => { offStored() })
    metrics.trackIngestDrops(() => data.pipeline.counters.dropped)
    metrics.trackClockSkewCorrected(() => data.pipeline.counters.clock_skew_corrected)
    metrics.trackReadingGroups(() => data.pipeline.counters)
    metrics.trackWebSocketClients(() => data.hub.streams.open)
    const services: Services = {
      store,
      users,
      clients: new Clients(store),
      tokens: new Tokens(store),
      ...data,
      devices,
      metrics,
      log,
      adminTokenDigest: adminTokenDigest(admin.token),
      health: () => healthSources.flatMap(f => f()),
      erasureHooks: upstream === null ? [] : [async who => ({ upstream_queue: await upstream.eraseProfile(who.profile_id) })],
      config: {
        publicUrl,
        rateLimitPerSecond: config.http.rate_limit_per_second,
        lifetimes: {
          implicit: config.oauth.implicit_expires_in,
          authorization_code: config.oauth.code_expires_in,
          refresh_token: config.oauth.refresh_token_expires_in,
          client_credentials: config.oauth.client_credentials_expires_in,
          device_code: config.oauth.device_code_expires_in,
          manual: config.oauth.manual_expires_in,
          code: config.oauth.authorization_code_ttl,
          device_session: config.oauth.device_session_ttl,
          device_interval: config.oauth.device_poll_interval
        },
        data: {
          rawRetentionDays: config.data.raw_retention_days,
          rollupRetentionDays: config.data.rollup_retention_days,
          streamGapSeconds: config.data.stream_gap_seconds,
          sessionGapSeconds: config.data.session_gap_seconds
        },
        privacy
      }
    }

    // Every source hands readings to the same timed pipeline.
    const ingest = instrumentIngest(data.pipeline, metrics)
    // Home Assistant MQTT discovery (off by default): the broker asks it what the integration may read.
    const integrations = new Integrations(store)
    await integrations.load()
    const homeAssistant = config.home_assistant.enabled
      ? new HomeAssistant(config.home_assistant, { users, devices, integrations, readings: data.hub, log, ...(config.upstream === undefined ? {} : { upstream: config.upstream }) })
      : null
    // The embedded MQTT broker (TCP and WebSocket at mqtt.websocket_path); it hands readings to the timed pipeline.
    const broker = config.mqtt.enabled
      ? new MqttBroker({
        host: config.mqtt.host ?? config.http.host,
        port: config.mqtt.port,
        maxPacketBytes: config.mqtt.max_packet_bytes,
        connectTimeoutMs: config.mqtt.connect_timeout_ms,
        keepaliveLimitS: config.mqtt.keepalive_limit_s,
        plain: config.mqtt.plain,
        ...(mqttTls === undefined || config.mqtt.tls === undefined ? {} : { tls: { port: config.mqtt.tls.port, cert: mqttTls.cert, key: mqttTls.key } })
      }, { devices, apps: appAuth(services.tokens), ingest, log, metrics, readings: data.hub, ...(homeAssistant === null ? {} : { integrations: homeAssistant }) })
      : null
    const features = [...apiFeatures, metricsPlugin(metrics), adminIntegrationsPlugin(integrations, { home_assistant: config.home_assistant.enabled }), ...(broker === null ? [] : [mqttWebSocketPlugin(broker, config.mqtt.websocket_path)])]
    const app = await buildServer(services, {
      bodyLimit: config.http.body_limit_bytes,
      features,
      adminRemote: config.http.admin_remote,
      timeouts: { headersMs: config.http.headers_timeout_ms, requestMs: config.http.request_timeout_ms, keepAliveMs: config.http.keep_alive_timeout_ms },
      connections: { maxPerAddress: config.http.max_connections_per_address, maxPerLoopbackAddress: config.http.max_connections_loopback },
      ...(httpTls === undefined ? {} : { tls: httpTls })
    })
    stack.push(async () => { await app.close() })
    try {
      // A longer accept queue than Node's 511, so that an accept storm does not drop a legitimate client's SYN.
      await app.listen({ host: config.http.host, port: config.http.port, backlog: 2048 })
    } catch (err) {
      throw new ListenError('HTTP', config.http.host, config.http.port, { cause: err })
    }
    const addr = app.server.address()
    const port = typeof addr === 'object' && addr !== null ? addr.port : config.http.port
    const host = config.http.host.includes(':') ? `[${config.http.host}]` : config.http.host
    const httpUrl = `${scheme}://${host === '0.0.0.0' ? '127.0.0.1' : host}:${port}`
    if (config.http.public_url === undefined) services.config.publicUrl = httpUrl
    if (httpTls !== undefined) log.info({ fingerprint256: httpTls.fingerprint256, valid_to: httpTls.validTo }, 'HTTPS: serving the certificate of http.tls.cert_file')
    // http.redirect_port: plain HTTP answered with a redirect to the HTTPS port.
    let redirectListening: number | undefined
    if (config.http.redirect_port !== undefined) {
      const redirectPort = config.http.redirect_port
      const redirect = await startRedirect({
        host: config.http.host,
        port: redirectPort,
        httpsPort: port,
        log: log.child({ component: 'http' }),
        connections: { maxPerAddress: config.http.max_connections_per_address, maxPerLoopbackAddress: config.http.max_connections_loopback },
        timeouts: { headersMs: config.http.headers_timeout_ms, requestMs: config.http.request_timeout_ms, keepAliveMs: config.http.keep_alive_timeout_ms }
      }).catch((err: unknown) => { throw new ListenError('HTTP redirect', config.http.host, redirectPort, { cause: err }) })
      stack.push(async () => { await stopRedirect(redirect) })
      const raddr = redirect.address()
      redirectListening = typeof raddr === 'object' && raddr !== null ? raddr.port : redirectPort
    }
    if (httpTls !== undefined) {
      const detail = `listening on ${host}:${port} (https)${redirectListening === undefined ? '' : `, ${host}:${redirectListening} (http, redirects to https)`}`
      healthSources.push(() => [{ id: 'http', state: 'running', detail }])
    }

    if (broker !== null) {
      await broker.start()
      stack.push(async () => { await broker.stop() })
      healthSources.push(() => [broker.health()])
    }
    if (homeAssistant !== null) {
      if (broker !== null) homeAssistant.useBroker(broker)
      await homeAssistant.start()
      stack.push(async () => { await homeAssistant.stop() })
      healthSources.push(() => [homeAssistant.health()])
    }

    // A box in a chain: the chain's members and pairings from the hub (relay/chain-members.ts); an erasure drops its record of them.
    if (config.chain !== undefined && config.upstream !== undefined) {
      const chain = new ChainMembers(config.chain, config.upstream, { store, users, devices, erase: services, log })
      // The bag's own array, which the HTTP features already hold.
      services.erasureHooks?.push(chain.erasureHook)
      await chain.start()
      stack.push(async () => { await chain.stop() })
      healthSources.push(() => [chain.health()])
    }

    // BLE straps (only those paired with a member, or on ble.allow) and serial sensors.
    const sources = new SourceManager(buildSources(config, log, id => devices.ownerOf(id) !== undefined), {
      ingest,
      sighting: d => { devices.sighting(d) },
      dropped: reason => { metrics.dropped(reason) },
      log
    })
    await sources.start()
    stack.push(async () => { await sources.stop() })
    healthSources.push(() => sources.health())
    metrics.trackConnected(() => sources.connected())
    // Several Bluetooth adapters (docs/operator.md "Several Bluetooth adapters"): each one's connections, limit and state.
    if (config.ble.enabled) metrics.trackBleAdapters(() => sources.adapters().map(a => a.adapter))
    metrics.trackSourceStates(() => sources.health())

    // Outputs: each reading of the configured member. The member is resolved
    // lazily from the hub's feed (relay/outputs/member-feed.ts), so a member
    // created after the start gets their output without a restart.
    const follow = async (username: string, id: string, write: (bpm: number) => void, status: () => { state: string, detail?: string }): Promise<void> => {
      const feed = new MemberFeed(data.hub, users, username, r => { write(r.heart_rate) }, log)
      await feed.start()
      stack.push(async () => { feed.stop() })
      if (feed.profile === undefined) log.warn({ id, username }, 'output waits for its member: no such user yet')
      healthSources.push(() => {
        if (feed.profile === undefined) return [{ id, state: 'unavailable', detail: `no user ${username}` }]
        const st = status()
        return [{ id, state: st.state, ...(st.detail === undefined ? {} : { detail: st.detail }) }]
      })
    }
    // MIDI outputs: one Note On message per reading.
    for (const m of config.midi) {
      const { MidiOutput } = await import('./outputs/midi.ts')
      const output = new MidiOutput({ path: m.path, kind: m.kind, order: m.order, channel: m.channel, logger: log })
      const controller = new AbortController()
      await output.start(controller.signal)
      stack.push(async () => { controller.abort(); await output.stop() })
      await follow(m.username, output.id, bpm => { output.write(bpm) }, () => output.status())
    }
    // OSC outputs (VRChat avatar parameters): one datagram per parameter per reading.
    for (const o of config.osc) {
      const output = new OscOutput({ host: o.host, port: o.port, minBpm: o.min_bpm, maxBpm: o.max_bpm, parameterPrefix: o.parameter_prefix, logger: log })
      await output.start()
      stack.push(async () => { await output.stop() })
      await follow(o.username, output.id, bpm => { output.write(bpm) }, () => output.status())
    }

    const info: ServerInfo = { url: httpUrl, pid: process.pid, mqtt_port: broker?.port ?? null, started_at: new Date().toISOString(), ...(broker?.tlsPort == null ? {} : { mqtts_port: broker.tlsPort }), ...(httpTls === undefined ? {} : { tls_fingerprint256: httpTls.fingerprint256 }) }
    await writeFile(serverInfoFile(dataDir), JSON.stringify(info, null, 2) + '\n', { mode: 0o600 })
    stack.push(async () => { await rm(serverInfoFile(dataDir), { force: true }) })

    const running: RunningService = { config, services, app, httpUrl, adminTokenFile: admin.file, close: closeAll, ...(redirectListening === undefined ? {} : { redirectPort: redirectListening }) }
    // E.g. the simulated gym (device-sim/demo.ts), which talks to the service only through the admin API and device transports.
    for (const hook of hooks) {
      const after = await hook.afterStart?.(running, log) ?? null
      if (after !== null) stack.push(after.stop)
    }
    log.info({ url: httpUrl, data_dir: dataDir }, 'hr-relay ready')
    return running
  } catch (err) {
    await closeAll()
    throw err
  }
}
