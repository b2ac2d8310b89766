// The chain's members at a box (docs/hub.md "How a box applies the chain's members"). With `chain` configured, the
// box subscribes (QoS 1) to `<topic_root>/boxes/<box_id>/members` at the upstream broker, on a connection of its
// own with the upstream's login. The hub keeps one retained message there: the whole list of the chain's members
// and their pairings, under a revision that grows with every change (firmware-protocol/upstream.ts).
//
// A revision newer than the last one applied is applied (chain-revision.ts says how, member by member); an older or equal
// one (the retained copy after every reconnection) and a message that does not decode change nothing. What came
// from the chain (the profiles, their devices) and the revision last applied are kept in the sublevel `chain`, so
// that after a restart the box knows its chain members (box-local members are never touched) and does not apply
// an older retained revision again. While the broker or the hub is away the box keeps what it last applied.
//
// Keys of `chain`: `revision` → {revision, issued_at, applied_at}; `member!<profile_id>` → {devices: [device_id]},
// written before the account or pairing it names (so a crash in between leaves a chain member to finish, never one
// the box would take for its own). An erasure drops the member's key in its hooks, before the store is rewritten.
import type { MqttClient } from 'mqtt'
import { randomUUID } from 'node:crypto'
import type { Logger } from 'pino'
import { storageFailure, type Store, type Sub } from '../api/store/db.ts'
import type { HealthEntry } from '../api/services.ts'
import type { ErasureHook } from '../api/privacy/erase.ts'
import { decodeMembership, membersTopic, type ChainMembership } from '../firmware-protocol/upstream.ts'
import type { Config } from './config.ts'
import { endClient, loadMqttConnect } from './mqtt-client.ts'
import { applyRevision, type ApplyDeps, type ChainLedger, type RevisionOutcome } from './chain-revision.ts'

export interface ChainMembersDeps extends Omit<ApplyDeps, 'ledger' | 'log'> {
  store: Store
  log: Logger
  /** mqtt.js reconnect period (ms); default 2000. */
  reconnectPeriodMs?: number
  /** Wait before a revision whose application failed is tried again (ms); default 5000. */
  retryMs?: number
}

interface AppliedRevision { revision: number, issued_at: number, applied_at: number }
interface MemberEntry { devices: string[] }

const MEMBER = 'member!'

type ClientEvent = 'connect' | 'close' | 'offline' | 'error' | 'message'

export class ChainMembers {
  readonly id = 'chain'
  private readonly sub: Sub<AppliedRevision | MemberEntry>
  private readonly log: Logger
  private readonly topic: string
  /** Chain members (profile id → their chain devices), as the sublevel holds them. */
  private readonly members = new Map<string, Set<string>>()
  private applied: AppliedRevision | null = null
  private client: MqttClient | null = null
  private listeners: Array<[ClientEvent, (...args: never[]) => void]> = []
  private subscribed = false
  private reportedDown = false
  private stopped = true
  /** The newest revision received and not applied yet. */
  private pending: ChainMembership | null = null
  private running: Promise<void> = Promise.resolve()
  private busy = false
  private retryTimer: NodeJS.Timeout | null = null
  private readonly counts = { refused_messages: 0, refused_members: 0, refused_devices: 0 }

  constructor (private readonly chain: NonNullable<Config['chain']>, private readonly upstream: NonNullable<Config['upstream']>, private readonly deps: ChainMembersDeps) {
    this.sub = deps.store.sub<AppliedRevision | MemberEntry>('chain')
    this.log = deps.log.child({ component: 'chain' })
    this.topic = membersTopic(chain.topic_root, chain.box_id)
  }

  /** The revision applied last (null before the first). */
  get revision (): number | null { return this.applied?.revision ?? null }

  /** An erasure hook (api/privacy/erase.ts): an erased chain member leaves the sublevel before the store is rewritten. */
  readonly erasureHook: ErasureHook = async who => {
    if (this.members.has(who.profile_id)) await this.forget(who.profile_id)
    return undefined
  }

  async start (): Promise<void> {
    const connect = await loadMqttConnect()
    this.stopped = false
    this.members.clear()
    for await (const [key, value] of this.sub.iterator()) {
      if (key === 'revision') this.applied = value as AppliedRevision
      else if (key.startsWith(MEMBER)) this.members.set(key.slice(MEMBER.length), new Set((value as MemberEntry).devices))
    }
    if (this.applied !== null) this.log.info({ revision: this.applied.revision, members: this.members.size }, 'chain members restored')
    const client = connect(this.upstream.url, {
      protocolVersion: 4,
      clientId: `${this.upstream.client_id ?? `hr-relay-${randomUUID().slice(0, 8)}`}-members`,
      // The hub's message is retained: every (re)subscription receives the newest revision, nothing is queued.
      clean: true,
      resubscribe: false,
      reconnectPeriod: this.deps.reconnectPeriodMs ?? 2000,
      connectTimeout: 10_000,
      ...(this.upstream.username === undefined ? {} : { username: this.upstream.username }),
      ...(this.upstream.password === undefined ? {} : { password: this.upstream.password })
    })
    this.client = client
    const on = (event: ClientEvent, fn: (...args: never[]) => void): void => {
      client.on(event, fn)
      this.listeners.push([event, fn])
    }
    on('connect', () => {
      this.reportedDown = false
      client.subscribe(this.topic, { qos: 1 }, (err, granted) => {
        if (this.stopped) return
        if (err !== null && err !== undefined) { this.log.warn({ err: err.message, topic: this.topic }, 'cannot subscribe to the chain\'s members'); return }
        if (granted?.[0]?.qos === 128) { this.log.error({ topic: this.topic }, 'the broker refused the subscription to the chain\'s members (its ACL must let this box read the topic)'); return }
        this.subscribed = true
        this.log.info({ topic: this.topic }, 'subscribed to the chain\'s members')
      })
    })
    on('message', (topic: string, payload: Buffer) => { if (topic === this.topic) this.received(payload) })
    const down = (reason: string): void => {
      this.subscribed = false
      if (this.stopped) return
      if (this.reportedDown) { this.log.debug({ reason }, 'chain broker still unreachable'); return }
      this.reportedDown = true
      this.log.warn({ reason, revision: this.revision, members: this.members.size }, 'chain broker unreachable; keeping the members last applied')
    }
    on('close', () => { this.subscribed = false })
    on('offline', () => { down('offline') })
    on('error', (err: Error) => { down(err.message) })
  }

  private received (payload: Buffer): void {
    const m = decodeMembership(this.chain.box_id, payload)
    if ('error' in m) {
      this.counts.refused_messages++
      this.log.warn({ topic: this.topic, reason: m.error }, 'chain membership refused')
      return
    }
    const newest = Math.max(this.applied?.revision ?? -1, this.pending?.revision ?? -1)
    if (m.revision <= newest) { this.log.debug({ revision: m.revision, applied: this.revision }, 'chain membership not newer; ignored'); return }
    this.pending = m
    this.kick()
  }

  /** Applies the pending revision, one application at a time; a newer one that arrives meanwhile follows. */
  private kick (): void {
    if (this.busy || this.stopped) return
    this.busy = true
    this.running = (async () => {
      let closedFor = 0
      while (this.pending !== null && !this.stopped) {
        const m = this.pending
        try {
          await this.apply(m)
          if (this.pending === m) this.pending = null
          closedFor = 0
        } catch (err) {
          // A rewrite of the store (after an erasure, or an erasure notice delivered) closes it for a moment: the
          // application goes on once it is open again (what was applied stays applied).
          if (storageFailure(err) === 'busy' && closedFor++ < 3) {
            this.log.debug({ revision: m.revision }, 'the store is being rewritten; applying the chain\'s members once it is open')
            await this.deps.store.settled()
            continue
          }
          this.log.error({ err, revision: m.revision }, 'applying the chain\'s members failed; trying again')
          this.retryLater()
          return
        }
      }
    })().finally(() => { this.busy = false })
  }

  private retryLater (): void {
    if (this.retryTimer !== null || this.stopped) return
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null
      this.deps.store.settled().then(() => { this.kick() }, () => { this.kick() })
    }, this.deps.retryMs ?? 5000)
  }

  private async apply (m: ChainMembership): Promise<void> {
    if (this.applied !== null && m.revision <= this.applied.revision) return
    const ledger: ChainLedger = {
      members: this.members,
      remember: async (profileId, devices) => { await this.remember(profileId, devices) },
      forget: async profileId => { await this.forget(profileId) }
    }
    const outcome: RevisionOutcome = await applyRevision(m, { ...this.deps, ledger, log: this.log })
    const applied: AppliedRevision = { revision: m.revision, issued_at: m.issued_at, applied_at: Date.now() }
    await this.deps.store.batch([{ type: 'put', sublevel: this.sub, key: 'revision', value: applied }], { sync: true })
    this.applied = applied
    this.counts.refused_members += outcome.refused_members
    this.counts.refused_devices += outcome.refused_devices
    this.log.info({ revision: m.revision, members: this.members.size, ...outcome }, 'chain membership applied')
  }

  private async remember (profileId: string, devices: Iterable<string>): Promise<void> {
    const list = [...new Set(devices)].sort()
    await this.deps.store.batch([{ type: 'put', sublevel: this.sub, key: MEMBER + profileId, value: { devices: list } }], { sync: true })
    this.members.set(profileId, new Set(list))
  }

  private async forget (profileId: string): Promise<void> {
    await this.deps.store.batch([{ type: 'del', sublevel: this.sub, key: MEMBER + profileId }], { sync: true })
    this.members.delete(profileId)
  }

  health (): HealthEntry {
    if (this.stopped) return { id: this.id, state: 'stopped' }
    const applied = this.applied === null ? 'no revision applied yet' : `revision ${this.applied.revision} applied`
    const refused = this.counts.refused_members + this.counts.refused_devices + this.counts.refused_messages
    const detail = `${applied}; ${this.members.size} chain members${refused === 0 ? '' : `; refused since start: ${this.counts.refused_members} members, ${this.counts.refused_devices} devices, ${this.counts.refused_messages} messages`}`
    return this.subscribed
      ? { id: this.id, state: 'running', detail }
      : { id: this.id, state: 'degraded', detail: `not subscribed to the chain's members (the upstream broker is unreachable or refused it); ${detail}` }
  }

  async stop (): Promise<void> {
    if (this.stopped) return
    this.stopped = true
    if (this.retryTimer !== null) { clearTimeout(this.retryTimer); this.retryTimer = null }
    const client = this.client
    this.client = null
    if (client !== null) {
      await endClient(client, this.listeners)
      this.listeners = []
    }
    // An application in progress (an erasure among them) ends before the store closes.
    await this.running
    this.subscribed = false
  }
}
