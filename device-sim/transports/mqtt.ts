// MQTT: N Wi-Fi devices, each its own MQTT connection with its own device
// credentials, publishing QoS 1 readings to hr-relay/v1/devices/<id>/heart_rate.
// A send counts as delivered when the broker's PUBACK arrives (the relay
// acknowledges only after storing).
import mqtt, { type MqttClient } from 'mqtt'
import { deviceHeartRateTopic, encodeDevicePayload, MAX_DEVICE_PAYLOAD_BYTES } from '../../firmware-protocol/mqtt.ts'
import type { DeviceCredentials } from '../admin-client.ts'
import type { LinkFaultKind } from '../faults.ts'
import type { FaultOutcome, SimDevice, SimReading, SimTransport } from './transport.ts'

export interface MqttTransportOptions {
  url: string
  /** Credentials by device index (devices take their device_id from them). */
  credentials: DeviceCredentials[]
  qos?: 0 | 1
  /** How long a send waits for its PUBACK before counting as not delivered. Default 10 s. */
  ackTimeoutMs?: number
}

export class MqttTransport implements SimTransport {
  readonly name = 'mqtt' as const
  private readonly clients = new Map<number, MqttClient>()
  private devices: SimDevice[] = []
  /** Connection errors seen (bad credentials, refused packets). */
  readonly errors: string[] = []

  constructor (private readonly options: MqttTransportOptions) {}

  async open (devices: SimDevice[]): Promise<void> {
    this.devices = devices
    await Promise.all(devices.map(async d => { await this.connect(d) }))
  }

  private async connect (d: SimDevice): Promise<void> {
    const cred = this.options.credentials[d.index]
    if (cred === undefined) throw new Error(`no credentials for device ${d.index}`)
    const client = mqtt.connect(this.options.url, {
      clientId: `${cred.device_id}`,
      username: cred.mqtt_username,
      password: cred.mqtt_password,
      clean: true,
      reconnectPeriod: 1000,
      connectTimeout: 10_000,
      keepalive: 30
    })
    client.on('error', err => { this.errors.push(err.message); if (this.errors.length > 100) this.errors.shift() })
    this.clients.set(d.index, client)
    await new Promise<void>(resolve => {
      // Resolve on the first connect or the first failure; mqtt.js keeps retrying either way.
      const done = (): void => { client.off('connect', done); client.off('error', done); resolve() }
      client.once('connect', done)
      client.once('error', done)
      setTimeout(done, 10_000).unref()
    })
  }

  describe (): string[] {
    return [
      `MQTT broker ${this.options.url}`,
      ...this.devices.map(d => `device ${d.device_id} (${d.label}) publishes to ${deviceHeartRateTopic(d.device_id)}`)
    ]
  }

  private async publish (device: number, payload: string | Buffer, qos: 0 | 1 = this.options.qos ?? 1): Promise<boolean> {
    const client = this.clients.get(device)
    const d = this.devices[device]
    if (client === undefined || d === undefined || !client.connected) return false
    return await new Promise<boolean>(resolve => {
      const timer = setTimeout(() => resolve(false), this.options.ackTimeoutMs ?? 10_000)
      timer.unref()
      client.publish(deviceHeartRateTopic(d.device_id), payload, { qos }, err => { clearTimeout(timer); resolve(err === undefined || err === null) })
    })
  }

  async send (device: number, r: SimReading): Promise<boolean> {
    return await this.publish(device, encodeDevicePayload({
      measured_at: r.measured_at,
      heart_rate: r.heart_rate,
      ...(r.rr_intervals_ms.length > 0 ? { rr_intervals_ms: r.rr_intervals_ms.slice(0, 64) } : {}),
      ...(r.energy_expended_kj === undefined ? {} : { energy_expended_kj: r.energy_expended_kj }),
      sensor_contact: r.sensor_contact,
      ...(r.battery_percent === undefined ? {} : { battery_percent: r.battery_percent })
    }))
  }

  async inject (device: number, kind: 'garbage' | 'bad_checksum' | 'oversized'): Promise<FaultOutcome> {
    const client = this.clients.get(device)
    if (client === undefined || !client.connected) return 'not_applicable'
    if (kind === 'bad_checksum') return 'not_applicable'
    const payload = kind === 'garbage'
      ? '{"measured_at": "soon", "heart_rate": "fast"'
      : JSON.stringify({ measured_at: Date.now(), heart_rate: 70, pad: 'x'.repeat(MAX_DEVICE_PAYLOAD_BYTES * 4) })
    // QoS 0, whatever the transport's QoS: a broker refuses a bad QoS 1 publish
    // by closing the connection without PUBACK, and mqtt.js would resend the
    // unacknowledged frame after every reconnect, so one injected fault would
    // arrive again and again. A fault is one frame, sent once.
    void this.publish(device, payload, 0)
    return 'injected'
  }

  async link (device: number, up: boolean, kind: LinkFaultKind): Promise<FaultOutcome> {
    const d = this.devices[device]
    if (d === undefined) return 'not_applicable'
    if (up) {
      if (!this.clients.has(device)) await this.connect(d)
      return 'injected'
    }
    const client = this.clients.get(device)
    this.clients.delete(device)
    if (client === undefined) return 'injected'
    if (kind === 'unplug') {
      // Power cut: the socket goes away without DISCONNECT (the broker sends the last will).
      client.options.reconnectPeriod = 0
      client.stream?.destroy()
      await client.endAsync(true)
    } else {
      // A graceful DISCONNECT; mqtt.js would first wait for every unacknowledged
      // QoS 1 publish (a refused garbage payload never is), so force it then.
      await client.endAsync(Object.keys(client.outgoing).length > 0)
    }
    return 'injected'
  }

  async close (): Promise<void> {
    await Promise.all([...this.clients.values()].map(async c => { await c.endAsync(true) }))
    this.clients.clear()
  }
}
