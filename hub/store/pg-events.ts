// Notifications between hub instances: PostgreSQL's LISTEN/NOTIFY on one dedicated connection per instance.
// A NOTIFY sent inside a transaction is delivered when it commits, and only then, so an instance hears of a
// write (readings stored, a token revoked, a member changed) only once every instance can read it.
//
// The listening connection is re-opened when it drops (PostgreSQL restarted). Notifications sent while it was
// down are lost, so each subscriber is told (`onReconnect`) and reloads what it caches.
import pg from 'pg'
import type { Logger } from 'pino'

export type NotifyHandler = (payload: string) => void

/** A channel name: lower-case letters, digits and underscores (used unquoted in LISTEN). */
const CHANNEL = /^[a-z_][a-z0-9_]{0,62}$/

export class PgEvents {
  private client: pg.Client | null = null
  private readonly handlers = new Map<string, Set<NotifyHandler>>()
  private readonly reconnects = new Set<() => void>()
  private stopped = false
  private retry: NodeJS.Timeout | null = null
  private connecting: Promise<void> | null = null

  constructor (private readonly connectionString: string, private readonly log?: Logger) {}

  /** Opens the listening connection; resolves once every channel subscribed so far is listened to. */
  async start (): Promise<void> {
    this.stopped = false
    await this.connect()
  }

  async stop (): Promise<void> {
    this.stopped = true
    if (this.retry !== null) clearTimeout(this.retry)
    this.retry = null
    const c = this.client
    this.client = null
    await c?.end().catch(() => {})
  }

  /** Calls fn with each notification's payload on `channel`; returns the unsubscribe. */
  async listen (channel: string, fn: NotifyHandler): Promise<() => void> {
    if (!CHANNEL.test(channel)) throw new TypeError(`not a channel name: ${channel}`)
    let set = this.handlers.get(channel)
    if (set === undefined) {
      set = new Set()
      this.handlers.set(channel, set)
      await this.client?.query(`LISTEN ${channel}`)
    }
    set.add(fn)
    return () => { set.delete(fn) }
  }

  /** Called after the listening connection was re-opened: notifications may have been missed meanwhile. */
  onReconnect (fn: () => void): () => void {
    this.reconnects.add(fn)
    return () => { this.reconnects.delete(fn) }
  }

  private async connect (): Promise<void> {
    this.connecting ??= (async () => {
      const client = new pg.Client({ connectionString: this.connectionString })
      client.on('notification', n => {
        for (const fn of this.handlers.get(n.channel) ?? []) {
          try { fn(n.payload ?? '') } catch (err) { this.log?.error({ err, channel: n.channel }, 'notification handler failed') }
        }
      })
      client.on('error', err => {
        this.log?.warn({ err: err.message }, 'PostgreSQL notification connection dropped; reconnecting')
        this.lost(client)
      })
      client.on('end', () => { this.lost(client) })
      await client.connect()
      for (const channel of this.handlers.keys()) await client.query(`LISTEN ${channel}`)
      this.client = client
    })().finally(() => { this.connecting = null })
    await this.connecting
  }

  private lost (client: pg.Client): void {
    if (this.client !== client) return
    this.client = null
    void client.end().catch(() => {})
    this.schedule(250)
  }

  private schedule (delay: number): void {
    if (this.stopped || this.retry !== null) return
    this.retry = setTimeout(() => {
      this.retry = null
      this.connect().then(() => {
        for (const fn of this.reconnects) fn()
      }, (err: Error) => {
        this.log?.warn({ err: err.message }, 'PostgreSQL notification connection: reconnect failed')
        this.schedule(Math.min(5000, delay * 2))
      })
    }, delay)
    this.retry.unref()
  }
}
