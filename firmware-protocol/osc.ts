// Open Sound Control 1.0 messages (https://opensoundcontrol.stanford.edu/spec-1_0.html),
// the subset VRChat's avatar parameters use: one message per datagram, one
// argument of type int32 ('i'), float32 ('f') or boolean ('T' / 'F').
// Bundles are not produced. Pure functions: no sockets, no timers.
import { ProtocolError } from './errors.ts'

export type OscArg =
  | { type: 'i', value: number }
  | { type: 'f', value: number }
  | { type: 'T' }
  | { type: 'F' }

export interface OscMessage { address: string, args: OscArg[] }

const INT32_MIN = -0x80000000
const INT32_MAX = 0x7fffffff

/** [OSC 1.0 "OSC-string"]: ASCII, a null terminator, then nulls to a multiple of 4 bytes. */
function paddedLength (chars: number): number {
  return (chars + 4) & ~3
}

/**
 * [OSC 1.0 "OSC Address Spaces"]: an address starts with '/'. hr-relay sends
 * printable ASCII only, without space, '#' (bundles) and ',' (type tags).
 */
function checkAddress (address: string): void {
  if (typeof address !== 'string' || !/^\/[\x21-\x7e]*$/.test(address) || /[#,]/.test(address)) {
    throw new ProtocolError('bad_topic', `OSC address must start with '/' and be printable ASCII without space, '#' or ',', got ${JSON.stringify(address)}`)
  }
}

function checkArg (arg: OscArg): void {
  if (arg.type === 'i') {
    if (!Number.isInteger(arg.value) || arg.value < INT32_MIN || arg.value > INT32_MAX) {
      throw new ProtocolError('out_of_range', `OSC int32 must be an integer ${INT32_MIN}..${INT32_MAX}, got ${String(arg.value)}`)
    }
  } else if (arg.type === 'f') {
    if (typeof arg.value !== 'number' || !Number.isFinite(arg.value)) throw new ProtocolError('out_of_range', `OSC float32 must be a finite number, got ${String(arg.value)}`)
  } else if (arg.type !== 'T' && arg.type !== 'F') {
    throw new ProtocolError('garbage', `unsupported OSC type tag ${JSON.stringify((arg as { type: unknown }).type)}`)
  }
}

/** Encodes one OSC message: address, type tag string, big-endian arguments. Throws ProtocolError. */
export function encodeOscMessage (message: OscMessage): Uint8Array {
  checkAddress(message.address)
  for (const arg of message.args) checkArg(arg)
  const tags = ',' + message.args.map(a => a.type).join('')
  const addressLen = paddedLength(message.address.length)
  const tagsLen = paddedLength(tags.length)
  // [OSC 1.0 "OSC Type Tag String"]: 'i' and 'f' carry 4 bytes each; 'T' and 'F' none.
  const argsLen = message.args.reduce((n, a) => n + (a.type === 'i' || a.type === 'f' ? 4 : 0), 0)
  const bytes = new Uint8Array(addressLen + tagsLen + argsLen)
  const view = new DataView(bytes.buffer)
  for (let i = 0; i < message.address.length; i++) bytes[i] = message.address.charCodeAt(i)
  for (let i = 0; i < tags.length; i++) bytes[addressLen + i] = tags.charCodeAt(i)
  let at = addressLen + tagsLen
  for (const arg of message.args) {
    // [OSC 1.0 "Atomic Data Types"]: int32 and float32 are big-endian.
    if (arg.type === 'i') { view.setInt32(at, arg.value, false); at += 4 } else if (arg.type === 'f') { view.setFloat32(at, arg.value, false); at += 4 }
  }
  return bytes
}

function readString (bytes: Uint8Array, at: number): { text: string, next: number } {
  let end = at
  while (end < bytes.length && bytes[end] !== 0) end++
  if (end >= bytes.length) throw new ProtocolError('truncated', 'OSC string has no null terminator')
  const next = at + paddedLength(end - at)
  if (next > bytes.length) throw new ProtocolError('truncated', 'OSC string padding runs past the end')
  for (let i = end; i < next; i++) if (bytes[i] !== 0) throw new ProtocolError('garbage', 'OSC string padding is not null bytes')
  let text = ''
  for (let i = at; i < end; i++) {
    const c = bytes[i] as number
    if (c > 0x7e || c < 0x20) throw new ProtocolError('garbage', 'OSC string is not printable ASCII')
    text += String.fromCharCode(c)
  }
  return { text, next }
}

/** Decodes one OSC message of the types encodeOscMessage writes. Throws ProtocolError. */
export function decodeOscMessage (bytes: Uint8Array): OscMessage {
  if (!(bytes instanceof Uint8Array) || bytes.length % 4 !== 0) throw new ProtocolError('truncated', 'an OSC packet is a multiple of 4 bytes')
  const address = readString(bytes, 0)
  checkAddress(address.text)
  const tags = readString(bytes, address.next)
  if (!tags.text.startsWith(',')) throw new ProtocolError('garbage', 'OSC type tag string must start with \',\'')
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  const args: OscArg[] = []
  let at = tags.next
  for (const tag of tags.text.slice(1)) {
    if (tag === 'T' || tag === 'F') { args.push({ type: tag }); continue }
    if (tag !== 'i' && tag !== 'f') throw new ProtocolError('garbage', `unsupported OSC type tag '${tag}'`)
    if (at + 4 > bytes.length) throw new ProtocolError('truncated', 'OSC argument runs past the end')
    args.push(tag === 'i' ? { type: 'i', value: view.getInt32(at, false) } : { type: 'f', value: view.getFloat32(at, false) })
    at += 4
  }
  if (at !== bytes.length) throw new ProtocolError('too_long', 'bytes after the last OSC argument')
  return { address: address.text, args }
}

/** A boolean as OSC 'T' / 'F'. */
export function oscBool (value: boolean): OscArg {
  return value ? { type: 'T' } : { type: 'F' }
}
