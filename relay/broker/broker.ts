// The embedded MQTT broker (aedes 1.x) on a TCP port, and the entry point for
// MQTT over WebSocket (websocket.ts). Every connection passes the byte limit
// (limits.ts) before aedes sees it; auth.ts decides who may do what, and
// mqtt-source.ts (a Source) takes what devices publish into the pipeline. The
// broker publishes each device's availability (retained `online`/`offline`)
// and each stored reading on the owner's user topic for local consumers.
import { createServer, type Server, type Socket } from 'node:net'
import { createServer as createTlsServer } from 'node:tls'
import type { IncomingMessage } from 'node:http'
import type { Duplex } from 'node:stream'
import { Aedes, type Client } from 'aedes'
import { writeToStream } from 'mqtt-packet'
import type { Logger } from 'pino'
import { deviceStatusTopic, encodeUserReading, filterMatchesUserHeartRate, userHeartRateTopic, STATUS_OFFLINE, STATUS_ONLINE } from '../../firmware-protocol/mqtt.ts'
import type { Ingest, IngestResult, Reading, StoredReading } from '../../api/pipeline/reading.ts'
import type { Devices } from '../../api/store/devices.ts'
import type { AppAuth } from '../../api/auth-port.ts'
import type { HealthEntry } from '../../api/services.ts'
import { BrokerAuth, type BrokerMetrics, type IntegrationAccess } from './auth.ts'
import { MqttSource } from './mqtt-source.ts'
import type { SourceSink } from '../sources/source.ts'
import { gateStream } from './limits.ts'
import { ListenError } from '../listen-error.ts'

/**
 * mqtt-packet (the codec aedes writes every packet with) caches a Buffer for each of the 65,536 two-byte numbers
 * on its first write: megabytes of heap that a relay box keeps for its whole life, to save a 2-byte allocation per
 * packet id. Its documented switch turns that off; set before the broker writes anything.
 */
writeToStream.cacheNumbers = false

export interface BrokerConfig {
  host: string
  port: number
  maxPacketBytes: number
  connectTimeoutMs: number
  /** Largest keepalive a client may ask for (s); 0 = no limit. With a limit, keepalive 0 (never idle-checked) is refused. */
  keepaliveLimitS: number
  /** Listen for plain MQTT on `port` (mqtt.plain, default true); false: TLS and WebSocket only. */
  plain?: boolean
  /** MQTT over TLS (mqtt.tls) on its own port, with this certificate and key (PEM). */
  tls?: { port: number, cert: Buffer, key: Buffer }
}

export interface BrokerMetricsSink extends BrokerMetrics {
  setBrokerClients (kind: 'device' | 'app', n: number): void
}

/** Stored readings, fanned out by the live hub. */
export interface ReadingFeed {
  subscribeAll (fn: (reading: StoredReading) => void): () => void
}

export interface BrokerDeps {
  devices: Devices
  /** Apps' access tokens (api/auth-port.ts): who an app is, and when its connection must end. */
  apps: AppAuth
  ingest: Ingest
  log: Logger
  metrics?: BrokerMetricsSink
  /** When given, each stored reading is published on its owner's user topic. */
  readings?: ReadingFeed
  /** Integrations (Home Assistant) that read members' topics; onReplaced fires when their password changes. */
  integrations?: IntegrationAccess & { onReplaced (fn: () => void): () => void }
  /**
   * The device ingest source, when the caller owns its lifecycle (the
   * conformance suite starts it with its own sink). Otherwise the broker
   * builds one and starts it with a sink onto `ingest`, `metrics` and `devices`.
   */
  source?: MqttSource
}

export class MqttBroker {
  readonly id = 'mqtt'
  private aedes: Aedes | null = null
  private server: Server | null = null
  private readonly auth: BrokerAuth
  /** Device readings and status (mqtt-source.ts). */
  readonly source: MqttSource
  private readonly ownsSource: boolean
  private sourceAbort: AbortController | null = null
  private readonly conns = new Set<Duplex>()
  /** Subscriptions whose filter matches a member's heart-rate topic (countUserTopicSubscriptions). */
  private userTopicSubscriptions = 0
  private readonly cleanups: Array<() => void> = []
  private readonly deviceClients = new Map<string, Set<Client>>()
  /** Connected apps, each with the function that stops watching its token. */
  private appClients = new Map<Client, () => void>()
  private readonly integrationClients = new Set<Client>()
  private listenPort: number | null = null
  private tlsServer: Server | null = null
  private tlsListenPort: number | null = null
  private state: HealthEntry = { id: 'mqtt', state: 'stopped' }
  private readonly log: Logger

  constructor (private readonly config: BrokerConfig, private readonly deps: BrokerDeps) {
    this.log = deps.log.child({ component: 'mqtt' })
    this.ownsSource = deps.source === undefined
    this.source = deps.source ?? new MqttSource(this.log)
    this.auth = new BrokerAuth({
      devices: deps.devices,
      apps: deps.apps,
      ingest: this.source,
      log: this.log,
      ...(deps.metrics === undefined ? {} : { metrics: deps.metrics }),
      ...(deps.integrations === undefined ? {} : { integrations: deps.integrations })
    })
  }

  /** The TCP port the broker listens on for plain MQTT (after start; null with mqtt.plain false). */
  get port (): number | null { return this.listenPort }

  /** The TCP port of MQTT over TLS (after start; null without mqtt.tls). */
  get tlsPort (): number | null { return this.tlsListenPort }

  /** How many subscriptions match a member's heart-rate topic now; with none, stored readings are not published. */
  get userTopicSubscribers (): number { return this.userTopicSubscriptions }

  /** The sink of a source the broker owns: the pipeline, the metrics and the pairing list. */
  private sourceSink (): SourceSink {
    return {
      reading: async reading => {
        const result = await this.deps.ingest.submit(reading)
        this.readingHandled(reading, result)
        return result
      },
      status: () => { /* the broker reports its own health (health()) */ },
      device: sighting => { this.deps.devices.sighting(sighting) },
      dropped: reason => { this.deps.metrics?.dropped(reason) }
    }
  }

  async start (): Promise<void> {
    this.state = { id: 'mqtt', state: 'starting' }
    if (this.ownsSource) {
      this.sourceAbort = new AbortController()
      await this.source.start(this.sourceAbort.signal, this.sourceSink())
    }
    const aedes = await Aedes.createBroker({
      connectTimeout: this.config.connectTimeoutMs,
      keepaliveLimit: this.config.keepaliveLimitS,
      drainTimeout: 30_000,
      // $SYS stays closed to clients (auth.ts); no need to publish a heartbeat often.
      heartbeatInterval: 3_600_000
    })
    this.aedes = aedes
    this.countUserTopicSubscriptions(aedes)
    this.cleanups.push(this.auth.install(aedes))
    const onReady = (client: Client): void => { this.clientReady(client) }
    const onGone = (client: Client): void => { this.clientGone(client) }
    const onError = (client: Client, err: Error): void => { this.log.debug({ client_id: client?.id, err: err.message, code: (err as { code?: unknown }).code }, 'MQTT client error') }
    aedes.on('clientReady', onReady)
    aedes.on('clientDisconnect', onGone)
    aedes.on('clientError', onError)
    aedes.on('connectionError', onError)
    this.cleanups.push(() => {
      aedes.off('clientReady', onReady)
      aedes.off('clientDisconnect', onGone)
      aedes.off('clientError', onError)
      aedes.off('connectionError', onError)
    })
    this.cleanups.push(this.deps.devices.onRemoved(device => {
      for (const client of this.deviceClients.get(device.device_id) ?? []) client.close()
    }))
    // New integration credentials end the connections made with the old ones.
    if (this.deps.integrations !== undefined) this.cleanups.push(this.deps.integrations.onReplaced(() => { for (const c of this.integrationClients) c.close() }))
    if (this.deps.readings !== undefined) this.cleanups.push(this.deps.readings.subscribeAll(r => { this.publishReading(r) }))

    const listeners: string[] = []
    if (this.config.plain !== false) {
      const server = createServer(socket => { this.handle(socket) })
      this.server = server
      this.listenPort = await this.listen(server, 'MQTT', this.config.port)
      listeners.push(`${this.config.host}:${this.listenPort} (mqtt)`)
    }
    const tls = this.config.tls
    if (tls !== undefined) {
      // aedes takes any duplex stream: each connection whose TLS handshake succeeded goes the way of a TCP one.
      const server = createTlsServer({ cert: tls.cert, key: tls.key, handshakeTimeout: this.config.connectTimeoutMs }, socket => { this.handle(socket) })
      server.on('tlsClientError', (err: NodeJS.ErrnoException) => { this.log.debug({ code: err.code }, 'MQTT TLS handshake failed') })
      this.tlsServer = server
      this.tlsListenPort = await this.listen(server, 'MQTTS', tls.port)
      listeners.push(`${this.config.host}:${this.tlsListenPort} (mqtts)`)
    }
    this.state = { id: 'mqtt', state: 'running', detail: listeners.length === 0 ? 'no TCP listener (mqtt.plain false, no mqtt.tls): WebSocket only' : `listening on ${listeners.join(', ')}`, connected: 0 }
    this.log.info({ host: this.config.host, port: this.listenPort, tls_port: this.tlsListenPort }, 'MQTT broker listening')
  }

  /** Listens on the broker's host; a failure stops the broker (aedes' timers would keep the process alive) and throws a ListenError. */
  private async listen (server: Server, what: string, port: number): Promise<number> {
    try {
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject)
        server.listen({ host: this.config.host, port }, () => { server.off('error', reject); resolve() })
      })
    } catch (err) {
      await this.stop()
      this.state = { id: 'mqtt', state: 'unavailable', detail: `cannot listen on port ${port}` }
      throw new ListenError(what, this.config.host, port, { cause: err })
    }
    server.on('error', err => { this.log.error({ err }, `${what} listener error`) })
    const addr = server.address()
    return typeof addr === 'object' && addr !== null ? addr.port : port
  }

  /** Hands one connection (a TCP socket or a WebSocket stream) to aedes behind the byte limit. */
  handle (stream: Duplex, req?: IncomingMessage): void {
    const aedes = this.aedes
    if (aedes === null || aedes.closed) { stream.destroy(); return }
    if (stream.listenerCount('error') === 0) stream.on('error', () => { /* aedes reports the connection's errors once it handles it */ })
    const limited = gateStream(stream, this.config.maxPacketBytes, err => {
      this.deps.metrics?.dropped('mqtt_packet_too_large')
      this.log.warn({ remote: (stream as Socket).remoteAddress, err: err.message, code: (err as { code?: unknown }).code }, 'MQTT connection closed: packet above the byte limit')
    })
    this.conns.add(limited)
    limited.once('close', () => { this.conns.delete(limited) })
    aedes.handle(limited, req)
  }

  /**
   * Counts the subscriptions whose filter matches a member's heart-rate topic. Every subscription of a client
   * (and of an integration) reaches aedes' matcher through `aedes.subscribe`/`aedes.unsubscribe`, so both are
   * wrapped on this instance; a filter counts once per subscriber function, as aedes registers it. A count too
   * high (a subscribe aedes then refuses) only costs a publish nobody receives; it never withholds one.
   */
  private countUserTopicSubscriptions (aedes: Aedes): void {
    const byFilter = new Map<string, Set<unknown>>()
    this.userTopicSubscriptions = 0
    const subscribe = aedes.subscribe.bind(aedes)
    const unsubscribe = aedes.unsubscribe.bind(aedes)
    aedes.subscribe = (topic, func, done) => {
      if (filterMatchesUserHeartRate(topic)) {
        let funcs = byFilter.get(topic)
        if (funcs === undefined) { funcs = new Set(); byFilter.set(topic, funcs) }
        if (!funcs.has(func)) { funcs.add(func); this.userTopicSubscriptions++ }
      }
      subscribe(topic, func, done)
    }
    aedes.unsubscribe = (topic, func, done) => {
      const funcs = byFilter.get(topic)
      if (funcs?.delete(func) === true) {
        this.userTopicSubscriptions--
        if (funcs.size === 0) byFilter.delete(topic)
      }
      unsubscribe(topic, func, done)
    }
  }

  /**
   * Publishes a stored reading on `hr-relay/v1/users/<profile_id>/heart_rate` (QoS 0, not retained), when some
   * subscription matches such a topic: a reading nobody subscribed to costs no packet, topic match or encoding
   * (a QoS 0 message to no subscriber is not kept anywhere).
   */
  publishReading (r: StoredReading): void {
    const aedes = this.aedes
    if (aedes === null || aedes.closed || this.userTopicSubscriptions === 0) return
    let topic: string
    try { topic = userHeartRateTopic(r.profile_id) } catch { return }
    aedes.publish({ cmd: 'publish', topic, payload: Buffer.from(encodeUserReading(r)), qos: 0, retain: false, dup: false }, err => {
      if (err !== undefined && err !== null) this.log.debug({ err }, 'user topic publish failed')
    })
  }

  /** Publishes a retained message (QoS 1) from the relay itself; an empty payload clears the retained message. */
  async publishRetained (topic: string, payload: string): Promise<void> {
    const aedes = this.aedes
    if (aedes === null || aedes.closed) return
    await new Promise<void>((resolve, reject) => {
      aedes.publish({ cmd: 'publish', topic, payload: Buffer.from(payload), qos: 1, retain: true, dup: false }, err => {
        if (err !== undefined && err !== null) reject(err); else resolve()
      })
    })
  }

  private readingHandled (reading: Reading, result: IngestResult): void {
    if (reading.device_id === undefined) return
    this.deps.devices.readingSeen(reading.device_id, 'mqtt', reading)
  }

  private publishStatus (deviceId: string, status: string): void {
    const aedes = this.aedes
    if (aedes === null || aedes.closed) return
    aedes.publish({ cmd: 'publish', topic: deviceStatusTopic(deviceId), payload: Buffer.from(status), qos: 1, retain: true, dup: false }, err => {
      if (err !== undefined && err !== null) this.log.debug({ err }, 'status publish failed')
    })
  }

  private clientReady (client: Client): void {
    const principal = this.auth.principalOf(client)
    if (principal === undefined) return
    if (principal.kind === 'device') {
      let set = this.deviceClients.get(principal.device_id)
      if (set === undefined) { set = new Set(); this.deviceClients.set(principal.device_id, set) }
      set.add(client)
      this.source.deviceConnected(principal.device_id)
      this.publishStatus(principal.device_id, STATUS_ONLINE)
      this.log.info({ device_id: principal.device_id, client_id: client.id }, 'MQTT device connected')
    } else if (principal.kind === 'integration') {
      this.integrationClients.add(client)
      this.log.info({ integration: principal.name, client_id: client.id }, 'MQTT integration connected')
    } else {
      // The connection lasts as long as its token: revocation (a token store event) or expiry (a timer) closes it.
      this.appClients.set(client, this.deps.apps.watch(principal.token_digest, principal.expires_at, why => {
        this.log.info({ client_id: client.id, why }, 'MQTT app token no longer valid; disconnecting')
        client.close()
      }))
      this.log.info({ profile_id: principal.profile_id, client_id: client.id }, 'MQTT app connected')
    }
    this.countClients()
  }

  private clientGone (client: Client): void {
    const principal = this.auth.principalOf(client)
    if (principal === undefined) return
    if (principal.kind === 'device') {
      this.source.deviceGone(principal.device_id)
      const set = this.deviceClients.get(principal.device_id)
      if (set?.delete(client) === true && set.size === 0) {
        this.deviceClients.delete(principal.device_id)
        this.publishStatus(principal.device_id, STATUS_OFFLINE)
        this.log.info({ device_id: principal.device_id }, 'MQTT device disconnected')
      }
    } else if (principal.kind === 'integration') {
      this.integrationClients.delete(client)
    } else {
      this.appClients.get(client)?.()
      this.appClients.delete(client)
    }
    this.countClients()
  }

  private countClients (): void {
    let devices = 0
    for (const set of this.deviceClients.values()) devices += set.size
    this.deps.metrics?.setBrokerClients('device', devices)
    this.deps.metrics?.setBrokerClients('app', this.appClients.size)
    if (this.state.state === 'running') this.state = { ...this.state, connected: devices }
  }

  health (): HealthEntry {
    return { ...this.state }
  }

  async stop (): Promise<void> {
    for (const fn of this.cleanups.splice(0)) fn()
    const servers = [this.server, this.tlsServer].filter((s): s is Server => s !== null)
    const aedes = this.aedes
    this.server = null
    this.tlsServer = null
    const closed = Promise.all(servers.map(async server => { await new Promise<void>(resolve => { server.close(() => { resolve() }) }) }))
    if (aedes !== null) await new Promise<void>(resolve => { aedes.close(() => { resolve() }) })
    for (const conn of this.conns) conn.destroy()
    this.conns.clear()
    await closed
    this.deviceClients.clear()
    this.integrationClients.clear()
    for (const stopWatching of this.appClients.values()) stopWatching()
    this.appClients = new Map()
    if (this.ownsSource) {
      this.sourceAbort?.abort()
      this.sourceAbort = null
      await this.source.stop()
    }
    this.state = { id: 'mqtt', state: 'stopped' }
  }
}
