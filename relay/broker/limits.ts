// A byte limit in front of the broker. aedes hands raw bytes to mqtt-packet's
// parser without any size bound, so a client could announce a 256 MB PUBLISH
// and make the broker buffer it. `MqttSizeGate` follows packet boundaries on
// the raw stream by reading only each fixed header (type byte + Remaining
// Length, MQTT 3.1.1 §2.2.3) and refuses a packet whose total size is above the
// limit before any of its body reaches aedes. `limitStream` wraps a socket or
// WebSocket stream in a Duplex that aedes can `handle`.
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
 * Wraps `inner` (a net.Socket or a WebSocket stream) so that every byte read
 * passes the gate first. On a refused packet `onRefused` is called and both
 * streams are destroyed; nothing of that chunk reaches the reader.
 */
export function limitStream (inner: Duplex, maxPacketBytes: number, onRefused: (err: Error) => void): Duplex {
  const gate = new MqttSizeGate(maxPacketBytes)
  const outer = new Duplex({
    allowHalfOpen: false,
    read () { inner.resume() },
    write (chunk: Buffer, _encoding, callback) {
      if (inner.destroyed) { callback(new Error('connection closed')); return }
      inner.write(chunk, err => { callback(err ?? null) })
    },
    final (callback) { inner.end(); callback() },
    destroy (err, callback) {
      inner.off('data', onData)
      if (!inner.destroyed) inner.destroy()
      callback(err)
    }
  })
  const onData = (chunk: Buffer): void => {
    const err = gate.check(chunk)
    if (err !== null) {
      onRefused(err)
      outer.destroy(err)
      return
    }
    if (!outer.push(chunk)) inner.pause()
  }
  inner.on('data', onData)
  inner.once('end', () => { outer.push(null) })
  inner.on('error', err => { outer.destroy(err) })
  inner.once('close', () => { if (!outer.destroyed) outer.destroy() })
  // Expose the peer address for logs (aedes reads conn.remoteAddress in some paths).
  const addr = (inner as Partial<{ remoteAddress: string }>).remoteAddress
  if (addr !== undefined) Object.defineProperty(outer, 'remoteAddress', { value: addr })
  return outer
}
