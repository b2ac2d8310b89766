// The upstream bridge: forwards every stored reading to an external MQTT
// broker (a gym chain's Mosquitto, EMQX or HiveMQ cluster) with QoS 1, through
// a persistent, bounded store-and-forward queue in LevelDB.
//
// - `enqueue` (called from the hub for each stored reading) appends to the
//   `upstream_queue` sublevel under a monotonic, fixed-width sequence key.
// - The pump sends queued readings in key order while connected, at most
//   WINDOW in flight, and deletes a key only when its PUBACK arrives.
// - While the connection is down nothing is sent; mqtt.js retransmits what
//   was in flight (DUP) after it reconnects. After a restart everything still
//   in the queue is sent again.
// - The guarantee (docs/integrations.md "Upstream bridge"): at least once. A resend is
//   byte-identical to the first send (same topic, same payload), and the store
//   keeps one reading per (profile_id, measured_at), so topic + measured_at is
//   the key a consumer deduplicates on.
// - Past `queue_max` the oldest queued readings are dropped and counted.
//
// Topic: `<topic_prefix>/users/<profile_id>/heart_rate`. Payload: the
// specification's reading shape plus `source` and, when known, `device_id`:
// {"measured_at":1700000000000,"data":{"heart_rate":72},"source":"ble","device_id":"C8:2F:9A:11:22:33"}
//
// A member's erasure (`eraseProfile`) drops their queued readings (those in
// flight are delivered, then deleted as usual) and queues an erasure notice
// after everything else of theirs: topic `<topic_prefix>/users/<profile_id>/erased`,
// payload {"profile_id":"…","erased_at":1700000000000}, QoS 1, not retained, so
// that a hub erases its copy too. Until its PUBACK the notice is the one trace of
// the profile id left on disk; once it is delivered, `onNoticeDelivered` lets the
// service rewrite the store so that the notice's bytes go too.
import type { MqttClient } from 'mqtt'
import { randomUUID } from 'node:crypto'
import type { Logger } from 'pino'
import type { Store, Sub } from '../api/store/db.ts'
import type { StoredReading } from '../api/pipeline/reading.ts'
import type { HealthEntry } from '../api/services.ts'
import { endClient, loadMqttConnect } from './mqtt-client.ts'
import { erasurePayload, erasureTopic, upstreamPayload, upstreamTopic } from '../firmware-protocol/upstream.ts'

// The topics and payloads are the upstream wire format (firmware-protocol/upstream.ts), which a hub parses.
export { upstreamPayload, upstreamTopic }

export interface UpstreamConfig {
  url: string
  username?: string
  password?: string
  client_id?: string
  topic_prefix: string
  queue_max: number
}

export interface UpstreamMetrics {
  setUpstreamQueue (n: number): void
  upstreamAcked (): void
  upstreamDroppedOldest (n?: number): void
}

/** The queue entry of a member's erasure notice (the other entries are stored readings). */
export interface ErasureNotice { erasure: true, profile_id: string, erased_at: number }
type QueueEntry = StoredReading | ErasureNotice

function isNotice (e: QueueEntry): e is ErasureNotice { return (e as ErasureNotice).erasure === true }

export interface UpstreamDeps {
  store: Store
  log: Logger
  /** Called when an erasure notice is delivered, before it is deleted from the queue (the service records a rewrite as due). */
  beforeNoticeDeleted?: () => Promise<void>
  /** Called once an erasure notice is delivered and deleted from the queue (the service rewrites the store). */
  onNoticeDelivered?: () => void
  metrics?: UpstreamMetrics
  /** mqtt.js reconnect period (ms); default 2000. */
  reconnectPeriodMs?: number
}

/** Readings in flight (sent, PUBACK pending) at most. */
const WINDOW = 32
const KEY_WIDTH = 16

function keyOf (seq: number): string { return String(seq).padStart(KEY_WIDTH, '0') }

export class UpstreamBridge {
  readonly id = 'upstream'
  private readonly queue: Sub<QueueEntry>
  private readonly log: Logger
  private client: MqttClient | null = null
  private nextSeq = 0
  private length = 0
  /** Last key handed to mqtt.js in this process; later keys are read from the queue. */
  private cursor = ''
  private readonly inflight = new Set<string>()
  private drainWaiters: Array<() => void> = []
  private readonly retry: Array<[string, QueueEntry]> = []
  private writes: Promise<void> = Promise.resolve()
  private pumping = false
  private again = false
  private stopped = true
  private reportedDown = false
  /** The listeners this bridge adds to its client, removed again at stop (never mqtt.js's own). */
  private listeners: Array<['connect' | 'close' | 'offline' | 'error', (...args: never[]) => void]> = []

  constructor (private readonly config: UpstreamConfig, private readonly deps: UpstreamDeps) {
    this.queue = deps.store.sub<QueueEntry>('upstream_queue')
    this.log = deps.log.child({ component: 'upstream' })
  }

  /** Readings waiting for a PUBACK (queued or in flight). */
  get queued (): number { return this.length }
  get connected (): boolean { return this.client?.connected === true }

  async start (): Promise<void> {
    // mqtt.js loads with the first bridge that starts (relay/mqtt-client.ts), before anything else is done.
    const connect = await loadMqttConnect()
    this.stopped = false
    let count = 0
    let last: string | undefined
    for await (const key of this.queue.keys()) { count++; last = key }
    this.length = count
    this.nextSeq = last === undefined ? 0 : Number(last) + 1
    await this.trim()
    this.deps.metrics?.setUpstreamQueue(this.length)
    if (count > 0) this.log.info({ queued: this.length }, 'upstream queue restored')
    const client = connect(this.config.url, {
      protocolVersion: 4,
      clientId: this.config.client_id ?? `hr-relay-${randomUUID().slice(0, 8)}`,
      clean: true,
      reconnectPeriod: this.deps.reconnectPeriodMs ?? 2000,
      connectTimeout: 10_000,
      ...(this.config.username === undefined ? {} : { username: this.config.username }),
      ...(this.config.password === undefined ? {} : { password: this.config.password })
    })
    this.client = client
    const on = (event: 'connect' | 'close' | 'offline' | 'error', fn: (...args: never[]) => void): void => {
      client.on(event, fn)
      this.listeners.push([event, fn])
    }
    on('connect', () => {
      this.reportedDown = false
      this.log.info({ url: redactUrl(this.config.url), queued: this.length }, 'upstream connected')
      this.kick()
    })
    on('close', () => { if (!this.stopped) this.log.debug('upstream connection closed') })
    // Once per outage at warn level, then debug: an upstream that is down for hours must not flood the log.
    const down = (reason: string): void => {
      if (this.stopped) return
      if (this.reportedDown) { this.log.debug({ reason }, 'upstream still unreachable'); return }
      this.reportedDown = true
      this.log.warn({ url: redactUrl(this.config.url), reason, queued: this.length }, 'upstream unreachable; queueing readings')
    }
    on('offline', () => { down('offline') })
    on('error', (err: Error) => { down(err.message) })
  }

  /** Appends a stored reading to the persistent queue (synchronous for the hub; the write is chained). */
  enqueue (reading: StoredReading): void {
    if (this.stopped) return
    const key = keyOf(this.nextSeq++)
    this.writes = this.writes.then(async () => {
      await this.deps.store.batch([{ type: 'put', sublevel: this.queue, key, value: reading }])
      this.length++
      if (this.length > this.config.queue_max) await this.trim()
      this.deps.metrics?.setUpstreamQueue(this.length)
      this.kick()
    }).catch(err => { this.log.error({ err }, 'cannot write to the upstream queue; reading not forwarded') })
  }

  /**
   * A member's erasure: their queued readings are deleted (those in flight are delivered first) and an erasure
   * notice is queued after them. Returns how many queued readings were deleted. Runs in the write chain, so a
   * reading enqueued before it is deleted too.
   */
  async eraseProfile (profileId: string, now = Date.now()): Promise<number> {
    let dropped = 0
    const run = this.writes.then(async () => {
      const ops: Array<{ type: 'del', sublevel: Sub<QueueEntry>, key: string } | { type: 'put', sublevel: Sub<QueueEntry>, key: string, value: QueueEntry }> = []
      for await (const [key, entry] of this.queue.iterator()) {
        if (entry.profile_id === profileId && !this.inflight.has(key)) ops.push({ type: 'del', sublevel: this.queue, key })
      }
      dropped = ops.length
      for (let i = this.retry.length - 1; i >= 0; i--) if (this.retry[i]![1].profile_id === profileId && !isNotice(this.retry[i]![1])) this.retry.splice(i, 1)
      ops.push({ type: 'put', sublevel: this.queue, key: keyOf(this.nextSeq++), value: { erasure: true, profile_id: profileId, erased_at: now } })
      await this.deps.store.batch(ops, { sync: true })
      this.length += 1 - dropped
      this.deps.metrics?.setUpstreamQueue(this.length)
      this.kick()
    })
    this.writes = run.catch(err => { this.log.error({ err }, 'cannot queue the erasure notice') })
    await run
    return dropped
  }

  /** Drops the oldest queued readings (not those in flight) beyond queue_max. */
  private async trim (): Promise<void> {
    let excess = this.length - this.config.queue_max
    if (excess <= 0) return
    const doomed: string[] = []
    for await (const key of this.queue.keys()) {
      if (excess <= 0) break
      if (this.inflight.has(key)) continue
      doomed.push(key)
      excess--
    }
    if (doomed.length === 0) return
    await this.deps.store.batch(doomed.map(key => ({ type: 'del' as const, sublevel: this.queue, key })))
    this.length -= doomed.length
    this.deps.metrics?.upstreamDroppedOldest(doomed.length)
    this.log.warn({ dropped: doomed.length, queue_max: this.config.queue_max }, 'upstream queue full; dropped the oldest readings')
  }

  private kick (): void {
    if (this.pumping) { this.again = true; return }
    this.pumping = true
    this.pump().catch(err => { this.log.error({ err }, 'upstream pump failed') }).finally(() => {
      this.pumping = false
      if (this.again && !this.stopped) { this.again = false; this.kick() }
    })
  }

  private async pump (): Promise<void> {
    const client = this.client
    while (client !== null && client.connected && !this.stopped && this.inflight.size < WINDOW) {
      const batch: Array<[string, QueueEntry]> = this.retry.splice(0, WINDOW - this.inflight.size)
      if (batch.length < WINDOW - this.inflight.size) {
        const range = this.cursor === '' ? {} : { gt: this.cursor }
        for await (const entry of this.queue.iterator({ ...range, limit: WINDOW - this.inflight.size - batch.length })) batch.push(entry)
      }
      if (batch.length === 0) return
      for (const [key, reading] of batch) {
        if (key > this.cursor) this.cursor = key
        this.send(client, key, reading)
      }
    }
  }

  private send (client: MqttClient, key: string, entry: QueueEntry): void {
    this.inflight.add(key)
    const [topic, payload] = isNotice(entry)
      ? [erasureTopic(this.config.topic_prefix, entry.profile_id), erasurePayload(entry.profile_id, entry.erased_at)]
      : [upstreamTopic(this.config.topic_prefix, entry.profile_id), upstreamPayload(entry)]
    client.publish(topic, payload, { qos: 1 }, err => {
      if (err !== undefined && err !== null) {
        this.inflight.delete(key)
        if (!this.stopped) { this.retry.push([key, entry]); this.log.warn({ err: err.message }, 'upstream publish failed; will retry') }
        return
      }
      this.acked(key, isNotice(entry)).catch(e => { this.log.error({ err: e }, 'cannot remove an acknowledged reading from the upstream queue') })
    })
  }

  private async acked (key: string, notice = false): Promise<void> {
    // The key stays in flight until it is deleted from disk: `drain` (at stop) resolves only
    // once every acknowledged reading is gone from the queue, not while a delete is pending.
    try {
      const present = await this.queue.get(key)
      if (present !== undefined) {
        // A delivered notice: the rewrite that removes its bytes is recorded as due before it is deleted (a crash
        // between the two runs it at the next start).
        if (notice) await this.deps.beforeNoticeDeleted?.()
        await this.deps.store.batch([{ type: 'del', sublevel: this.queue, key }])
        this.length--
      }
    } finally {
      this.inflight.delete(key)
    }
    if (notice) this.deps.onNoticeDelivered?.()
    this.deps.metrics?.upstreamAcked()
    this.deps.metrics?.setUpstreamQueue(this.length)
    if (this.inflight.size === 0) for (const fn of this.drainWaiters.splice(0)) fn()
    this.kick()
  }

  /** At shutdown, waits (bounded) for the PUBACKs of readings in flight so they are not sent twice after a restart. */
  private async drain (timeoutMs: number): Promise<void> {
    if (this.inflight.size === 0 || this.client?.connected !== true) return
    await new Promise<void>(resolve => {
      const timer = setTimeout(resolve, timeoutMs)
      timer.unref()
      this.drainWaiters.push(() => { clearTimeout(timer); resolve() })
    })
  }

  /** Resolves when every enqueued reading was written to the queue (for tests and orderly shutdown). */
  async flushed (): Promise<void> {
    let current: Promise<void>
    do { current = this.writes; await current } while (current !== this.writes)
  }

  health (): HealthEntry {
    if (this.stopped) return { id: this.id, state: 'stopped' }
    return this.connected
      ? { id: this.id, state: 'running', detail: `connected to ${redactUrl(this.config.url)}; ${this.length} queued` }
      : { id: this.id, state: 'degraded', detail: `upstream ${redactUrl(this.config.url)} unreachable; ${this.length} queued` }
  }

  async stop (): Promise<void> {
    if (this.stopped) return
    this.stopped = true
    await this.flushed()
    await this.drain(5000)
    const client = this.client
    this.client = null
    if (client !== null) {
      await endClient(client, this.listeners)
      this.listeners = []
    }
    this.inflight.clear()
    this.drainWaiters = []
    this.retry.length = 0
    this.cursor = ''
  }
}

/** The URL without credentials, for logs. */
function redactUrl (url: string): string {
  try {
    const u = new URL(url)
    u.username = ''
    u.password = ''
    return u.toString()
  } catch {
    return '(invalid url)'
  }
}
