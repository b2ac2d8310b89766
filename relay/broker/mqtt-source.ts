// The MQTT device ingest path as a Source (relay/sources/source.ts): what a
// device that passed authorization (auth.ts) publishes on its own topics. The
// broker owns the sockets; this source owns the frames: it decodes a
// reading, hands it to its sink, and answers only after the sink did, so
// that the broker writes PUBACK only for a stored reading.
//
// aedes runs authorizePublish before it writes PUBACK (lib/handlers/
// publish.js: publishActions = [authorizePublish, enqueuePublish], and
// enqueuePublish writes PUBACK for QoS 1), and auth.ts calls publish() from
// authorizePublish, so a QoS 1 reading is acknowledged only after the
// pipeline stored it (or dropped it as the specification allows: 0 bpm, a
// duplicate). Everything else is refused by rejecting with MqttRefusal, which
// auth.ts hands to aedes's authorizePublish callback as its error. Refused
// means never acknowledged as stored; what the client then sees is aedes's
// documented answer to that error:
// - MQTT 3.1.1 (the only version aedes 1.x accepts) has no reason codes: the
//   connection is closed without PUBACK ([MQTT-3.3.5-2] allows a server to
//   refuse a PUBLISH only so). The device resends after it reconnects.
// - MQTT 5 (aedes 2.x): a PUBACK with reason code 0x87 (Not authorized), a
//   failure code (>= 0x80), and the connection stays open. The refusal's
//   message is sent as the PUBACK's reason string, so it names only what the
//   device itself sent.
// A payload that does not decode is dropped and counted (sink.dropped) and,
// at QoS 1, refused. A QoS 0 bad payload is dropped and counted without a
// refusal (QoS 0 has no answer).
//
// Reopening: there is no device to reopen. An MQTT device reconnects itself
// (its client's reconnect period); the source reports each connect and
// disconnect (sink.device, status().connected), and a reconnected device's
// readings flow again through the same path.
import type { PublishPacket } from 'aedes'
import type { Logger } from 'pino'
import { decodeDevicePayload, STATUS_OFFLINE, STATUS_ONLINE } from '../../firmware-protocol/mqtt.ts'
import { isProtocolError } from '../../firmware-protocol/errors.ts'
import { isRefused, type IngestResult, type Reading } from '../../api/pipeline/reading.ts'
import type { Source, SourceSink, SourceStatus } from '../sources/source.ts'
import { MqttRefusal, type DevicePublishes } from './auth.ts'

export class MqttSource implements Source, DevicePublishes {
  readonly id = 'mqtt:devices'
  private sink: SourceSink | undefined
  private signal: AbortSignal | undefined
  private current: SourceStatus = { state: 'stopped', connected: 0 }
  /** Connections per device (a device may hold more than one while a takeover settles). */
  private readonly connections = new Map<string, number>()
  private readonly onAbort = (): void => { void this.stop() }

  constructor (private readonly log: Logger) {}

  async start (signal: AbortSignal, sink: SourceSink): Promise<void> {
    if (this.sink !== undefined) throw new Error(`${this.id} already started`)
    if (signal.aborted) { this.setStatus({ state: 'stopped', connected: 0 }); return }
    this.sink = sink
    this.signal = signal
    signal.addEventListener('abort', this.onAbort, { once: true })
    this.setStatus({ state: 'running', connected: this.connectedCount() })
  }

  async stop (): Promise<void> {
    if (this.sink === undefined) return
    this.signal?.removeEventListener('abort', this.onAbort)
    this.signal = undefined
    this.setStatus({ state: 'stopped', connected: 0 })
    this.sink = undefined
    this.connections.clear()
  }

  status (): SourceStatus {
    return { ...this.current }
  }

  /** A device's connection became ready (after CONNACK). */
  deviceConnected (deviceId: string): void {
    const sink = this.sink
    if (sink === undefined) return
    this.connections.set(deviceId, (this.connections.get(deviceId) ?? 0) + 1)
    sink.device({ device_id: deviceId, source: 'mqtt', connected: true, seen_at: Date.now() })
    this.setStatus({ state: 'running', connected: this.connectedCount() })
  }

  /** A device's connection is gone; true when it was the device's last one. */
  deviceGone (deviceId: string): boolean {
    const sink = this.sink
    const n = this.connections.get(deviceId)
    if (sink === undefined || n === undefined) return false
    if (n > 1) { this.connections.set(deviceId, n - 1); return false }
    this.connections.delete(deviceId)
    sink.device({ device_id: deviceId, source: 'mqtt', connected: false, seen_at: Date.now() })
    this.setStatus({ state: 'running', connected: this.connectedCount() })
    return true
  }

  /**
   * A publish of an authorized device on one of its own topics. Resolves to
   * let aedes acknowledge it; rejects with MqttRefusal to refuse it (see the
   * header for what the client sees). Never throws anything else.
   */
  async publish (deviceId: string, kind: 'heart_rate' | 'status', packet: PublishPacket, willOfClosedClient: boolean): Promise<void> {
    const sink = this.sink
    if (sink === undefined) throw new MqttRefusal('MQTT ingest is stopped', 'mqtt_source_stopped')
    if (kind === 'status') {
      const text = Buffer.from(packet.payload).toString('utf8')
      if (text !== STATUS_ONLINE && text !== STATUS_OFFLINE) throw this.refuse(sink, 'mqtt_bad_status', `status must be ${STATUS_ONLINE} or ${STATUS_OFFLINE}`)
      return
    }
    // A reading is never retained, and never accepted as a last will.
    packet.retain = false
    if (willOfClosedClient) throw this.refuse(sink, 'mqtt_will_reading', 'a reading cannot be a last will')
    let payload
    try {
      payload = decodeDevicePayload(packet.payload)
    } catch (err) {
      if (!isProtocolError(err)) throw new MqttRefusal('bad payload', 'mqtt_bad_payload')
      sink.dropped(`mqtt_${err.code}`)
      this.log.warn({ device_id: deviceId, code: err.code, detail: err.message.slice(0, 200), qos: packet.qos }, 'MQTT payload dropped')
      if (packet.qos === 0) return
      throw new MqttRefusal(`bad payload: ${err.message}`, `mqtt_${err.code}`)
    }
    const reading: Reading = { device_id: deviceId, source: 'mqtt', ...payload }
    let result: IngestResult
    try {
      result = await sink.reading(reading)
    } catch (err) {
      // Not stored: refused.
      this.log.error({ err, device_id: deviceId }, 'ingest failed; MQTT reading refused')
      throw new MqttRefusal('ingest failed', 'ingest_error')
    }
    // Acknowledged means stored: a reading the pipeline refused (outside the
    // measured_at window, a device or user removed meanwhile) is refused;
    // the pipeline counted it under its reason (hr_relay_ingest_dropped_total).
    if (isRefused(result) && packet.qos > 0) {
      this.log.warn({ device_id: deviceId, reason: result.reason }, 'MQTT reading not stored; refused')
      throw new MqttRefusal(`reading not stored: ${result.reason}`, result.reason)
    }
  }

  private refuse (sink: SourceSink, reason: string, message: string): MqttRefusal {
    sink.dropped(reason)
    return new MqttRefusal(message, reason)
  }

  private connectedCount (): number {
    return this.connections.size
  }

  private setStatus (status: SourceStatus): void {
    const changed = status.state !== this.current.state || status.connected !== this.current.connected
    this.current = status
    if (changed) this.sink?.status({ ...status })
  }
}
