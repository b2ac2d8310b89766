// Who may connect, publish and subscribe on the embedded broker. Deny by
// default. This is the one place aedes's callback hooks are adapted to
// promises.
//
// - A device connects with the credentials `hr-relay admin device add` issued
//   (username = its device id, a random password stored as a scrypt hash) and
//   may publish only to `hr-relay/v1/devices/<its id>/heart_rate` and
//   `.../status`. It may not subscribe.
// - An app connects with any username and an access token as the password
//   (scope data:heart_rate:read, a user token) and may subscribe only to
//   `hr-relay/v1/users/<its profile_id>/heart_rate` and to the status topics
//   of its user's devices, exactly: no wildcards, no `$SYS`. It may not
//   publish.
// - An integration (Home Assistant) connects with the credentials of
//   `hr-relay admin integration add` (username `<name>@hr-relay`, outside the
//   device id alphabet) and reads what IntegrationAccess.mayRead allows: the
//   discovery topics and the topics of members who opted in. Any subscription
//   filter outside `$` is accepted, and every delivered message (retained ones
//   too) passes authorizeForward, so `#` does not leak other members' topics.
//   It may publish only its own birth/will (`<discovery_prefix>/status`).
// - Anonymous connections are refused (CONNACK 5), wrong credentials get 4.
// - Client ids (a client id names a session, and a second connection with the
//   same id takes the first one's place, [MQTT-3.1.4-2]); see clientIdRefusal:
//   a paired device's id is reserved for that device; a device with valid
//   credentials is never refused for its client id (it takes the id over from
//   an app or another device); an app may not take an id held by another
//   principal (CONNACK 2); every principal takes over its own sessions. Who
//   holds an id is kept from aedes's documented `client` and
//   `clientDisconnect` events.
//
// Readings: a device's publish on its own topics, once authorized here, is
// handed to the MQTT ingest source (mqtt-source.ts, a Source like BLE and
// serial), which decodes it, hands it to the pipeline and decides whether
// aedes may acknowledge it.
import type { Aedes, AuthenticateError, Client, PublishPacket, Subscription } from 'aedes'
import type { Logger } from 'pino'
import { deviceHeartRateTopic, parseDeviceTopic, userHeartRateTopic } from '../../firmware-protocol/mqtt.ts'
import type { Devices } from '../../api/store/devices.ts'
import { normalizeDeviceId } from '../../api/store/devices.ts'
import type { AppAuth } from '../../api/auth-port.ts'
import { mqttRefusalCode, type RelayErrorCode } from '../error-codes.ts'

export const READ_SCOPE = 'data:heart_rate:read'

export type Principal =
  /** heart_rate_topic: the device's own reading topic, as it is usually written (compared before any parsing). */
  | { kind: 'device', device_id: string, profile_id: string, heart_rate_topic: string | undefined }
  | { kind: 'app', profile_id: string, token_digest: string, expires_at: number }
  | { kind: 'integration', name: string }

/** What the broker asks an integration (relay/integrations/home-assistant.ts). */
export interface IntegrationAccess {
  verify (username: string, password: string): { name: string } | undefined
  mayRead (topic: string): boolean
  mayPublish (topic: string): boolean
}

/** The subset of Metrics the broker reports to. */
export interface BrokerMetrics {
  dropped (reason: string): void
}

/**
 * Where an authorized device's publish goes (mqtt-source.ts). Resolves to let
 * aedes acknowledge it, rejects with MqttRefusal to refuse it.
 */
export interface DevicePublishes {
  publish (deviceId: string, kind: 'heart_rate' | 'status', packet: PublishPacket, willOfClosedClient: boolean): Promise<void>
}

export interface AuthDeps {
  devices: Devices
  /** Apps' access tokens (api/auth-port.ts). */
  apps: AppAuth
  /** The MQTT ingest source: what authorized devices publish. */
  ingest: DevicePublishes
  metrics?: BrokerMetrics
  log: Logger
  now?: () => number
  /** Integrations that may read (Home Assistant); none when absent. */
  integrations?: IntegrationAccess
}

export class MqttRefusal extends Error {
  /** Stable, from the reason (relay/error-codes.ts); the reason is the metrics label. */
  readonly code: RelayErrorCode
  constructor (message: string, readonly reason: string) { super(message); this.name = 'MqttRefusal'; this.code = mqttRefusalCode(reason) }
}

function connackError (message: string, returnCode: 2 | 3 | 4 | 5): AuthenticateError {
  const err = new Error(message) as AuthenticateError
  err.returnCode = returnCode as AuthenticateError['returnCode']
  return err
}

/**
 * The reading topic a device's publishes are compared with first: undefined (always parse) for an id that the
 * topic check would not accept as its own as it is.
 */
function ownReadingTopic (deviceId: string): string | undefined {
  if (normalizeDeviceId(deviceId) !== deviceId) return undefined
  try {
    const topic = deviceHeartRateTopic(deviceId)
    const parsed = parseDeviceTopic(topic)
    return parsed?.kind === 'heart_rate' && parsed.device_id === deviceId ? topic : undefined
  } catch {
    return undefined
  }
}

function samePrincipal (a: Principal, b: Principal): boolean {
  if (a.kind === 'device' && b.kind === 'device') return a.device_id === b.device_id
  if (a.kind === 'app' && b.kind === 'app') return a.profile_id === b.profile_id
  if (a.kind === 'integration' && b.kind === 'integration') return a.name === b.name
  return false
}

export class BrokerAuth {
  private readonly principals = new WeakMap<Client, Principal>()
  /**
   * The registered connection of each client id, kept from aedes's `client`
   * event (a connection registered, after any takeover of its id finished)
   * and `clientDisconnect` event (only the connection that holds the id
   * releases it).
   */
  private readonly holders = new Map<string, Client>()
  /** Apps' access tokens, kept in memory only to re-check revocation; never logged. */
  private readonly secrets = new WeakMap<Client, string>()
  private readonly now: () => number

  constructor (private readonly deps: AuthDeps) {
    this.now = deps.now ?? Date.now
  }

  principalOf (client: Client): Principal | undefined {
    return this.principals.get(client)
  }

  /** Installs the hooks and the client-id listeners on an aedes instance; returns what removes the listeners. */
  install (aedes: Aedes): () => void {
    const registered = (client: Client): void => { this.holders.set(client.id, client) }
    const released = (client: Client): void => { if (this.holders.get(client.id) === client) this.holders.delete(client.id) }
    aedes.on('client', registered)
    aedes.on('clientDisconnect', released)
    aedes.authenticate = (client, username, password, done) => {
      this.authenticate(client, username, password).then(
        principal => { this.principals.set(client, principal); done(null, true) },
        (err: AuthenticateError) => { done(err, false) })
    }
    aedes.authorizePublish = (client, packet, done) => {
      this.authorizePublish(client, packet).then(() => { done(null) }, (err: Error) => { done(err) })
    }
    aedes.authorizeSubscribe = (client, sub, done) => {
      this.authorizeSubscribe(client, sub).then(s => { done(null, s) }, () => { done(null, null) })
    }
    aedes.authorizeForward = (client, packet) => this.authorizeForward(client, packet.topic) ? packet : null
    return () => {
      aedes.off('client', registered)
      aedes.off('clientDisconnect', released)
      this.holders.clear()
    }
  }

  async authenticate (client: Client, username: string | undefined, password: Buffer | undefined): Promise<Principal> {
    const log = this.deps.log
    if (username === undefined || password === undefined || password.length === 0) {
      log.info({ client_id: client.id }, 'anonymous MQTT connection refused')
      throw connackError('anonymous connections are not allowed', 5)
    }
    if (password.length > 512) throw connackError('bad user name or password', 4)
    const secret = password.toString('utf8')
    let principal: Principal
    if (this.deps.apps.isAccessToken(secret)) {
      const found = await this.deps.apps.authenticate(secret, this.now())
      if (!found.ok) {
        log.info({ client_id: client.id, reason: found.reason }, 'MQTT app token refused')
        throw connackError('bad user name or password', 4)
      }
      if (found.profile_id === null || !found.scopes.includes(READ_SCOPE)) {
        log.info({ client_id: client.id }, `MQTT app token without ${READ_SCOPE} or without a user refused`)
        throw connackError('not authorized', 5)
      }
      principal = { kind: 'app', profile_id: found.profile_id, token_digest: found.digest, expires_at: found.expires_at }
      this.secrets.set(client, secret)
    } else if (username.includes('@') && this.deps.integrations !== undefined) {
      const integration = this.deps.integrations.verify(username, secret)
      if (integration === undefined) {
        log.info({ client_id: client.id, username }, 'MQTT integration credentials refused')
        throw connackError('bad user name or password', 4)
      }
      principal = { kind: 'integration', name: integration.name }
    } else {
      const device = await this.deps.devices.verifyMqtt(username, secret)
      if (device === undefined) {
        log.info({ client_id: client.id, username }, 'MQTT device credentials refused')
        throw connackError('bad user name or password', 4)
      }
      principal = { kind: 'device', device_id: device.device_id, profile_id: device.profile_id, heart_rate_topic: ownReadingTopic(device.device_id) }
    }
    const refusal = this.clientIdRefusal(client, principal)
    if (refusal !== undefined) {
      log.info({ client_id: client.id.slice(0, 200), kind: principal.kind }, refusal)
      throw connackError('identifier rejected', 2)
    }
    return principal
  }

  /**
   * Why `principal` may not use the client id, or undefined when it may.
   * 1. A paired device's id (compared as device ids are) is that device's own:
   *    nobody else may use it as a client id, whether the device is connected or not.
   * 2. Otherwise a device may use any client id; a connection that holds it (an
   *    app, another device) is taken over, so no one can keep a device out.
   * 3. An app may use an id that no other principal holds; the same principal
   *    (the same device, or an app of the same user) takes over its own session.
   */
  private clientIdRefusal (client: Client, principal: Principal): string | undefined {
    const id = client.id
    const owner = this.deps.devices.ownerOf(id) === undefined ? undefined : normalizeDeviceId(id)
    if (owner !== undefined && !(principal.kind === 'device' && principal.device_id === owner)) return 'MQTT client id reserved for another device refused'
    if (principal.kind === 'device') return undefined
    const existing = this.holders.get(id)
    const holder = existing === undefined || existing === client ? undefined : this.principals.get(existing)
    if (holder !== undefined && !samePrincipal(holder, principal)) return 'MQTT client id in use by another principal refused'
    return undefined
  }

  private refuse (reason: string, message: string): MqttRefusal {
    this.deps.metrics?.dropped(reason)
    return new MqttRefusal(message, reason)
  }

  async authorizePublish (client: Client | null, packet: PublishPacket): Promise<void> {
    // null: a stale will of a client that is gone; refused.
    if (client === null) throw this.refuse('mqtt_unauthorized_publish', 'publish without a client')
    const principal = this.principals.get(client)
    if (principal?.kind === 'integration' && this.deps.integrations?.mayPublish(packet.topic) === true) {
      // Home Assistant's birth and last will: passed on, never retained.
      packet.retain = false
      return
    }
    if (principal === undefined || principal.kind !== 'device') throw this.refuse('mqtt_unauthorized_publish', 'only devices may publish')
    // Nearly every publish is a reading on the device's own topic, spelled as the relay spells it: one string
    // comparison instead of splitting the topic and normalizing the id (which allocated for every reading).
    if (packet.topic === principal.heart_rate_topic) {
      await this.deps.ingest.publish(principal.device_id, 'heart_rate', packet, client.closed)
      return
    }
    const topic = parseDeviceTopic(packet.topic)
    if (topic === null || normalizeDeviceId(topic.device_id) !== principal.device_id) {
      this.deps.log.warn({ device_id: principal.device_id, topic: packet.topic.slice(0, 200) }, 'MQTT publish to a foreign topic refused')
      throw this.refuse('mqtt_unauthorized_publish', `device ${principal.device_id} may not publish to ${packet.topic}`)
    }
    await this.deps.ingest.publish(principal.device_id, topic.kind, packet, client.closed)
  }

  async authorizeSubscribe (client: Client, sub: Subscription): Promise<Subscription | null> {
    const principal = this.principals.get(client)
    if (principal?.kind === 'integration') return this.integrationSubscription(client, sub)
    if (principal?.kind !== 'app') return null
    // Exact topics only: '+', '#' and '$SYS/...' never equal one of them.
    if (!this.appMayRead(principal.profile_id, sub.topic)) {
      this.deps.log.info({ client_id: client.id, topic: sub.topic.slice(0, 200) }, 'MQTT subscription refused')
      return null
    }
    if (!await this.stillValid(client)) return null
    return { ...sub, qos: Math.min(sub.qos, 1) as 0 | 1 }
  }

  /** Delivery check (synchronous in aedes): only the app's own user topic, only while its token is valid. */
  authorizeForward (client: Client, topic: string): boolean {
    const principal = this.principals.get(client)
    if (principal?.kind === 'integration') return this.deps.integrations?.mayRead(topic) === true
    if (principal?.kind !== 'app') return false
    if (principal.expires_at <= this.now()) {
      client.close()
      return false
    }
    return this.appMayRead(principal.profile_id, topic)
  }

  /** Any filter but `$...` ([MQTT-4.7.2-1]: wildcards never match `$` topics); each message is checked in authorizeForward. */
  private integrationSubscription (client: Client, sub: Subscription): Subscription | null {
    if (this.deps.integrations === undefined || sub.topic.startsWith('$')) {
      this.deps.log.info({ client_id: client.id, topic: sub.topic.slice(0, 200) }, 'MQTT subscription refused')
      return null
    }
    return { ...sub, qos: Math.min(sub.qos, 1) as 0 | 1 }
  }

  /** An app reads its user's reading topic and the status topics of that user's devices. */
  private appMayRead (profileId: string, topic: string): boolean {
    if (topic === userHeartRateTopic(profileId)) return true
    const device = parseDeviceTopic(topic)
    return device !== null && device.kind === 'status' && this.deps.devices.ownerOf(device.device_id) === profileId
  }

  /** False once an app's token was revoked or expired (re-checked on every subscription). */
  async stillValid (client: Client): Promise<boolean> {
    const principal = this.principals.get(client)
    if (principal?.kind !== 'app') return true
    if (principal.expires_at <= this.now()) return false
    const token = this.secrets.get(client)
    if (token === undefined) return false
    const found = await this.deps.apps.authenticate(token, this.now())
    return found.ok && found.digest === principal.token_digest
  }
}
