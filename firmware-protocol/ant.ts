// The ANT serial message protocol that ANT USB sticks speak, and the ANT+
// heart-rate data pages. Pure: bytes in, values out, ProtocolError on malformed
// input; no I/O, no timers. References: "ANT Message Protocol and Usage"
// (message framing, configuration messages, extended data) and the "ANT+
// Device Profile: Heart Rate" (data pages 0-7). Framing of a byte stream into
// messages is separate (AntFrameSplitter, ant-framing.ts).
import { ProtocolError } from './errors.ts'

/** Every message starts with this byte (Message Protocol: "Sync"). */
export const ANT_SYNC = 0xa4
/** Sync, length, message id and checksum around the data. */
export const ANT_OVERHEAD = 4
/** The longest data a message id carries here (an extended broadcast: 1 + 8 + 1 + 4 + 3 + 2). */
export const ANT_MAX_DATA = 19

/** The message ids this codec handles (Message Protocol, "Message summary"). */
export const ANT_MESSAGE = {
  CHANNEL_EVENT: 0x40,
  ASSIGN_CHANNEL: 0x42,
  CHANNEL_PERIOD: 0x43,
  RF_FREQUENCY: 0x45,
  SET_NETWORK_KEY: 0x46,
  RESET_SYSTEM: 0x4a,
  OPEN_CHANNEL: 0x4b,
  CLOSE_CHANNEL: 0x4c,
  REQUEST_MESSAGE: 0x4d,
  BROADCAST_DATA: 0x4e,
  CHANNEL_ID: 0x51,
  CAPABILITIES: 0x54,
  OPEN_RX_SCAN_MODE: 0x5b,
  LIB_CONFIG: 0x6e,
  STARTUP: 0x6f
} as const

/** The ANT+ heart-rate channel parameters (Heart Rate profile, "Channel configuration"). */
export const HEART_RATE_DEVICE_TYPE = 0x78
export const ANT_PLUS_RF_FREQUENCY = 57
/** 32768 / 8070: about 4.06 messages a second. */
export const HEART_RATE_CHANNEL_PERIOD = 8070
/** Channel type 0x00: bidirectional receive (slave). */
export const CHANNEL_TYPE_RECEIVE = 0x00
/** Lib config flags: extended data carries the channel id (0x80) and the RSSI (0x40). */
export const LIB_CONFIG_CHANNEL_ID = 0x80
export const LIB_CONFIG_RSSI = 0x40
export const LIB_CONFIG_TIMESTAMP = 0x20
/** Channel response code: RESPONSE_NO_ERROR. */
export const RESPONSE_NO_ERROR = 0x00

export interface AntMessage {
  id: number
  data: Uint8Array
}

/** XOR of every byte before the checksum, sync included. */
export function antChecksum (bytes: Uint8Array, end: number): number {
  let x = 0
  for (let i = 0; i < end; i++) x ^= bytes[i] as number
  return x
}

/** Sync, length, id, data, checksum. Throws out_of_range for an id or data the format cannot carry. */
export function encodeAntMessage (id: number, data: ArrayLike<number>): Uint8Array {
  if (!Number.isInteger(id) || id < 0 || id > 0xff) throw new ProtocolError('out_of_range', `ANT message id must be a byte, got ${String(id)}`)
  if (data.length > ANT_MAX_DATA) throw new ProtocolError('too_long', `ANT message data is at most ${ANT_MAX_DATA} bytes, got ${data.length}`)
  const out = new Uint8Array(data.length + ANT_OVERHEAD)
  out[0] = ANT_SYNC
  out[1] = data.length
  out[2] = id
  for (let i = 0; i < data.length; i++) {
    const b = data[i] as number
    if (!Number.isInteger(b) || b < 0 || b > 0xff) throw new ProtocolError('out_of_range', `ANT message data byte ${i} must be 0..255, got ${String(b)}`)
    out[3 + i] = b
  }
  out[out.length - 1] = antChecksum(out, out.length - 1)
  return out
}

/** One whole message (as AntFrameSplitter emits it). Throws truncated, too_long, garbage or bad_checksum. */
export function decodeAntMessage (frame: Uint8Array): AntMessage {
  if (frame.length < ANT_OVERHEAD) throw new ProtocolError('truncated', `an ANT message is at least ${ANT_OVERHEAD} bytes, got ${frame.length}`)
  if (frame[0] !== ANT_SYNC) throw new ProtocolError('garbage', `an ANT message starts with 0xa4, got 0x${(frame[0] as number).toString(16)}`)
  const length = frame[1] as number
  if (length > ANT_MAX_DATA) throw new ProtocolError('too_long', `ANT message length ${length} is over ${ANT_MAX_DATA}`)
  if (frame.length !== length + ANT_OVERHEAD) throw new ProtocolError('truncated', `ANT message says ${length} data bytes, frame has ${frame.length - ANT_OVERHEAD}`)
  const sum = antChecksum(frame, frame.length - 1)
  if (sum !== frame[frame.length - 1]) throw new ProtocolError('bad_checksum', `ANT checksum 0x${(frame[frame.length - 1] as number).toString(16)} does not match 0x${sum.toString(16)}`)
  return { id: frame[2] as number, data: frame.slice(3, 3 + length) }
}

/** An ANT+ network key: exactly 16 hex digits (8 bytes). Throws out_of_range otherwise. */
export function parseNetworkKey (hex: string): Uint8Array {
  if (typeof hex !== 'string' || !/^[0-9a-fA-F]{16}$/.test(hex)) throw new ProtocolError('out_of_range', 'an ANT network key is 16 hex digits (8 bytes)')
  return Uint8Array.from(Buffer.from(hex, 'hex'))
}

/**
 * The messages that put a stick into continuous scan mode for heart-rate straps, in order (Message Protocol,
 * "Continuous scanning mode"): reset, the network key on network 0, channel 0 assigned as a receive channel,
 * a wildcard channel id for device type 0x78 (any device number, any transmission type), RF frequency 57,
 * extended data with the channel id and the RSSI, then open Rx scan mode. Each but the reset is answered by a
 * channel response (0x40) naming it; the reset by a startup message (0x6F).
 */
export function scanModeSetup (networkKey: Uint8Array): Uint8Array[] {
  if (networkKey.length !== 8) throw new ProtocolError('out_of_range', `an ANT network key is 8 bytes, got ${networkKey.length}`)
  return [
    encodeAntMessage(ANT_MESSAGE.RESET_SYSTEM, [0x00]),
    encodeAntMessage(ANT_MESSAGE.SET_NETWORK_KEY, [0x00, ...networkKey]),
    encodeAntMessage(ANT_MESSAGE.ASSIGN_CHANNEL, [0x00, CHANNEL_TYPE_RECEIVE, 0x00]),
    encodeAntMessage(ANT_MESSAGE.CHANNEL_ID, [0x00, 0x00, 0x00, HEART_RATE_DEVICE_TYPE, 0x00]),
    encodeAntMessage(ANT_MESSAGE.RF_FREQUENCY, [0x00, ANT_PLUS_RF_FREQUENCY]),
    encodeAntMessage(ANT_MESSAGE.LIB_CONFIG, [0x00, LIB_CONFIG_CHANNEL_ID | LIB_CONFIG_RSSI]),
    encodeAntMessage(ANT_MESSAGE.OPEN_RX_SCAN_MODE, [0x00])
  ]
}

/**
 * The messages that open one receive channel per strap slot, for a stick without scan mode: each channel has a
 * wildcard channel id for type 0x78, the heart-rate period 8070 and RF frequency 57. A wildcard channel pairs with
 * the first strap it hears and then follows that one, so `channels` channels follow up to that many straps.
 */
export function channelsSetup (networkKey: Uint8Array, channels: number): Uint8Array[] {
  if (networkKey.length !== 8) throw new ProtocolError('out_of_range', `an ANT network key is 8 bytes, got ${networkKey.length}`)
  if (!Number.isInteger(channels) || channels < 1 || channels > 255) throw new ProtocolError('out_of_range', `channels must be 1..255, got ${String(channels)}`)
  const out = [
    encodeAntMessage(ANT_MESSAGE.RESET_SYSTEM, [0x00]),
    encodeAntMessage(ANT_MESSAGE.SET_NETWORK_KEY, [0x00, ...networkKey]),
    encodeAntMessage(ANT_MESSAGE.LIB_CONFIG, [0x00, LIB_CONFIG_CHANNEL_ID | LIB_CONFIG_RSSI])
  ]
  for (let c = 0; c < channels; c++) {
    out.push(
      encodeAntMessage(ANT_MESSAGE.ASSIGN_CHANNEL, [c, CHANNEL_TYPE_RECEIVE, 0x00]),
      encodeAntMessage(ANT_MESSAGE.CHANNEL_ID, [c, 0x00, 0x00, HEART_RATE_DEVICE_TYPE, 0x00]),
      encodeAntMessage(ANT_MESSAGE.CHANNEL_PERIOD, [c, HEART_RATE_CHANNEL_PERIOD & 0xff, HEART_RATE_CHANNEL_PERIOD >> 8]),
      encodeAntMessage(ANT_MESSAGE.RF_FREQUENCY, [c, ANT_PLUS_RF_FREQUENCY]),
      encodeAntMessage(ANT_MESSAGE.OPEN_CHANNEL, [c])
    )
  }
  return out
}

/** A channel response or event (0x40): the channel, the message it answers (1 for an RF event) and the code. */
export interface ChannelEvent { channel: number, messageId: number, code: number }

export function decodeChannelEvent (data: Uint8Array): ChannelEvent {
  if (data.length < 3) throw new ProtocolError('truncated', `a channel response has 3 bytes, got ${data.length}`)
  return { channel: data[0] as number, messageId: data[1] as number, code: data[2] as number }
}

/** The channel id that extended data carries with every message (flag 0x80). */
export interface AntChannelId {
  /** The full device number: the 16-bit number, extended to 20 bits by the transmission type's upper nibble. */
  deviceNumber: number
  deviceType: number
  transmissionType: number
}

export interface AntBroadcast {
  channel: number
  /** The 8-byte payload (an ANT+ data page). */
  payload: Uint8Array
  /** Present when the stick sends extended data with the channel id (lib config 0x80). */
  id?: AntChannelId
  /** dBm, present when the stick sends the RSSI (lib config 0x40). */
  rssi?: number
}

/** The ANT+ device number of a channel id: a 20-bit number when the transmission type's upper nibble is set. */
export function extendedDeviceNumber (deviceNumber16: number, transmissionType: number): number {
  return ((transmissionType >> 4) & 0x0f) * 0x10000 + (deviceNumber16 & 0xffff)
}

/** The device id an ANT+ strap is paired by: `ant:<device number>`. */
export function antDeviceId (deviceNumber: number): string {
  return `ant:${deviceNumber}`
}

/** The largest device number: 16 bits extended by the transmission type's upper nibble to 20. */
export const ANT_MAX_DEVICE_NUMBER = 0xfffff

/**
 * The device number of an ANT+ device id, `ant:` and the decimal number 1..1048575 without leading zeros (0 is
 * the wildcard of a channel id, never a strap's own number); undefined for anything else.
 */
export function parseAntDeviceId (id: string): number | undefined {
  const m = /^ant:([1-9][0-9]{0,6})$/.exec(id)
  if (m === null) return undefined
  const n = Number(m[1])
  return n <= ANT_MAX_DEVICE_NUMBER ? n : undefined
}

/**
 * A broadcast data message (0x4E): channel, 8 payload bytes and, in extended form, a flag byte followed by the
 * channel id (flag 0x80: device number LE16, device type, transmission type), the RSSI (flag 0x40: measurement
 * type, RSSI in dBm as a signed byte, threshold) and the Rx timestamp (flag 0x20: LE16), in that order.
 */
export function decodeBroadcast (data: Uint8Array): AntBroadcast {
  if (data.length < 9) throw new ProtocolError('truncated', `a broadcast has a channel and 8 payload bytes, got ${data.length} bytes`)
  const out: AntBroadcast = { channel: data[0] as number, payload: data.slice(1, 9) }
  if (data.length === 9) return out
  const flag = data[9] as number
  let at = 10
  if ((flag & LIB_CONFIG_CHANNEL_ID) !== 0) {
    if (data.length < at + 4) throw new ProtocolError('truncated', 'extended data flag 0x80 set but the channel id is missing')
    const number16 = (data[at] as number) | ((data[at + 1] as number) << 8)
    const transmissionType = data[at + 3] as number
    out.id = { deviceNumber: extendedDeviceNumber(number16, transmissionType), deviceType: data[at + 2] as number, transmissionType }
    at += 4
  }
  if ((flag & LIB_CONFIG_RSSI) !== 0) {
    if (data.length < at + 3) throw new ProtocolError('truncated', 'extended data flag 0x40 set but the RSSI is missing')
    const raw = data[at + 1] as number
    out.rssi = raw > 127 ? raw - 256 : raw
    at += 3
  }
  if ((flag & LIB_CONFIG_TIMESTAMP) !== 0 && data.length < at + 2) throw new ProtocolError('truncated', 'extended data flag 0x20 set but the timestamp is missing')
  return out
}

/** An extended broadcast as a stick sends it, for the simulator and the tests. */
export function encodeBroadcast (channel: number, payload: Uint8Array, id?: AntChannelId, rssi?: number): Uint8Array {
  if (payload.length !== 8) throw new ProtocolError('out_of_range', `an ANT payload is 8 bytes, got ${payload.length}`)
  const data = [channel, ...payload]
  if (id !== undefined || rssi !== undefined) {
    data.push((id === undefined ? 0 : LIB_CONFIG_CHANNEL_ID) | (rssi === undefined ? 0 : LIB_CONFIG_RSSI))
    if (id !== undefined) {
      if (!Number.isInteger(id.deviceNumber) || id.deviceNumber < 0 || id.deviceNumber > 0xfffff) throw new ProtocolError('out_of_range', `an ANT device number is 0..0xfffff, got ${String(id.deviceNumber)}`)
      const transmissionType = (id.transmissionType & 0x0f) | ((id.deviceNumber >> 16) << 4)
      data.push(id.deviceNumber & 0xff, (id.deviceNumber >> 8) & 0xff, id.deviceType, transmissionType)
    }
    if (rssi !== undefined) {
      if (!Number.isInteger(rssi) || rssi < -128 || rssi > 127) throw new ProtocolError('out_of_range', `RSSI is -128..127 dBm, got ${String(rssi)}`)
      data.push(0x20, rssi & 0xff, 0x00)
    }
  }
  return encodeAntMessage(ANT_MESSAGE.BROADCAST_DATA, data)
}

/** A decoded ANT+ heart-rate data page (Heart Rate profile, "Data pages"). */
export interface HeartRatePage {
  /** The page number, byte 0 bits 0-6. */
  page: number
  /** Byte 0 bit 7: toggles every four messages on a strap that sends pages other than 0. */
  toggle: boolean
  /** Bytes 4-5: the time of the last heartbeat, 1/1024 s, wrapping at 65536 (64 s). */
  eventTime: number
  /** Byte 6: the heartbeats counted, wrapping at 256. */
  beatCount: number
  /** Byte 7: the computed heart rate, bpm (0 means invalid). */
  heartRate: number
  /** Page 4, bytes 2-3: the time of the heartbeat before the last one. */
  previousEventTime?: number
  /** Page 7, byte 1: battery level in percent (absent when the strap sends 0xFF, not used). */
  batteryPercent?: number
  /** Page 7: battery voltage in volts (byte 3 bits 0-3 whole volts, byte 2 in 1/256 V), absent when invalid. */
  batteryVolts?: number
  /** Page 7, byte 3 bits 4-6: 1 new, 2 good, 3 ok, 4 low, 5 critical, 7 invalid. */
  batteryStatus?: number
  /** Page 1, bytes 1-3: cumulative operating time in seconds (units of 2 s). */
  operatingTimeS?: number
  /** Page 2: manufacturer id (byte 1) and the upper 16 bits of the serial number (bytes 2-3). */
  manufacturerId?: number
  serialNumberHigh?: number
  /** Page 3: hardware version (byte 1), software version (byte 2), model number (byte 3). */
  hardwareVersion?: number
  softwareVersion?: number
  modelNumber?: number
}

/** Decodes an 8-byte heart-rate data page. Every page carries bytes 4-7; pages 1-4 and 7 add their own fields. */
export function decodeHeartRatePage (payload: Uint8Array): HeartRatePage {
  if (payload.length !== 8) throw new ProtocolError('truncated', `an ANT+ data page is 8 bytes, got ${payload.length}`)
  const b = (i: number): number => payload[i] as number
  const page: HeartRatePage = {
    page: b(0) & 0x7f,
    toggle: (b(0) & 0x80) !== 0,
    eventTime: b(4) | (b(5) << 8),
    beatCount: b(6),
    heartRate: b(7)
  }
  switch (page.page) {
    case 1: page.operatingTimeS = (b(1) | (b(2) << 8) | (b(3) << 16)) * 2; break
    case 2: page.manufacturerId = b(1); page.serialNumberHigh = b(2) | (b(3) << 8); break
    case 3: page.hardwareVersion = b(1); page.softwareVersion = b(2); page.modelNumber = b(3); break
    case 4: page.previousEventTime = b(2) | (b(3) << 8); break
    case 7: {
      if (b(1) !== 0xff) page.batteryPercent = b(1)
      const coarse = b(3) & 0x0f
      if (coarse !== 0x0f) page.batteryVolts = coarse + b(2) / 256
      page.batteryStatus = (b(3) >> 4) & 0x07
      break
    }
  }
  return page
}

export interface HeartRatePageInput {
  page: number
  toggle?: boolean
  eventTime: number
  beatCount: number
  heartRate: number
  previousEventTime?: number
  batteryPercent?: number
  batteryStatus?: number
}

/** Encodes a heart-rate data page (pages 0, 4 and 7 carry their fields; other pages send 0xFF in bytes 1-3). */
export function encodeHeartRatePage (p: HeartRatePageInput): Uint8Array {
  const out = new Uint8Array(8)
  out[0] = (p.page & 0x7f) | (p.toggle === true ? 0x80 : 0)
  out[1] = 0xff; out[2] = 0xff; out[3] = 0xff
  if (p.page === 4) { out[1] = 0xff; out[2] = (p.previousEventTime ?? 0) & 0xff; out[3] = ((p.previousEventTime ?? 0) >> 8) & 0xff }
  if (p.page === 7) { out[1] = p.batteryPercent ?? 0xff; out[2] = 0x00; out[3] = ((p.batteryStatus ?? 7) & 0x07) << 4 | 0x0f }
  out[4] = p.eventTime & 0xff
  out[5] = (p.eventTime >> 8) & 0xff
  out[6] = p.beatCount & 0xff
  out[7] = p.heartRate & 0xff
  return out
}
