// Home Assistant MQTT discovery. Every member who opted in
// (UserRecord.home_assistant) is "announced": the relay publishes a retained
// discovery config for each of their entities, on the embedded broker and,
// when one is configured, on the upstream broker (a separate connection with
// its own last will), so they appear in Home Assistant without YAML. Each
// announced member has the heart-rate sensor, whatever sends their readings (a
// strap through the relay, or an app through POST /api/v1/data); a member with
// at least one paired device also has the strap's battery and connection state.
//
// Topics (P = topic prefix: `hr-relay/v1` on the embedded broker,
// upstream.topic_prefix upstream; D = home_assistant.discovery_prefix):
//   D/sensor/hr_relay_<id>/heart_rate/config      retained discovery config
//   D/sensor/hr_relay_<id>/battery/config         retained discovery config
//   D/binary_sensor/hr_relay_<id>/connected/config retained discovery config
//   P/users/<profile_id>/heart_rate   each stored reading (not retained):
//                                     {"measured_at":…,"data":{"heart_rate":72},…}
//   P/users/<profile_id>/state        retained {"connected":true,"battery_percent":87|null}
//   P/relay/status                    retained `online` / `offline` (upstream: the last will)
// <id> is the profile id with '-' as '_'. Opting out publishes an empty
// retained payload on each config topic (Home Assistant removes the entities)
// and on the state topic; unpairing a member's last device does so for the
// battery and connection configs and the state topic only.
//
// Field names follow Home Assistant's MQTT discovery schema (sensor.mqtt,
// binary_sensor.mqtt, "Using availability topics", device registry fields);
// `default_entity_id` replaced `object_id` in Home Assistant 2025.10.
import type { MqttClient } from 'mqtt'
import { randomUUID } from 'node:crypto'
import type { Logger } from 'pino'
import type { UserRecord, Users } from '../../api/store/users.ts'
import type { Devices } from '../../api/store/devices.ts'
import type { IntegrationName, Integrations } from '../../api/store/integrations.ts'
import type { StoredReading } from '../../api/pipeline/reading.ts'
import type { HealthEntry } from '../../api/services.ts'
import { TOPIC_PREFIX, STATUS_OFFLINE, STATUS_ONLINE } from '../../firmware-protocol/mqtt.ts'
import { loadMqttConnect, type MqttConnect } from '../mqtt-client.ts'

export const SW_VERSION = '0.1.0'
export const MANUFACTURER = 'hr-relay'
export const MODEL = 'hr-relay member'

export interface HomeAssistantConfig {
  discovery_prefix: string
}

export interface UpstreamTarget {
  url: string
  username?: string
  password?: string
  client_id?: string
  topic_prefix: string
}

export interface MemberState { connected: boolean, battery_percent: number | null }

export interface DiscoveryMessage { topic: string, payload: Record<string, unknown> }

const trim = (p: string): string => p.replace(/\/+$/, '')

export function relayStatusTopic (topicPrefix: string): string { return `${trim(topicPrefix)}/relay/status` }
export function memberStateTopic (topicPrefix: string, profileId: string): string { return `${trim(topicPrefix)}/users/${profileId}/state` }
export function memberHeartRateTopic (topicPrefix: string, profileId: string): string { return `${trim(topicPrefix)}/users/${profileId}/heart_rate` }

/** `hr_relay_<id>`: discovery node ids and entity ids allow [a-z0-9_] ([a-zA-Z0-9_-] for topics). */
export function nodeId (profileId: string): string {
  return `hr_relay_${profileId.toLowerCase().replace(/[^a-z0-9_]/g, '_')}`
}

/** The config topics of a member: heart rate first, then the two of a member with a paired device (battery, connected). */
export function discoveryTopics (discoveryPrefix: string, profileId: string): string[] {
  const d = trim(discoveryPrefix)
  const node = nodeId(profileId)
  return [`${d}/sensor/${node}/heart_rate/config`, `${d}/sensor/${node}/battery/config`, `${d}/binary_sensor/${node}/connected/config`]
}

/** The config topics that only a member with a paired device has. */
export function deviceDiscoveryTopics (discoveryPrefix: string, profileId: string): string[] {
  return discoveryTopics(discoveryPrefix, profileId).slice(1)
}

/**
 * The discovery configs of a member for one broker (its topic prefix): the heart-rate sensor, and with
 * `withDevice` the strap's battery and connection state too.
 */
export function discoveryConfigs (user: Pick<UserRecord, 'profile_id' | 'username' | 'display_name'>, discoveryPrefix: string, topicPrefix: string, withDevice = true): DiscoveryMessage[] {
  const node = nodeId(user.profile_id)
  const [hrTopic, batteryTopic, connectedTopic] = discoveryTopics(discoveryPrefix, user.profile_id) as [string, string, string]
  const common = {
    availability: [{ topic: relayStatusTopic(topicPrefix), payload_available: STATUS_ONLINE, payload_not_available: STATUS_OFFLINE }],
    device: { identifiers: [node], name: user.display_name ?? user.username, manufacturer: MANUFACTURER, model: MODEL, sw_version: SW_VERSION },
    origin: { name: 'hr-relay', sw_version: SW_VERSION }
  }
  const state = memberStateTopic(topicPrefix, user.profile_id)
  const heartRate: DiscoveryMessage = {
    topic: hrTopic,
    payload: {
      name: 'Heart rate',
      unique_id: `${node}_heart_rate`,
      default_entity_id: `sensor.${node}_heart_rate`,
      state_topic: memberHeartRateTopic(topicPrefix, user.profile_id),
      value_template: '{{ value_json.data.heart_rate }}',
      unit_of_measurement: 'bpm',
      state_class: 'measurement',
      icon: 'mdi:heart-pulse',
      ...common
    }
  }
  if (!withDevice) return [heartRate]
  return [
    heartRate,
    {
      topic: batteryTopic,
      payload: {
        name: 'Strap battery',
        unique_id: `${node}_battery`,
        default_entity_id: `sensor.${node}_battery`,
        state_topic: state,
        value_template: '{{ value_json.battery_percent }}',
        device_class: 'battery',
        unit_of_measurement: '%',
        state_class: 'measurement',
        entity_category: 'diagnostic',
        ...common
      }
    },
    {
      topic: connectedTopic,
      payload: {
        name: 'Strap connected',
        unique_id: `${node}_connected`,
        default_entity_id: `binary_sensor.${node}_connected`,
        state_topic: state,
        value_template: "{{ 'ON' if value_json.connected else 'OFF' }}",
        payload_on: 'ON',
        payload_off: 'OFF',
        device_class: 'connectivity',
        entity_category: 'diagnostic',
        ...common
      }
    }
  ]
}

/** What the integration needs from the embedded broker. */
export interface RetainedPublisher {
  publishRetained (topic: string, payload: string): Promise<void>
}

interface Sink {
  topicPrefix: string
  publish (topic: string, payload: string): Promise<void>
}

export interface HomeAssistantDeps {
  users: Users
  devices: Devices
  integrations: Integrations
  readings: { subscribeAll (fn: (r: StoredReading) => void): () => void }
  log: Logger
  upstream?: UpstreamTarget
  /** How often paired devices and their connection/battery are re-read (ms); default 5000. */
  refreshMs?: number
  reconnectPeriodMs?: number
}

export class HomeAssistant {
  readonly id = 'home_assistant'
  private readonly log: Logger
  private embedded: RetainedPublisher | null = null
  private upstream: MqttClient | null = null
  private readonly optedIn = new Map<string, UserRecord>()
  /** Announced members: the state last published for each, null for a member without a paired device. */
  private readonly announced = new Map<string, string | null>()
  private readonly cleanups: Array<() => void> = []
  private timer: NodeJS.Timeout | null = null
  private work: Promise<void> = Promise.resolve()
  private stopped = true

  constructor (private readonly config: HomeAssistantConfig, private readonly deps: HomeAssistantDeps) {
    this.log = deps.log.child({ component: 'home_assistant' })
  }

  /** The embedded broker (set before start; the broker asks this object who may read what). */
  useBroker (broker: RetainedPublisher): void { this.embedded = broker }

  get discoveryPrefix (): string { return trim(this.config.discovery_prefix) }

  // --- broker access (relay/broker/auth.ts) ---

  verify (username: string, password: string): { name: IntegrationName } | undefined {
    const record = this.deps.integrations.verifyMqtt(username, password)
    return record === undefined ? undefined : { name: record.name }
  }

  onReplaced (fn: () => void): () => void { return this.deps.integrations.onReplaced(() => { fn() }) }

  /** Home Assistant reads discovery topics, the relay status and the topics of announced members only. */
  mayRead (topic: string): boolean {
    if (topic.startsWith(this.discoveryPrefix + '/')) return true
    if (topic === relayStatusTopic(TOPIC_PREFIX)) return true
    const m = /^hr-relay\/v1\/users\/([^/]+)\/(heart_rate|state)$/.exec(topic)
    return m?.[1] !== undefined && this.announced.has(m[1])
  }

  /** Home Assistant publishes its birth and last-will message on `<discovery_prefix>/status`. */
  mayPublish (topic: string): boolean { return topic === `${this.discoveryPrefix}/status` }

  // --- lifecycle ---

  async start (): Promise<void> {
    // mqtt.js loads only for the upstream connection (relay/mqtt-client.ts), before anything else is done.
    const connect = this.deps.upstream === undefined ? null : await loadMqttConnect()
    this.stopped = false
    for (const user of await this.deps.users.list()) if (user.home_assistant === true) this.optedIn.set(user.profile_id, user)
    this.cleanups.push(this.deps.users.onHomeAssistantChanged(user => {
      if (user.home_assistant === true) this.optedIn.set(user.profile_id, user)
      else this.optedIn.delete(user.profile_id)
      this.schedule()
    }))
    this.cleanups.push(this.deps.devices.onRemoved(() => { this.schedule() }))
    this.cleanups.push(this.deps.readings.subscribeAll(r => { if (this.optedIn.has(r.profile_id)) this.schedule() }))
    if (this.embedded !== null) await this.embedded.publishRetained(relayStatusTopic(TOPIC_PREFIX), STATUS_ONLINE)
    if (connect !== null && this.deps.upstream !== undefined) this.connectUpstream(connect, this.deps.upstream)
    this.schedule()
    await this.settled()
    this.timer = setInterval(() => { this.schedule() }, this.deps.refreshMs ?? 5000)
    this.timer.unref()
  }

  /** Resolves when every queued reconciliation has run (for tests and orderly shutdown). */
  async settled (): Promise<void> {
    let current: Promise<void>
    do { current = this.work; await current } while (current !== this.work)
  }

  /** Queues one reconciliation: announce, update or withdraw members so the brokers match the store. */
  schedule (): void {
    if (this.stopped) return
    this.work = this.work.then(async () => { await this.reconcile() }).catch(err => { this.log.error({ err }, 'Home Assistant discovery update failed') })
  }

  /** The state of a member's paired devices; undefined when they have none. */
  private stateOf (profileId: string): MemberState | undefined {
    const paired = this.deps.devices.list().filter(d => d.profile_id === profileId)
    if (paired.length === 0) return undefined
    let connected = false
    let battery: { at: number, percent: number } | undefined
    for (const d of paired) {
      const s = this.deps.devices.stateOf(d.device_id)
      if (s === undefined) continue
      if (s.connected) connected = true
      if (s.battery_percent !== undefined && (battery === undefined || s.seen_at > battery.at)) battery = { at: s.seen_at, percent: s.battery_percent }
    }
    return { connected, battery_percent: battery?.percent ?? null }
  }

  private sinks (): Sink[] {
    const out: Sink[] = []
    const embedded = this.embedded
    if (embedded !== null) out.push({ topicPrefix: TOPIC_PREFIX, publish: async (t, p) => { await embedded.publishRetained(t, p) } })
    const up = this.upstream
    if (up !== null && this.deps.upstream !== undefined) out.push({ topicPrefix: this.deps.upstream.topic_prefix, publish: async (t, p) => { publishUpstream(up, t, p, this.log) } })
    return out
  }

  private async reconcile (): Promise<void> {
    const sinks = this.sinks()
    for (const [profileId, user] of this.optedIn) {
      const state = this.stateOf(profileId)
      const text = state === undefined ? null : JSON.stringify(state)
      const announced = this.announced.has(profileId)
      const previous = this.announced.get(profileId) ?? null
      if (announced && previous === text) continue
      const hadDevice = announced && previous !== null
      const hasDevice = text !== null
      if (!announced || hadDevice !== hasDevice) {
        for (const sink of sinks) await this.announce(sink, user, hasDevice)
        if (hadDevice && !hasDevice) for (const sink of sinks) await this.withdrawDevice(sink, profileId)
        this.log.info({ profile_id: profileId, with_device: hasDevice }, 'member announced to Home Assistant')
      }
      // Announced before its state is published, so that the broker lets Home Assistant read it.
      this.announced.set(profileId, text)
      if (text !== null) for (const sink of sinks) await sink.publish(memberStateTopic(sink.topicPrefix, profileId), text)
    }
    for (const profileId of [...this.announced.keys()]) {
      if (this.optedIn.has(profileId)) continue
      this.announced.delete(profileId)
      for (const sink of sinks) await this.withdraw(sink, profileId)
      this.log.info({ profile_id: profileId }, 'member withdrawn from Home Assistant')
    }
  }

  private async announce (sink: Sink, user: UserRecord, withDevice: boolean): Promise<void> {
    for (const m of discoveryConfigs(user, this.discoveryPrefix, sink.topicPrefix, withDevice)) await sink.publish(m.topic, JSON.stringify(m.payload))
  }

  /** An empty retained payload removes the retained config (and Home Assistant removes the entity). */
  private async withdraw (sink: Sink, profileId: string): Promise<void> {
    for (const topic of discoveryTopics(this.discoveryPrefix, profileId)) await sink.publish(topic, '')
    await sink.publish(memberStateTopic(sink.topicPrefix, profileId), '')
  }

  /** The battery and connection entities and the state of a member whose last device was unpaired. */
  private async withdrawDevice (sink: Sink, profileId: string): Promise<void> {
    for (const topic of deviceDiscoveryTopics(this.discoveryPrefix, profileId)) await sink.publish(topic, '')
    await sink.publish(memberStateTopic(sink.topicPrefix, profileId), '')
  }

  private connectUpstream (connect: MqttConnect, target: UpstreamTarget): void {
    const client = connect(target.url, {
      protocolVersion: 4,
      clientId: `${target.client_id ?? 'hr-relay'}-ha-${randomUUID().slice(0, 8)}`,
      clean: true,
      reconnectPeriod: this.deps.reconnectPeriodMs ?? 2000,
      connectTimeout: 10_000,
      will: { topic: relayStatusTopic(target.topic_prefix), payload: Buffer.from(STATUS_OFFLINE), qos: 1, retain: true },
      ...(target.username === undefined ? {} : { username: target.username }),
      ...(target.password === undefined ? {} : { password: target.password })
    })
    this.upstream = client
    client.on('connect', () => {
      // A clean session: state everything again (retained publishes are idempotent).
      const sink: Sink = { topicPrefix: target.topic_prefix, publish: async (t, p) => { publishUpstream(client, t, p, this.log) } }
      this.work = this.work.then(async () => {
        await sink.publish(relayStatusTopic(target.topic_prefix), STATUS_ONLINE)
        for (const [profileId, state] of this.announced) {
          const user = this.optedIn.get(profileId)
          if (user !== undefined) await this.announce(sink, user, state !== null)
          if (state !== null) await sink.publish(memberStateTopic(target.topic_prefix, profileId), state)
        }
      }).catch(err => { this.log.warn({ err: (err as Error).message }, 'Home Assistant discovery upstream publish failed') })
    })
    client.on('error', err => { this.log.debug({ err: err.message }, 'Home Assistant upstream connection error') })
  }

  health (): HealthEntry {
    if (this.stopped) return { id: this.id, state: 'stopped' }
    return { id: this.id, state: 'running', detail: `${this.announced.size} members announced`, connected: this.announced.size }
  }

  async stop (): Promise<void> {
    if (this.stopped) return
    this.stopped = true
    if (this.timer !== null) clearInterval(this.timer)
    this.timer = null
    for (const fn of this.cleanups.splice(0)) fn()
    await this.settled()
    if (this.embedded !== null) await this.embedded.publishRetained(relayStatusTopic(TOPIC_PREFIX), STATUS_OFFLINE).catch(() => {})
    const client = this.upstream
    this.upstream = null
    if (client !== null && this.deps.upstream !== undefined) {
      if (client.connected) await client.publishAsync(relayStatusTopic(this.deps.upstream.topic_prefix), STATUS_OFFLINE, { qos: 1, retain: true }).catch(() => {})
      await client.endAsync(!client.connected)
      client.removeAllListeners()
    }
    this.announced.clear()
    this.optedIn.clear()
  }
}

/**
 * Hands a retained QoS 1 publish to mqtt.js without waiting for its PUBACK:
 * while the upstream is down mqtt.js keeps it in order and sends it after the
 * reconnect, and the embedded broker's updates must not wait for that.
 */
function publishUpstream (client: MqttClient, topic: string, payload: string, log?: Logger): void {
  client.publish(topic, payload, { qos: 1, retain: true }, err => {
    if (err !== undefined && err !== null) log?.debug({ err: err.message, topic }, 'Home Assistant upstream publish failed')
  })
}
