// MIDI encoding of heart rate (spec 4.8; service-notes "MIDI byte order").
// One 3-byte Note On message: status 0x9n (n = channel), then the ones and
// the tens of the bpm as two data bytes. The spec names both byte orders; the
// service's own integration decodes bpm = velocity * 10 + note, i.e. byte 2
// (note) = ones, byte 3 (velocity) = tens, and its raw example for 67 bpm is
// 90 07 06. That order ('ones-tens') is the default.
import { ProtocolError } from './errors.ts'

export type MidiOrder = 'ones-tens' | 'tens-ones'

const NOTE_ON = 0x90
/** Spec 8.6: MIDI data bytes range 0 to 127. */
const MAX_DATA_BYTE = 0x7f
/** tens <= 127 and ones <= 9. */
export const MAX_MIDI_BPM = MAX_DATA_BYTE * 10 + 9

function orderOf (order: unknown): MidiOrder {
  if (order === undefined || order === 'ones-tens') return 'ones-tens'
  if (order === 'tens-ones') return 'tens-ones'
  throw new ProtocolError('out_of_range', `MIDI order must be 'ones-tens' or 'tens-ones', got ${String(order)}`)
}

/**
 * Encode a bpm as Note On [0x90 | channel, a, b]. Note: with 'ones-tens' a
 * bpm below 10 has velocity 0, which many MIDI stacks treat as Note Off.
 */
export function encodeMidiHeartRate (bpm: number, options: { order?: MidiOrder, channel?: number } = {}): Uint8Array {
  const order = orderOf(options.order)
  const channel = options.channel ?? 0
  if (!Number.isInteger(channel) || channel < 0 || channel > 15) {
    throw new ProtocolError('out_of_range', `MIDI channel must be an integer 0..15, got ${String(channel)}`)
  }
  if (!Number.isInteger(bpm) || bpm < 0 || bpm > MAX_MIDI_BPM) {
    throw new ProtocolError('out_of_range', `bpm must be an integer 0..${MAX_MIDI_BPM} for MIDI (tens fit one 7-bit data byte), got ${String(bpm)}`)
  }
  const tens = Math.floor(bpm / 10)
  const ones = bpm % 10
  return order === 'ones-tens' ? Uint8Array.of(NOTE_ON | channel, ones, tens) : Uint8Array.of(NOTE_ON | channel, tens, ones)
}

/**
 * Decode a 3-byte Note On message to a bpm. Throws ProtocolError: 'truncated'
 * (shorter than 3 bytes), 'too_long' (longer), 'garbage' (status is not Note
 * On), 'out_of_range' (a data byte above 127, or the ones byte above 9, which
 * usually means the sender uses the other byte order).
 */
export function decodeMidiHeartRate (bytes: Uint8Array, options: { order?: MidiOrder } = {}): number {
  const order = orderOf(options.order)
  if (!(bytes instanceof Uint8Array) || bytes.length < 3) throw new ProtocolError('truncated', 'a MIDI heart-rate message is 3 bytes')
  if (bytes.length > 3) throw new ProtocolError('too_long', `a MIDI heart-rate message is 3 bytes, got ${bytes.length}`)
  const [status, first, second] = bytes as unknown as [number, number, number]
  if ((status & 0xf0) !== NOTE_ON) throw new ProtocolError('garbage', `status byte 0x${status.toString(16).padStart(2, '0')} is not Note On (0x9n)`)
  if (first > MAX_DATA_BYTE || second > MAX_DATA_BYTE) throw new ProtocolError('out_of_range', 'MIDI data bytes must be 0..127')
  const [ones, tens] = order === 'ones-tens' ? [first, second] : [second, first]
  if (ones > 9) throw new ProtocolError('out_of_range', `ones byte ${ones} is above 9; check the byte order`)
  return tens * 10 + ones
}
