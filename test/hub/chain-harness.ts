// A chain on one machine for the hub's tests: a real PostgreSQL, a real Mosquitto with persistence, hub
// instances as separate processes (`hr-relay hub start`, so that one can be killed with SIGKILL), and boxes (real
// relay services with an upstream to the broker, each through a TcpProxy that can cut it off). What a box
// acknowledged is what its pipeline answered `stored`; the hub must end up holding exactly that.
import { setTimeout as delay } from 'node:timers/promises'
import pg from 'pg'
import { startHubChain, type HubProcess } from '../helpers/hub-process.ts'
import type { Mosquitto } from '../helpers/mosquitto.ts'
import type { Postgres } from '../helpers/postgres.ts'
import { startTestService, type TestService } from '../helpers/service.ts'
import { TcpProxy } from '../helpers/tcp-proxy.ts'

interface Tap { teardown (fn: () => unknown): void }

export const ROOT = 'chain-test/v1'

export interface Box { id: string, service: TestService, proxy: TcpProxy, profiles: string[], next: number }

export class Chain {
  readonly acknowledged = new Set<string>()
  private constructor (readonly pg: Postgres, readonly broker: Mosquitto, readonly dbUrl: string, readonly hubs: HubProcess[], readonly boxes: Box[], readonly db: pg.Pool) {}

  static async create (t: Tap, options: { hubs: number, boxes: number, membersPerBox: number }): Promise<Chain> {
    const { postgres, dbUrl, broker, hubs } = await startHubChain(t, { instances: options.hubs, clientIdPrefix: 'hub-test', topicRoot: ROOT, mqtt: { keepalive_s: 5 } })
    const boxes: Box[] = []
    for (let i = 0; i < options.boxes; i++) {
      const id = `gym-${String.fromCharCode(97 + i)}`
      const proxy = await TcpProxy.create(t, broker.port)
      const service = await startTestService(t, { chain: { box_id: id, topic_root: ROOT }, upstream: { url: proxy.url, client_id: `box-${id}` } })
      const profiles: string[] = []
      for (let m = 0; m < options.membersPerBox; m++) profiles.push(await service.user(`member${m}${id.replace('-', '')}`))
      boxes.push({ id, service, proxy, profiles, next: Date.now() - 3_600_000 })
    }
    const db = new pg.Pool({ connectionString: dbUrl, max: 2 })
    db.on('error', () => {})
    t.teardown(async () => { await db.end() })
    return new Chain(postgres, broker, dbUrl, hubs, boxes, db)
  }

  /**
   * Readings at every box, as straps would send them: `perMember` each, one every 10 ms of measured time, through
   * each box's pipeline. `during` runs once half of them are acknowledged. Returns how many were acknowledged.
   */
  async burst (perMember: number, during?: () => Promise<void>): Promise<number> {
    let acked = 0
    const total = perMember * this.boxes.reduce((s, b) => s + b.profiles.length, 0)
    let fired: Promise<void> | undefined
    for (let i = 0; i < perMember; i++) {
      await Promise.all(this.boxes.map(async box => {
        const at = box.next
        box.next += 10
        await Promise.all(box.profiles.map(async (pid, k) => {
          const r = await box.service.service.services.pipeline.submit({ profile_id: pid, measured_at: at, heart_rate: 60 + ((i + k) % 100), source: 'ble', device_id: `C8:2F:9A:00:00:${String(k).padStart(2, '0')}` })
          if (r.status === 'stored') { this.acknowledged.add(`${box.id}|${pid}|${at}`); acked++ }
        }))
      }))
      if (fired === undefined && during !== undefined && acked >= total / 2) fired = during()
    }
    await fired
    return acked
  }

  async held (): Promise<string[]> {
    const rows = (await this.db.query<{ box_id: string, profile_id: string, measured_at: string }>('SELECT box_id, profile_id, measured_at FROM readings')).rows
    return rows.map(r => `${r.box_id}|${r.profile_id}|${r.measured_at}`)
  }

  /** Waits until the hub holds as many readings as were acknowledged (or the time is up), then returns what it holds. */
  async settle (ms = 60_000): Promise<string[]> {
    const end = Date.now() + ms
    for (;;) {
      let n = -1
      try { n = Number((await this.db.query<{ n: string }>('SELECT count(*) AS n FROM readings')).rows[0]?.n) } catch {}
      if (n >= this.acknowledged.size || Date.now() > end) return await this.held()
      await delay(100)
    }
  }

  /** What the hub holds against what the boxes acknowledged: missing keys, keys it should not have, and rows held twice. */
  compare (held: string[]): { missing: string[], extra: string[], twice: number } {
    const set = new Set(held)
    return {
      missing: [...this.acknowledged].filter(k => !set.has(k)),
      extra: [...set].filter(k => !this.acknowledged.has(k)),
      twice: held.length - set.size
    }
  }
}
