// Ingest at the hub: the chain's messages from a shared subscription, decoded, written in groups, acknowledged
// after commit. A message that is not one of ours (a topic or payload the wire format refuses) is acknowledged
// without being stored, logged with its reason and counted: kept unacknowledged it would come back forever.
import type pg from 'pg'
import type { Logger } from 'pino'
import { chainFilters, decodeChainMessage } from '../../firmware-protocol/upstream.ts'
import type { HubConfig } from '../config.ts'
import { ChainWriter } from './chain-writer.ts'
import { MqttSession, type Delivery } from './mqtt-session.ts'

export class HubIngest {
  readonly session: MqttSession
  readonly writer: ChainWriter
  rejected = 0

  constructor (private readonly config: HubConfig['mqtt'], pool: pg.Pool, private readonly log: Logger, options: { gapMs: number }) {
    const filters = chainFilters(config.topic_root).map(f => `$share/${config.share_group}/${f}`)
    this.session = new MqttSession({
      url: config.url,
      ...(config.username === undefined ? {} : { username: config.username }),
      ...(config.password === undefined ? {} : { password: config.password }),
      clientId: config.client_id,
      keepaliveS: config.keepalive_s,
      receiveMaximum: config.receive_maximum,
      cleanStart: config.clean_start,
      subscriptions: filters,
      log: log.child({ component: 'hub-mqtt' })
    })
    this.writer = new ChainWriter(pool, log.child({ component: 'hub-writer' }), { gapMs: options.gapMs })
  }

  start (): void {
    this.session.start(d => { this.receive(d) })
  }

  async stop (): Promise<void> {
    await this.writer.stop()
    await this.session.stop()
  }

  private receive (d: Delivery): void {
    const decoded = decodeChainMessage(this.config.topic_root, d.topic, d.payload)
    if ('error' in decoded) {
      this.rejected++
      this.log.warn({ topic: d.topic, reason: decoded.error }, 'message refused: not stored, acknowledged so that the broker does not send it again')
      d.ack()
      return
    }
    this.writer.submit({ message: decoded, done: d.ack })
  }
}
