// The hub's MQTT 5 connection to the chain's broker, written on mqtt-packet (the codec MQTT.js uses) so that the
// hub acknowledges each QoS 1 message itself, after PostgreSQL has committed it, and many at a time. MQTT.js
// handles the next incoming packet only after the current message's handler has called back, so a handler that
// waited for a batch's commit would hold every message after it; here a message is handed over at once and its
// PUBACK is sent whenever `ack` is called.
//
// - A persistent session: clean start off and the longest session expiry, with the same client id across
//   restarts, so that the broker queues what arrives while the instance is away [MQTT-3.1.2-4, 3.1.2.11.2]; or,
//   with cleanStart, a session that ends with the connection (for brokers that redispatch, docs/scaling.md).
// - SUBSCRIBE on every connection, also when the broker reports the session present: Mosquitto 2.0 restores a
//   persistent session after its own restart without the session's shared subscriptions.
// - Receive Maximum bounds the unacknowledged QoS 1 messages the broker sends [MQTT-3.3.4-9], and so the batch.
// - An acknowledgement for a message of an earlier connection is dropped: the broker sends that message again
//   on the new connection (with DUP), and PostgreSQL's key makes the second write a no-op.
import { EventEmitter } from 'node:events'
import net from 'node:net'
import tls from 'node:tls'
import mqttPacket from 'mqtt-packet'
import type { Logger } from 'pino'

export interface MqttSessionOptions {
  url: string
  username?: string
  password?: string
  clientId: string
  keepaliveS: number
  receiveMaximum: number
  /** A session that ends with the connection (docs/scaling.md: brokers that redispatch shared messages); default persistent. */
  cleanStart?: boolean
  /** Topic filters subscribed with QoS 1 on every connection. */
  subscriptions: string[]
  log: Logger
  /** First reconnect delay (doubling up to 5 s); default 250 ms. */
  reconnectMs?: number
}

/** A message from the broker; `ack()` sends its PUBACK (once; a no-op for QoS 0 or after its connection closed). */
export interface Delivery { topic: string, payload: Buffer, dup: boolean, ack: () => void }

const OPTS = { protocolVersion: 5 } as const
/** The largest session expiry: the broker keeps the session (and its queue) until the instance comes back. */
const SESSION_EXPIRY = 0xFFFFFFFF
const MAX_BACKOFF_MS = 5000

export type SessionState = 'connecting' | 'connected' | 'stopped'

export class MqttSession extends EventEmitter<{ state: [SessionState] }> {
  private socket: net.Socket | null = null
  private generation = 0
  private nextId = 1
  private stopped = false
  private backoffMs: number
  private retry: NodeJS.Timeout | null = null
  private ping: NodeJS.Timeout | null = null
  private pingOutstandingSince = 0
  private current: SessionState = 'connecting'
  private onMessage: (d: Delivery) => void = () => {}
  private acks: number[] | null = null
  private acksSocket: net.Socket | null = null

  constructor (private readonly o: MqttSessionOptions) {
    super()
    this.backoffMs = o.reconnectMs ?? 250
  }

  get state (): SessionState { return this.current }

  start (onMessage: (d: Delivery) => void): void {
    this.onMessage = onMessage
    this.connect()
  }

  /** Ends the connection with a normal DISCONNECT: the broker keeps the session and queues for it. */
  async stop (): Promise<void> {
    this.stopped = true
    if (this.retry !== null) clearTimeout(this.retry)
    this.clearPing()
    const socket = this.socket
    this.socket = null
    this.setState('stopped')
    if (socket === null || socket.destroyed) return
    await new Promise<void>(resolve => {
      socket.once('close', () => { resolve() })
      socket.end(mqttPacket.generate({ cmd: 'disconnect', reasonCode: 0 }, OPTS))
      setTimeout(() => { socket.destroy() }, 1000).unref()
    })
  }

  private setState (s: SessionState): void {
    if (s === this.current) return
    this.current = s
    this.emit('state', s)
  }

  private connect (): void {
    if (this.stopped) return
    const url = new URL(this.o.url)
    const port = Number(url.port !== '' ? url.port : url.protocol === 'mqtts:' ? 8883 : 1883)
    const host = url.hostname.replace(/^\[|\]$/g, '')
    const socket = url.protocol === 'mqtts:' ? tls.connect({ host, port, servername: net.isIP(host) === 0 ? host : undefined }) : net.connect({ host, port })
    const generation = ++this.generation
    this.socket = socket
    this.setState('connecting')
    const parser = mqttPacket.parser(OPTS)
    socket.setNoDelay(true)
    socket.on(url.protocol === 'mqtts:' ? 'secureConnect' : 'connect', () => {
      socket.write(mqttPacket.generate({
        cmd: 'connect',
        protocolId: 'MQTT',
        protocolVersion: 5,
        clean: this.o.cleanStart === true,
        clientId: this.o.clientId,
        keepalive: this.o.keepaliveS,
        ...(this.o.username === undefined ? {} : { username: this.o.username }),
        ...(this.o.password === undefined ? {} : { password: Buffer.from(this.o.password) }),
        properties: { sessionExpiryInterval: this.o.cleanStart === true ? 0 : SESSION_EXPIRY, receiveMaximum: this.o.receiveMaximum }
      }, OPTS))
    })
    socket.on('data', chunk => { parser.parse(chunk) })
    parser.on('error', err => { this.o.log.warn({ err: err.message }, 'broker sent a malformed packet; reconnecting'); socket.destroy() })
    parser.on('packet', packet => { this.handle(packet, socket, generation) })
    socket.on('error', err => { this.o.log.debug({ err: (err as NodeJS.ErrnoException).code ?? err.message }, 'broker connection error') })
    socket.on('close', () => {
      if (this.socket === socket) this.socket = null
      this.clearPing()
      if (this.stopped) return
      this.setState('connecting')
      this.o.log.warn({ retry_ms: this.backoffMs }, 'broker connection lost; reconnecting')
      this.retry = setTimeout(() => { this.retry = null; this.connect() }, this.backoffMs)
      this.backoffMs = Math.min(MAX_BACKOFF_MS, this.backoffMs * 2)
    })
  }

  private handle (packet: mqttPacket.Packet, socket: net.Socket, generation: number): void {
    switch (packet.cmd) {
      case 'connack': {
        const code = packet.reasonCode ?? packet.returnCode ?? 0
        if (code !== 0) {
          this.o.log.error({ reason_code: code }, 'the broker refused the hub\'s connection (check mqtt.username, mqtt.password and the broker\'s ACL)')
          socket.destroy()
          return
        }
        this.backoffMs = this.o.reconnectMs ?? 250
        socket.write(mqttPacket.generate({ cmd: 'subscribe', messageId: this.messageId(), subscriptions: this.o.subscriptions.map(topic => ({ topic, qos: 1, nl: false, rap: false, rh: 0 })) }, OPTS))
        this.startPing(socket)
        return
      }
      case 'suback': {
        const refused = (packet.granted as number[]).filter(g => g > 1)
        if (refused.length > 0) {
          this.o.log.error({ reason_codes: packet.granted }, 'the broker refused the hub\'s subscription (shared subscriptions and the ACL of the hub\'s login)')
          socket.destroy()
          return
        }
        this.o.log.info({ subscriptions: this.o.subscriptions }, 'subscribed at the broker')
        this.setState('connected')
        return
      }
      case 'publish': {
        const qos = packet.qos
        const id = packet.messageId
        let acked = qos === 0 || id === undefined
        const ack = (): void => {
          if (acked || id === undefined) return
          acked = true
          if (generation !== this.generation || socket.destroyed) return
          this.queueAck(socket, id)
        }
        if (qos === 2) {
          // Subscribed with QoS 1, the broker never sends QoS 2; if one does, it is refused rather than half handled.
          this.o.log.warn({ topic: packet.topic }, 'QoS 2 message from the broker; closing the connection')
          socket.destroy()
          return
        }
        this.onMessage({ topic: packet.topic, payload: Buffer.isBuffer(packet.payload) ? packet.payload : Buffer.from(packet.payload), dup: packet.dup, ack })
        return
      }
      case 'pingresp':
        this.pingOutstandingSince = 0
        return
      case 'disconnect':
        this.o.log.warn({ reason_code: packet.reasonCode }, 'the broker disconnected the hub')
        socket.destroy()
        break
      default:
    }
  }

  /**
   * The messages of a group are acknowledged together (one after another in one turn): their PUBACKs leave in one
   * write at the end of the turn instead of a system call each.
   */
  private queueAck (socket: net.Socket, id: number): void {
    if (this.acks === null || this.acksSocket !== socket) {
      this.flushAcks()
      this.acks = []
      this.acksSocket = socket
      setImmediate(() => { this.flushAcks() })
    }
    this.acks.push(id)
  }

  private flushAcks (): void {
    const ids = this.acks
    const socket = this.acksSocket
    this.acks = null
    this.acksSocket = null
    if (ids === null || socket === null || socket.destroyed || ids.length === 0) return
    socket.write(Buffer.concat(ids.map(id => mqttPacket.generate({ cmd: 'puback', messageId: id, reasonCode: 0 }, OPTS))))
  }

  private messageId (): number {
    const id = this.nextId
    this.nextId = id >= 65535 ? 1 : id + 1
    return id
  }

  private startPing (socket: net.Socket): void {
    this.clearPing()
    const everyMs = this.o.keepaliveS * 1000 / 2
    this.ping = setInterval(() => {
      if (this.pingOutstandingSince !== 0 && Date.now() - this.pingOutstandingSince > this.o.keepaliveS * 1000) {
        this.o.log.warn('no PINGRESP from the broker within the keepalive; reconnecting')
        socket.destroy()
        return
      }
      if (this.pingOutstandingSince === 0) this.pingOutstandingSince = Date.now()
      socket.write(mqttPacket.generate({ cmd: 'pingreq' }, OPTS))
    }, everyMs)
    this.ping.unref()
  }

  private clearPing (): void {
    if (this.ping !== null) clearInterval(this.ping)
    this.ping = null
    this.pingOutstandingSince = 0
  }
}
