// Publishes the chain's membership to every box: one retained QoS 1 message per box at
// <topic_root>/boxes/<box_id>/members (firmware-protocol/upstream.ts), so that a box that connects later, or
// comes back after an outage, receives the newest one at once and keeps it while the hub or the broker is away.
//
// When: on every connection to the broker (a broker that lost its retained messages gets them again), and when
// PostgreSQL notifies a change on hr_chain (the revision's trigger, hub/migrations/004-chain.sql, in the
// transaction of a member's, a pairing's or a box's change). A burst of changes within `debounceMs` makes one
// publication per box. A box already holding the revision read is skipped, except after a reconnection.
//
// Any instance may publish, and every instance does: each hears every change and publishes after it, so the last
// message at each box's topic is the newest revision, whichever instance sent an older one last. Several
// publishing the same revision is harmless; a box ignores a revision lower than one it applied.
import mqtt, { type MqttClient } from 'mqtt'
import type pg from 'pg'
import type { Logger } from 'pino'
import { decodeMembership, membersTopic, membershipPayload } from '../../firmware-protocol/upstream.ts'
import type { HubConfig } from '../config.ts'
import type { PgEvents } from '../store/pg-events.ts'
import { CHAIN_CHANNEL, membershipFor, readChainSnapshot, type ChainSnapshot } from './snapshot.ts'

export interface MembershipPublisherOptions {
  /** The hub's `mqtt` settings: the login, `<client_id>-members` as this connection's client id, topic_root. */
  mqtt: HubConfig['mqtt']
  pool: pg.Pool
  /** The instance's notification connection (PgStores.events). */
  events: PgEvents
  log: Logger
  /** Changes within this window make one publication (default 200 ms). */
  debounceMs?: number
}

/** Messages awaiting their PUBACK at once: below Mosquitto's default Receive Maximum (20), which mqtt.js does not track. */
const IN_FLIGHT = 10
const MAX_RETRY_MS = 5000

export type PublisherState = 'stopped' | 'connecting' | 'connected'

export class MembershipPublisher {
  private client: MqttClient | null = null
  private readonly log: Logger
  private readonly debounceMs: number
  private unlisten: Array<() => void> = []
  /** Removes the listeners this component added to its MQTT client. */
  private clientListeners: () => void = () => {}
  /** The revision each box was last sent by this instance. */
  private readonly sent = new Map<string, number>()
  private dirty = false
  /** Publish to every box, also those already sent the revision (after a (re)connection). */
  private everyBox = false
  private timer: NodeJS.Timeout | null = null
  private running: Promise<void> | null = null
  private retryMs = 250
  private stopped = true
  private published: number | null = null

  constructor (private readonly o: MembershipPublisherOptions) {
    this.log = o.log.child({ component: 'hub-members' })
    this.debounceMs = o.debounceMs ?? 200
  }

  /** The newest revision this instance published to every box (for /health), or null. */
  get revision (): number | null { return this.published }

  get state (): PublisherState {
    return this.stopped ? 'stopped' : this.client?.connected === true ? 'connected' : 'connecting'
  }

  async start (): Promise<void> {
    if (!this.stopped) return
    this.stopped = false
    this.unlisten.push(await this.o.events.listen(CHAIN_CHANNEL, () => { this.changed(false) }))
    // Notifications sent while the listening connection was down are lost: read again.
    this.unlisten.push(this.o.events.onReconnect(() => { this.changed(false) }))
    const m = this.o.mqtt
    const client = mqtt.connect(m.url, {
      protocolVersion: 5,
      clientId: `${m.client_id}-members`,
      clean: true,
      keepalive: m.keepalive_s,
      reconnectPeriod: 2000,
      connectTimeout: 10_000,
      ...(m.username === undefined ? {} : { username: m.username }),
      ...(m.password === undefined ? {} : { password: m.password })
    })
    this.client = client
    // An outage is reported once at warn level, then at debug: a broker away for hours must not flood the log.
    let reported = false
    const connected = (): void => {
      reported = false
      this.log.info({ client_id: `${m.client_id}-members` }, 'membership publisher connected to the broker')
      this.changed(true)
    }
    const failed = (err: Error): void => {
      this.log[reported ? 'debug' : 'warn']({ err: err.message }, 'membership publisher: broker connection error; retrying')
      reported = true
    }
    client.on('connect', connected)
    client.on('error', failed)
    this.clientListeners = () => { client.off('connect', connected); client.off('error', failed) }
  }

  async stop (): Promise<void> {
    if (this.stopped) return
    this.stopped = true
    for (const off of this.unlisten) off()
    this.unlisten = []
    if (this.timer !== null) clearTimeout(this.timer)
    this.timer = null
    const client = this.client
    this.client = null
    if (client !== null) {
      const closed = client.stream === undefined || client.stream.closed ? Promise.resolve() : new Promise<void>(resolve => { client.stream.once('close', () => { resolve() }) })
      // Forced: a publication waiting for a broker that is away is dropped (the next instance to start sends it).
      await client.endAsync(true)
      // mqtt.js may report on its connection until the socket's 'close': this component's listeners stay until then.
      await closed
      this.clientListeners()
    }
    this.sent.clear()
  }

  /** A change (or a connection): publish once the window has passed, after the publication under way if any. */
  private changed (everyBox: boolean): void {
    if (this.stopped) return
    this.dirty = true
    if (everyBox) this.everyBox = true
    this.schedule(this.debounceMs)
  }

  private schedule (delay: number): void {
    if (this.timer !== null || this.running !== null || this.stopped) return
    this.timer = setTimeout(() => {
      this.timer = null
      this.running = this.run().finally(() => {
        this.running = null
        if (this.dirty && this.client?.connected === true) this.schedule(this.debounceMs)
      })
    }, delay)
  }

  private async run (): Promise<void> {
    while (this.dirty && !this.stopped && this.client?.connected === true) {
      this.dirty = false
      const everyBox = this.everyBox
      this.everyBox = false
      try {
        await this.publish(await readChainSnapshot(this.o.pool), everyBox)
        this.retryMs = 250
      } catch (err) {
        // PostgreSQL or the broker failed: try again later, with everything that was to be sent.
        this.dirty = true
        if (everyBox) this.everyBox = true
        this.log.warn({ err: (err as Error).message, retry_ms: this.retryMs }, 'membership not published; retrying')
        const delay = this.retryMs
        this.retryMs = Math.min(MAX_RETRY_MS, this.retryMs * 2)
        await new Promise(resolve => { setTimeout(resolve, delay).unref() })
      }
    }
  }

  private async publish (snapshot: ChainSnapshot, everyBox: boolean): Promise<void> {
    const client = this.client
    if (client === null) return
    const due = snapshot.boxes.filter(box => everyBox || this.sent.get(box) !== snapshot.revision)
    const now = Date.now()
    const first = due[0]
    // What a box would refuse is not sent: the boxes keep the last membership they accepted. The messages differ in
    // their box_id alone, so one check stands for all.
    const check = first === undefined ? undefined : decodeMembership(first, Buffer.from(membershipPayload(membershipFor(snapshot, first, now))))
    if (check !== undefined && 'error' in check) {
      this.log.error({ revision: snapshot.revision, reason: check.error }, 'membership not published: the boxes would refuse it')
      return
    }
    let next = 0
    const worker = async (): Promise<void> => {
      while (next < due.length && !this.stopped) {
        const box = due[next++] as string
        await client.publishAsync(membersTopic(this.o.mqtt.topic_root, box), membershipPayload(membershipFor(snapshot, box, now)), { qos: 1, retain: true })
        this.sent.set(box, snapshot.revision)
      }
    }
    await Promise.all(Array.from({ length: Math.min(IN_FLIGHT, due.length) }, worker))
    const known = new Set(snapshot.boxes)
    for (const box of this.sent.keys()) if (!known.has(box)) this.sent.delete(box)
    this.published = snapshot.revision
    if (due.length > 0) this.log.info({ revision: snapshot.revision, boxes: due.length, members: snapshot.members.length }, 'membership published')
  }
}
