// A byte limit in front of the broker. aedes hands raw bytes to mqtt-packet's
// parser without any size bound, so a client could announce a 256 MB PUBLISH
// and make the broker buffer it. `MqttSizeGate` follows packet boundaries on
// the raw stream by reading only each fixed header (type byte + Remaining
// Length, MQTT 3.1.1 §2.2.3) and refuses a packet whose total size is above the
// limit before any of its body reaches aedes. `gateStream` puts the gate in
// front of a socket's or WebSocket stream's read buffer, in place.
import { Duplex } from 'node:stream'
import { relayErrorMessage } from '../error-codes.ts'

export class PacketTooLargeError extends Error {
  readonly code = 'HR_MQTT_PACKET_TOO_LARGE'
  constructor (readonly size: number, readonly limit: number) {
    super(relayErrorMessage('HR_MQTT_PACKET_TOO_LARGE', { size, limit }))
    this.name = 'PacketTooLargeError'
  }
}

export class MalformedLengthError extends Error {
  readonly code = 'HR_MQTT_MALFORMED_LENGTH'
  constructor () {
    // [MQTT-2.2.3] the Remaining Length is at most four bytes.
    super(relayErrorMessage('HR_MQTT_MALFORMED_LENGTH'))
    this.name = 'MalformedLengthError'
  }
}

type GateState = 'type' | 'length' | 'body'

/** Pure state machine over the byte stream: `check` returns an error at the first packet above the limit. */
export class MqttSizeGate {
  private state: GateState = 'type'
  private length = 0
  private multiplier = 1
  private lengthBytes = 0
  private remaining = 0

  constructor (readonly maxPacketBytes: number) {}

  check (chunk: Uint8Array): PacketTooLargeError | MalformedLengthError | null {
    let i = 0
    while (i < chunk.length) {
      if (this.state === 'body') {
        const skip = Math.min(this.remaining, chunk.length - i)
        this.remaining -= skip
        i += skip
        if (this.remaining === 0) this.state = 'type'
        continue
      }
      const byte = chunk[i] as number
      i++
      if (this.state === 'type') {
        this.state = 'length'
        this.length = 0
        this.multiplier = 1
        this.lengthBytes = 0
        continue
      }
      // state 'length': variable byte integer, 7 bits per byte, least significant first.
      this.lengthBytes++
      if (this.lengthBytes > 4) return new MalformedLengthError()
      this.length += (byte & 0x7f) * this.multiplier
      this.multiplier *= 128
      const total = 1 + this.lengthBytes + this.length
      if (total > this.maxPacketBytes) return new PacketTooLargeError(total, this.maxPacketBytes)
      if ((byte & 0x80) !== 0) continue
      this.remaining = this.length
      this.state = this.remaining === 0 ? 'type' : 'body'
    }
    return null
  }
}

/**
 * Puts the gate in front of `stream` (a net.Socket or a WebSocket stream) in
 * place: every chunk the stream's source pushes into its read buffer passes the
 * gate first. On a refused packet `onRefused` is called and the stream is
 * destroyed; nothing of that chunk reaches the reader.
 *
 * `push` is the method through which a Readable's source hands it bytes (a
 * socket's libuv reads, ws's message handler for a WebSocket stream), so
 * gating it on the instance costs one call per chunk read. The earlier
 * wrapper Duplex cost a second stream on both directions of every connection,
 * in CPU per reading and in memory per connection.
 */
export function gateStream<S extends Duplex> (stream: S, maxPacketBytes: number, onRefused: (err: Error) => void): S {
  const gate = new MqttSizeGate(maxPacketBytes)
  const push = stream.push
  let refused = false
  stream.push = function gatedPush (this: S, chunk: unknown, encoding?: BufferEncoding): boolean {
    if (refused) return false
    if (chunk !== null && chunk !== undefined) {
      const bytes = typeof chunk === 'string' ? Buffer.from(chunk, encoding) : chunk as Uint8Array
      const err = gate.check(bytes)
      if (err !== null) {
        refused = true
        onRefused(err)
        stream.destroy(err)
        return false
      }
    }
    return push.call(this, chunk, encoding)
  }
  return stream
}
